package par

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chainSums is one half of a sum over rows: item i's chain is sum[i],
// and the half adds rows [r0, r1) to it in order, each row's value a
// function of (row, item) chosen so that the result depends on the order
// of the additions (floating-point rounding).
type chainSums struct {
	sum    []float64
	r0, r1 int
}

func rowValue(r, i int) float64 { return 1 / float64(3+r*7+i) }

func (h *chainSums) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		s := h.sum[i]
		for r := h.r0; r < h.r1; r++ {
			s += rowValue(r, i)
		}
		h.sum[i] = s
	}
}

// TestHalvesKeepEveryChain: a sum over rows run as Halves, the second
// half continuing the first's chains, gives the bits of one chain over
// every row, with the halves alone or around other jobs, at several
// participant counts and serially; and every other job still runs once.
// A second half that did not wait for the first would add its rows to a
// chain that does not yet hold the first's, and change the bits.
func TestHalvesKeepEveryChain(t *testing.T) {
	alwaysParallel(t)
	const items, rows = 300, 64
	want := make([]float64, items)
	(&chainSums{sum: want, r0: 0, r1: rows}).Run(0, items)
	for _, procs := range []int{1, 2, 3, 8} {
		setProcs(t, procs)
		for _, others := range []int{0, 1, 3} {
			sum := make([]float64, items)
			first, second := &chainSums{sum: sum, r0: 0, r1: rows / 2}, &chainSums{sum: sum, r0: rows / 2, r1: rows}
			var s Section
			var h Halves
			var fill []*countJob
			for range others {
				j := newCountJob(500, 4)
				fill = append(fill, j)
				s.Add(j, 500, 4, 1000)
			}
			s.AddHalves(&h, first, second, items, 1, rows/2*10)
			s.Run()
			for i := range want {
				if sum[i] != want[i] {
					t.Fatalf("procs %d, %d other jobs: item %d = %v, want %v", procs, others, i, sum[i], want[i])
				}
			}
			for _, j := range fill {
				j.check(t, "the other job")
			}
		}
	}
}

// rowSum is chainSums as a Sum: items items over rows rows, each
// reading and writing one value a row.
type rowSum struct {
	sum         []float64
	rows        int
	ran, halves atomic.Int64 // RunRows calls, and those over part of the rows
}

func (j *rowSum) Size() (items, grain, cost int) { return len(j.sum), 1, j.rows * 10 }
func (j *rowSum) SumRows() (rows, rowValues, outValues int) {
	return j.rows, j.rows * len(j.sum), len(j.sum)
}
func (j *rowSum) Run(lo, hi int) { j.RunRows(lo, hi, 0, j.rows, true) }
func (j *rowSum) RunRows(lo, hi, r0, r1 int, first bool) {
	j.ran.Add(1)
	if r1-r0 < j.rows {
		j.halves.Add(1)
	}
	if first {
		clear(j.sum[lo:hi])
	}
	(&chainSums{sum: j.sum, r0: r0, r1: r1}).Run(lo, hi)
}

// TestAddSumDecidesHalvesFromSizes: AddSum runs a sum in halves exactly
// when HalvesRatio says so (0: every sum over two rows or more), and
// either way gives the bits of one chain over every row.
func TestAddSumDecidesHalvesFromSizes(t *testing.T) {
	alwaysParallel(t)
	setProcs(t, 2)
	const items, rows = 300, 64
	want := make([]float64, items)
	(&chainSums{sum: want, r0: 0, r1: rows}).Run(0, items)
	saved := HalvesRatio
	t.Cleanup(func() { HalvesRatio = saved })
	for _, tc := range []struct {
		ratio  int
		halves bool
	}{{0, true}, {rows, HalvesPay()}, {rows + 1, false}} {
		HalvesRatio = tc.ratio
		j := &rowSum{sum: make([]float64, items), rows: rows}
		var s Section
		var h Halves
		s.AddSum(&h, j)
		s.Run()
		if got := j.halves.Load() > 0; got != tc.halves {
			t.Errorf("ratio %d: halves %v, want %v", tc.ratio, got, tc.halves)
		}
		for i := range want {
			if j.sum[i] != want[i] {
				t.Fatalf("ratio %d: item %d = %v, want %v", tc.ratio, i, j.sum[i], want[i])
			}
		}
	}
}

// panicAtOnce panics in every range it is given.
type panicAtOnce struct{}

func (panicAtOnce) Run(lo, hi int) {
	var s []int
	_ = s[lo]
}

// panicOnWorker panics in the ranges it runs on a worker. Every range
// first waits until two have started, so that a worker surely runs one
// however fast the caller is.
type panicOnWorker struct{ started atomic.Int64 }

func (j *panicOnWorker) Run(lo, hi int) {
	j.started.Add(1)
	for deadline := time.Now().Add(5 * time.Second); j.started.Load() < 2 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if onWorker() {
		var s []int
		_ = s[lo]
	}
}

// TestHalvesPanicDoesNotHang: when a participant panics in a first half,
// a participant waiting in the second half for the items it would have
// done gives up, and the panic reaches the caller, whether the caller
// panicked (at the head of the first region) or a worker did. Without the
// abort the waiter would spin for ever and the caller with it.
func TestHalvesPanicDoesNotHang(t *testing.T) {
	alwaysParallel(t)
	for _, where := range []string{"caller", "worker"} {
		// At three participants the middle region holds the end of the
		// first half and the start of the second, so a worker runs some
		// of the first half and another waits for it.
		setProcs(t, map[string]int{"caller": 2, "worker": 3}[where])
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			var s Section
			var h Halves
			var first Job = panicAtOnce{}
			if where == "worker" {
				first = &panicOnWorker{}
			}
			s.AddHalves(&h, first, newCountJob(64, 1), 64, 1, 1<<14)
			s.Run()
		}()
		select {
		case got := <-done:
			if got == nil {
				t.Errorf("panic on the %s: the section returned normally", where)
			} else if !strings.Contains(fmt.Sprint(got), "index out of range") {
				t.Errorf("panic on the %s: recovered %v", where, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("panic on the %s: the section hangs", where)
		}
	}
	job := newCountJob(64, 1)
	For(job, 64, 1, 1<<20)
	job.check(t, "For after the panics")
}
