package minigpt

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// panicJob panics in the chunk that starts at index 0, which dispatch
// always hands to a worker goroutine (the caller runs the last chunk),
// and counts the indices every chunk covers.
type panicJob struct {
	covered atomic.Int64
	panicAt int
}

func (j *panicJob) run(lo, hi int) {
	j.covered.Add(int64(hi - lo))
	if lo <= j.panicAt && j.panicAt < hi {
		var s []int
		_ = s[j.panicAt] // an index out of range, as a buggy job would
	}
}

// runSection runs job over [0, n) as a parallel section of two chunks and
// returns what the caller's goroutine recovered, if anything.
func runSection(t *testing.T, n int, job rangeJob) (recovered any) {
	t.Helper()
	defer func() { recovered = recover() }()
	p := pool.acquire(n, 1, minParallelWork)
	if p < 2 {
		t.Fatalf("acquire gave %d workers, want 2", p)
	}
	pool.dispatch(p, n, 1, job)
	return nil
}

// TestWorkerPanicReachesCaller checks that a panic on a worker goroutine
// reaches the section's caller, where it can be recovered, carrying the
// worker's value and stack; and that the pool works afterwards. Before
// the fix the panic killed the whole test binary.
func TestWorkerPanicReachesCaller(t *testing.T) {
	const n = 64
	// Grow the pool past the workers the panicking section uses, as an
	// earlier GOMAXPROCS=8 section would (the records must survive that).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	if got := runSection(t, n, &panicJob{panicAt: -1}); got != nil {
		t.Fatalf("section with 8 workers: recovered %v", got)
	}
	runtime.GOMAXPROCS(2)
	bad := &panicJob{panicAt: 0}
	got := runSection(t, n, bad)
	wp, ok := got.(*workerPanic)
	if !ok {
		t.Fatalf("caller recovered %v (%T), want a *workerPanic", got, got)
	}
	var rerr runtime.Error
	if !errors.As(wp, &rerr) {
		t.Errorf("worker panic %v does not unwrap to the runtime.Error", wp.value)
	}
	msg := wp.Error()
	if !strings.Contains(msg, "index out of range") || !strings.Contains(msg, "panicJob).run") {
		t.Errorf("message lacks the worker's value or stack:\n%s", msg)
	}
	if c := bad.covered.Load(); c != n {
		t.Errorf("the section covered %d of %d indices before returning", c, n)
	}
	// The pool is usable: no lock left held, no stale panic record.
	for range 3 {
		good := &panicJob{panicAt: -1}
		if got := runSection(t, n, good); got != nil {
			t.Fatalf("section after a panic: recovered %v", got)
		}
		if c := good.covered.Load(); c != n {
			t.Fatalf("section after a panic covered %d of %d", c, n)
		}
	}
	// A panic on the caller's own chunk still reaches the caller, and
	// the workers are waited for.
	own := &panicJob{panicAt: n - 1}
	if got := runSection(t, n, own); got == nil {
		t.Fatal("a panic on the caller's chunk was lost")
	}
	if c := own.covered.Load(); c != n {
		t.Errorf("caller's panic: %d of %d indices covered", c, n)
	}
	if got := runSection(t, n, &panicJob{panicAt: -1}); got != nil {
		t.Fatalf("section after the caller's panic: recovered %v", got)
	}
}
