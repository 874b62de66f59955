package minigpt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// panicJob counts the indices its chunks cover and panics, with an index
// out of range as a buggy job would, in the chunks that run on a pool
// worker (onWorker) or on the section's caller (!onWorker). Every chunk
// first waits until two chunks have started, so that a worker surely
// takes part however fast the caller is.
type panicJob struct {
	covered  atomic.Int64
	started  atomic.Int64
	panics   bool
	onWorker bool
}

func (j *panicJob) run(lo, hi int) {
	j.covered.Add(int64(hi - lo))
	j.started.Add(1)
	for deadline := time.Now().Add(5 * time.Second); j.started.Load() < 2 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if !j.panics {
		return
	}
	buf := make([]byte, 1<<14)
	buf = buf[:runtime.Stack(buf, false)]
	if bytes.Contains(buf, []byte("(*worker).run")) == j.onWorker {
		var s []int
		_ = s[lo]
	}
}

// runSection runs job over [0, n) as a parallel section and returns what
// the caller's goroutine recovered, if anything.
func runSection(t *testing.T, n int, job rangeJob) (recovered any) {
	t.Helper()
	defer func() { recovered = recover() }()
	p := pool.acquire(n, 1, minParallelWork)
	if p < 2 {
		t.Fatalf("acquire gave %d participants, want at least 2", p)
	}
	pool.dispatch(p, n, 1, job)
	return nil
}

// TestWorkerPanicReachesCaller checks that a panic on a worker goroutine
// reaches the section's caller, where it can be recovered, carrying the
// worker's value and stack, after every index has been covered; and that
// the pool works afterwards. Before the fix the panic killed the whole
// test binary.
func TestWorkerPanicReachesCaller(t *testing.T) {
	const n = 64
	// Grow the pool past the workers the panicking section uses, as an
	// earlier GOMAXPROCS=8 section would (the records must survive that).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	if got := runSection(t, n, &panicJob{}); got != nil {
		t.Fatalf("section with 8 participants: recovered %v", got)
	}
	runtime.GOMAXPROCS(2)
	bad := &panicJob{panics: true, onWorker: true}
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
		good := &panicJob{}
		if got := runSection(t, n, good); got != nil {
			t.Fatalf("section after a panic: recovered %v", got)
		}
		if c := good.covered.Load(); c != n {
			t.Fatalf("section after a panic covered %d of %d", c, n)
		}
	}
	// A panic on the caller's own chunk still reaches the caller, and
	// the workers finish the rest.
	own := &panicJob{panics: true}
	if got := runSection(t, n, own); got == nil {
		t.Fatal("a panic on the caller's chunk was lost")
	} else if _, ok := got.(*workerPanic); ok {
		t.Fatalf("the caller's own panic came back as a worker's: %v", got)
	}
	if c := own.covered.Load(); c != n {
		t.Errorf("caller's panic: %d of %d indices covered", c, n)
	}
	if got := runSection(t, n, &panicJob{}); got != nil {
		t.Fatalf("section after the caller's panic: recovered %v", got)
	}
}

// TestSectionCoversEveryIndexOnce runs sections of many shapes and
// participant counts and checks that every index is run exactly once.
func TestSectionCoversEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{2, 3, 7, 64, 1000} {
			for _, grain := range []int{1, 4, 512} {
				job := &countJob{hits: make([]atomic.Int32, n), grain: grain}
				p := pool.acquire(n, grain, minParallelWork)
				if p > 1 {
					pool.dispatch(p, n, grain, job)
				} else {
					job.run(0, n)
				}
				for i := range job.hits {
					if h := job.hits[i].Load(); h != 1 {
						t.Fatalf("procs %d n %d grain %d: index %d run %d times", procs, n, grain, i, h)
					}
				}
				if job.badEdge.Load() {
					t.Fatalf("procs %d n %d grain %d: a chunk starts off the grain", procs, n, grain)
				}
			}
		}
	}
}

