package par

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// setProcs sets GOMAXPROCS for the test and restores it after.
func setProcs(t *testing.T, n int) {
	t.Helper()
	saved := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(saved) })
}

// alwaysParallel makes every section with two or more units use the
// pool, however cheap, for the rest of the test.
func alwaysParallel(t *testing.T) {
	t.Helper()
	saved := MinParallelWork
	MinParallelWork = 0
	t.Cleanup(func() { MinParallelWork = saved })
}

// countJob counts how often each item runs and whether a range started
// off the grain.
type countJob struct {
	hits    []atomic.Int32
	grain   int
	badEdge atomic.Bool
}

func newCountJob(n, grain int) *countJob {
	return &countJob{hits: make([]atomic.Int32, n), grain: grain}
}

func (j *countJob) Run(lo, hi int) {
	if j.grain > 0 && lo%j.grain != 0 {
		j.badEdge.Store(true)
	}
	for i := lo; i < hi; i++ {
		j.hits[i].Add(1)
	}
}

// check fails the test unless every item ran exactly once, on the grain.
func (j *countJob) check(t *testing.T, what string) {
	t.Helper()
	for i := range j.hits {
		if h := j.hits[i].Load(); h != 1 {
			t.Fatalf("%s: item %d ran %d times", what, i, h)
		}
	}
	if j.badEdge.Load() {
		t.Fatalf("%s: a range starts off the grain", what)
	}
}

// onWorker reports whether the calling goroutine is a pool worker.
func onWorker() bool {
	buf := make([]byte, 1<<14)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("(*worker).run"))
}

// panicJob counts the items its ranges cover and panics, with an index
// out of range as a buggy job would, in the ranges that run on a worker
// (onWorker set) or on the section's caller. Every range first waits
// until two have started, so that a worker surely takes part however fast
// the caller is.
type panicJob struct {
	covered  atomic.Int64
	started  atomic.Int64
	panics   bool
	onWorker bool
}

func (j *panicJob) Run(lo, hi int) {
	j.covered.Add(int64(hi - lo))
	j.started.Add(1)
	for deadline := time.Now().Add(5 * time.Second); j.started.Load() < 2 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if j.panics && onWorker() == j.onWorker {
		var s []int
		_ = s[lo]
	}
}

// runFor runs For(job, n, 1, cost) and returns what the caller recovered.
func runFor(n int, job Job) (recovered any) {
	defer func() { recovered = recover() }()
	For(job, n, 1, 1<<20)
	return nil
}