// TestSectionParticipantStartsInItsRegion checks the affinity that
// keeps a core on the same rows from section to section: participant k
// claims its own region's chunks first, each region's chunks in order
// and shrinking, and then, alone, the other regions' in turn, covering
// every index once; with the regions split evenly or given (uneven, some
// empty, as plan.regions may give them).
func TestSectionParticipantStartsInItsRegion(t *testing.T) {
	for _, regions := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, 7, 64, 1000} {
			for _, grain := range []int{1, 4} {
				units := (n + grain - 1) / grain
				for k := 0; k < 2*regions; k++ {
					job := &orderJob{}
					s := &section{job: job, n: n, grain: grain, units: units, regions: regions}
					var given []int
					if k >= regions { // the same participants, uneven regions
						for r := range regions + 1 {
							given = append(given, units*r*r/(regions*regions))
						}
					}
					s.setRegions(given)
					s.participate(k % regions)
					r0, r1 := s.bound[k%regions], s.bound[k%regions+1]
					if given == nil && r0 != k*units/regions || given != nil && r0 != given[k%regions] {
						t.Fatalf("regions %d units %d: region %d starts at %d (given %v)", regions, units, k%regions, r0, given)
					}
					if len(job.los) == 0 || r0 < r1 && job.los[0] != r0*grain {
						t.Fatalf("regions %d n %d grain %d: participant %d began at %v, its region [%d, %d)", regions, n, grain, k%regions, job.los, r0*grain, r1*grain)
					}
					covered := 0
					for i, lo := range job.los {
						covered += job.his[i] - lo
					}
					if covered != n {
						t.Fatalf("regions %d n %d grain %d participant %d: covered %d of %d", regions, n, grain, k, covered, n)
					}
					// Within a region the chunks do not grow.
					for r := 0; r < regions; r++ {
						last := units + 1
						for c := 0; ; c++ {
							u0, u1, ok := s.chunk(r, c)
							if !ok {
								break
							}
							if u1-u0 > last {
								t.Fatalf("regions %d units %d: region %d chunk %d has %d units after %d", regions, units, r, c, u1-u0, last)
							}
							last = u1 - u0
						}
					}
				}
			}
		}
	}
}

// orderJob records its chunks in the order they run (one participant).
type orderJob struct{ los, his []int }

func (j *orderJob) run(lo, hi int) {
	j.los, j.his = append(j.los, lo), append(j.his, hi)
}

type countJob struct {
	hits    []atomic.Int32
	grain   int
	badEdge atomic.Bool
}

func (j *countJob) run(lo, hi int) {
	if j.grain > 0 && lo%j.grain != 0 {
		j.badEdge.Store(true)
	}
	for i := lo; i < hi; i++ {
		j.hits[i].Add(1)
	}
}

// TestPlanCoversEveryItemOnce runs plans of several tasks of mixed sizes,
// grains and costs (a cheap task beside a costly one, a task smaller than
// its grain, one of a single item) and checks that every item of every
// task is run exactly once and that pieces start on their task's grain,
// at several participant counts and serially.
func TestPlanCoversEveryItemOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	shapes := [][][3]int{ // tasks as {items, grain, cost per item}
		{{1000, 4, 64}},
		{{768, 4, 1 << 14}, {128, 8, 768}, {48, 1, 1 << 16}},
		{{3, 4, 1 << 20}, {1, 1, 1}, {4096, 4, 1 << 10}, {17, 8, 5}},
		{{64, 4, 1 << 13}, {256, 4, 1 << 13}, {64, 8, 1024}, {256, 8, 1024}, {64, 4, 3072}, {64, 4, 3072}, {48, 1, 1 << 15}},
	}
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for si, shape := range shapes {
			var pl plan
			jobs := make([]*countJob, len(shape))
			// Every kind of task, in turn (plan.layout orders them).
			kinds := []func(rangeJob, int, int, int){pl.add, pl.addRows, pl.addFirst, pl.addLast}
			for i, task := range shape {
				jobs[i] = &countJob{hits: make([]atomic.Int32, task[0]), grain: task[1]}
				kinds[(si+i)%len(kinds)](jobs[i], task[0], task[1], task[2])
			}
			pl.execute()
			for ti, job := range jobs {
				for i := range job.hits {
					if h := job.hits[i].Load(); h != 1 {
						t.Fatalf("procs %d shape %d task %d: item %d run %d times", procs, si, ti, i, h)
					}
				}
				if job.badEdge.Load() {
					t.Fatalf("procs %d shape %d task %d: a piece starts off the grain", procs, si, ti)
				}
			}
		}
	}
}

// TestPlanRegionsSplitRowTasksEvenly: when the whole tasks are a small
// share of a section, layout puts the first halves, the whole tasks, the
// row tasks and the second halves in that order, whatever the order they
// were added in, and regions cuts the row tasks evenly (so at two
// threads each core takes half of the batch's rows, the same half in
// every section); when the whole tasks are costly, the row tasks go
// among them in the order added and regions leaves the even split of
// all units (nil).
func TestPlanRegionsSplitRowTasksEvenly(t *testing.T) {
	const rowItems, grain = 1024, 4
	var pl plan
	rows, first, whole, last := &countJob{}, &countJob{}, &countJob{}, &countJob{}
	pl.addRows(rows, rowItems, grain, 1000)
	pl.addLast(last, 16, 1, 20000)
	pl.add(whole, 64, 8, 100)
	pl.addFirst(first, 16, 1, 20000)
	units, _ := pl.layout()
	if got, want := pl.order[:pl.n], []int{3, 2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("tasks laid out in the order %v, want %v", got, want)
	}
	rt := &pl.tasks[0]
	for _, r := range []int{2, 3} {
		b := pl.regions(r)
		if len(b) != r+1 || b[0] != 0 || b[r] != units {
			t.Fatalf("%d regions over %d units: %v", r, units, b)
		}
		for k := 1; k < r; k++ {
			if item := rt.item(b[k] - rt.first); abs(item-k*rowItems/r) > grain {
				t.Errorf("%d regions: region %d starts at row %d, want about %d", r, k, item, k*rowItems/r)
			}
		}
	}
	if b := pl.regions(1); b != nil {
		t.Errorf("one region: %v, want nil", b)
	}

	pl.reset()
	pl.addRows(rows, rowItems, grain, 1000)
	pl.add(whole, 64, 8, 1<<16) // 3.9 times the row task
	pl.layout()
	if got, want := pl.order[:pl.n], []int{0, 1}; !slices.Equal(got, want) {
		t.Fatalf("with a costly whole task: laid out in the order %v, want %v (as added)", got, want)
	}
	if b := pl.regions(2); b != nil {
		t.Errorf("with a costly whole task: regions %v, want nil (even)", b)
	}
}

func abs(x int) int { return max(x, -x) }

// chainStep records, for each row, the order in which the chain's steps
// reached it.
type chainStep struct {
	id   int32
	seen [][]int32
}

func (s *chainStep) run(lo, hi int) {
	for r := lo; r < hi; r++ {
		s.seen[r] = append(s.seen[r], s.id)
	}
}

// TestRowChainRunsStepsInOrderPerRow: every row goes through every step
// of a chain once, in the order the steps were added, whatever the
// chunking (a row's later step reads what its earlier step wrote).
func TestRowChainRunsStepsInOrderPerRow(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		const n = 999
		seen := make([][]int32, n)
		var c rowChain
		steps := make([]chainStep, 5)
		for i := range steps {
			steps[i] = chainStep{id: int32(i), seen: seen}
			c.add(&steps[i])
		}
		var pl plan
		pl.add(&c, n, 4, 1<<12)
		pl.execute()
		for r, got := range seen {
			if len(got) != len(steps) {
				t.Fatalf("procs %d: row %d went through %d steps, want %d", procs, r, len(got), len(steps))
			}
			for i, id := range got {
				if id != int32(i) {
					t.Fatalf("procs %d: row %d saw steps %v, want 0..%d in order", procs, r, got, len(steps)-1)
				}
			}
		}
	}
}

// weightGradJob's items cover every output of dW = inpᵀ·dout exactly
// once, whatever the ranges the plan hands out, each output its whole
// chain: against naiveNN (the definition), bit for bit, on every kernel
// path, with ragged row and column blocks (C not a multiple of 4, OC not
// of weightGradCols, one block or several) and a dW full of NaN first
// (every output must be set).
// weightGradOperands draws inp (N×C) and dout (N×OC) and returns them
// with dW = inpᵀ·dout by its definition (naiveNN).
func weightGradOperands(rng *rand.Rand, N, C, OC int) (inp, dout, want []float64) {
	inp, dout = randomSlice(rng, N*C), randomSlice(rng, N*OC)
	want = make([]float64, C*OC)
	naiveNN(want, OC, inp, 1, C, dout, OC, C, OC, N)
	return inp, dout, want
}

// nanSlice is n NaNs: an output that must be set everywhere.
func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

func TestWeightGradJobSplits(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, shape := range [][3]int{{37, 7, 130}, {64, 64, 192}, {5, 3, 65}, {40, 9, 64}, {9, 6, 300}, {33, 10, 384}} {
			N, C, OC := shape[0], shape[1], shape[2]
			inp, dout, want := weightGradOperands(rng, N, C, OC)
			for _, step := range []int{1, 2, 3, 5, 1000} {
				dw := nanSlice(C * OC)
				var j weightGradJob
				items := j.set(dw, inp, dout, N, C, OC)
				for lo := 0; lo < items; lo += step {
					j.run(lo, min(lo+step, items))
				}
				for i := range want {
					if math.Float64bits(dw[i]) != math.Float64bits(want[i]) {
						t.Fatalf("N %d, C %d, OC %d, ranges of %d items: dW[%d][%d] = %v, want %v", N, C, OC, step, i/OC, i%OC, dw[i], want[i])
					}
				}
			}
		}
	})
}

// BenchmarkWeightGradJob times the baby config's largest weight gradient
// (dW_fc = ln2ᵀ·dfc: 128×512 outputs, 768 terms each) on one goroutine:
// as weightGradJob runs it, whole and in pieces of 8 items (a plan's
// pieces at two threads are of that order), and as one gemmNN call over
// the whole product (the kernels' best case). A split whose items each
// cost a kernel call of their own shows here as a fraction of the whole
// call's GFLOP/s (the 4 × 64 items of the sixth speed pass ran at 20-30
// GFLOP/s inside a step).
func BenchmarkWeightGradJob(b *testing.B) {
	const N, C, OC = 768, 128, 512
	rng := rand.New(rand.NewPCG(5, 6))
	inp, dout, dw := randomSlice(rng, N*C), randomSlice(rng, N*OC), make([]float64, C*OC)
	report := func(b *testing.B) {
		b.ReportMetric(2*float64(N*C*OC)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	b.Run("gemmNN", func(b *testing.B) {
		job := gemmNNJob{c: dw, ldc: OC, a: inp, ai: 1, ak: C, b: dout, ldb: OC, n: OC, k: N, init: true}
		for b.Loop() {
			job.run(0, C)
		}
		report(b)
	})
	for _, bc := range []struct {
		name  string
		piece int // items per run call; 0: all
	}{{"whole", 0}, {"pieces", 8}} {
		b.Run(bc.name, func(b *testing.B) {
			var j weightGradJob
			items := j.set(dw, inp, dout, N, C, OC)
			step := items
			if bc.piece > 0 {
				step = bc.piece
			}
			for b.Loop() {
				for lo := 0; lo < items; lo += step {
					j.run(lo, min(lo+step, items))
				}
			}
			report(b)
		})
	}
}

// fillerJob stands for a section's other tasks: it marks its items.
type fillerJob struct{ hits []atomic.Int32 }

func (j *fillerJob) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.hits[i].Add(1)
	}
}

// TestWeightGradHalvesKeepBits: a weight gradient in two halves
// (setWeightGradHalves), the second continuing the first's chains, gives
// dW bit for bit as its definition (naiveNN) does, on every kernel path,
// with the halves in one section, alone or around other work (the second
// waiting for the first item by item), at several participant counts,
// serially, and in two sections one after the other; and every other
// item of the section still runs once.
func TestWeightGradHalvesKeepBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	saved := minParallelWork
	defer func() { minParallelWork = saved }()
	minParallelWork = 0
	forEachKernelPath(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(23, 24))
		for _, shape := range [][3]int{{37, 7, 130}, {64, 64, 192}, {5, 3, 65}, {3, 6, 40}, {2, 9, 64}, {33, 10, 384}} {
			N, C, OC := shape[0], shape[1], shape[2]
			inp, dout, want := weightGradOperands(rng, N, C, OC)
			for _, procs := range []int{1, 2, 3, 8} {
				runtime.GOMAXPROCS(procs)
				for _, sections := range []int{0, 1, 2} { // 0: one section, no other task
					dw := nanSlice(C * OC)
					var first, second weightGradJob
					items := setWeightGradHalves(&first, &second, dw, inp, dout, N, C, OC)
					var h halves
					h.set(&first, &second, items)
					filler := &fillerJob{hits: make([]atomic.Int32, 300*min(sections, 1))}
					var pl plan
					pl.addFirst(&h.first, items, 1, N*OC*C/items)
					pl.add(filler, len(filler.hits), 4, 1000) // dropped when empty
					if sections == 2 {
						pl.execute()
						pl.reset()
					}
					pl.addLast(&h.second, items, 1, N*OC*C/items)
					pl.execute()
					for i := range want {
						if math.Float64bits(dw[i]) != math.Float64bits(want[i]) {
							t.Fatalf("N %d, C %d, OC %d, procs %d, %s: dW[%d][%d] = %v, want %v", N, C, OC, procs, []string{"halves alone", "one section", "two sections"}[sections], i/OC, i%OC, dw[i], want[i])
						}
					}
					for i := range filler.hits {
						if h := filler.hits[i].Load(); h != 1 {
							t.Fatalf("procs %d: the other task's item %d ran %d times", procs, i, h)
						}
					}
				}
			}
		}
	})
}

// panicAtOnce panics in every chunk it is given.
type panicAtOnce struct{}

func (panicAtOnce) run(lo, hi int) {
	var s []int
	_ = s[lo]
}

// TestWeightGradHalvesPanicDoesNotHang: when a participant panics, one
// waiting in a weight gradient's second half for first-half items that
// will never be done gives up, and the section's panic reaches the
// caller, whether the caller panicked (in the first region, where the
// first halves go) or a worker did (in the last region, beside the
// second half). Before the section kept track of panics, the waiter
// would spin for ever and the caller with it.
func TestWeightGradHalvesPanicDoesNotHang(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	saved := minParallelWork
	defer func() { minParallelWork = saved }()
	minParallelWork = 0
	const N, C, OC = 64, 16, 64
	rng := rand.New(rand.NewPCG(25, 26))
	inp, dout := randomSlice(rng, N*C), randomSlice(rng, N*OC)
	for _, where := range []string{"caller", "worker"} {
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			dw := make([]float64, C*OC)
			var first, second weightGradJob
			items := setWeightGradHalves(&first, &second, dw, inp, dout, N, C, OC)
			var h halves
			h.set(&first, &second, items)
			// first is never run, so second waits for it until the
			// panic aborts the section.
			var pl plan
			if where == "caller" {
				pl.addFirst(panicAtOnce{}, 64, 1, 1<<14)
			}
			pl.add(&fillerJob{hits: make([]atomic.Int32, 64)}, 64, 1, 1<<14)
			if where == "worker" {
				pl.add(panicAtOnce{}, 64, 1, 1<<14)
			}
			pl.addLast(&h.second, items, 1, N*OC*C/items)
			pl.execute()
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
	// The pool is usable afterwards.
	job := &countJob{hits: make([]atomic.Int32, 64)}
	if got := runSection(t, 64, job); got != nil {
		t.Fatalf("section after the panics: recovered %v", got)
	}
}
