package minigpt

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"example.org/minigpt/internal/kernels"
)

// Parallel sections split a range of independent outputs (rows of a
// matrix, (batch, head) pairs) into one contiguous region per
// participant, each cut into a few chunks, which the caller and the
// workers claim one at a time: first from their own region, then from
// the others' until none is left. A core that is slowed down (by another
// process on a shared machine, or by a slower kernel for its part)
// simply claims fewer chunks, and otherwise each core works on the same
// rows (the same sequences) section after section, so what one section
// writes is still in the cache of the core the next one reads it on. No
// output is ever shared between chunks and no sum is ever split, so the
// bits depend neither on GOMAXPROCS nor on who ran which chunk. Workers
// are started once and reused; a section costs a few atomic operations
// (a channel operation for a parked worker), an atomic add per chunk,
// and no allocation: the job descriptions live in the pool and are
// guarded by its mutex.
//
// A panic on a worker (an index out of range in a job, say) must not kill
// the process from a goroutine the caller cannot recover in: the worker
// recovers it, finishes its part of the section's bookkeeping, and the
// caller's goroutine panics with the worker's value and stack once the
// section is over. The pool stays usable afterwards.

// rangeJob is a piece of work over an index range [lo, hi).
type rangeJob interface {
	run(lo, hi int)
}

// section is one parallel section: job over [0, n) in units of grain,
// the units split into regions contiguous regions (one per participant),
// region r the units [bound[r], bound[r+1]), its chunks claimed through
// next[r].
type section struct {
	job                      rangeJob
	n, grain, units, regions int
	next                     [maxRegions]paddedCounter
	bound                    [maxRegions + 1]int
}

// setRegions sets the regions' boundaries: bound when it has one for each
// region and one for the end, nondecreasing from 0 to the units, else
// (nil, say) the units split evenly.
func (s *section) setRegions(bound []int) {
	ok := len(bound) == s.regions+1 && bound[0] == 0 && bound[s.regions] == s.units
	for r := 0; ok && r < s.regions; r++ {
		ok = bound[r] <= bound[r+1]
	}
	if ok {
		copy(s.bound[:], bound)
		return
	}
	for r := range s.regions + 1 {
		s.bound[r] = r * s.units / s.regions
	}
}

// maxRegions bounds the regions of a section; with more participants,
// several start in the same region.
const maxRegions = 64

// paddedCounter is a chunk counter on a cache line of its own, so that
// participants claiming from different regions do not share a line.
type paddedCounter struct {
	atomic.Int64
	_ [56]byte
}

// chunksPerWorker is how many chunks a region is cut into: more balance
// the load better, fewer cost fewer claims and keep blocks big (and
// section.chunk makes the last ones small).
const chunksPerWorker = 4

// participate claims and runs chunks until none is left: participant k
// (0 for the caller, worker i is i+1) starts in its own region and then
// helps the next ones. Before regions, every chunk went to whoever came
// first, so a row's next layer ran on the other core about half the
// time: the seed config's row-wise sections then needed 1.16-1.19× the
// CPU time at two threads that they needed on one (from a cache's view,
// the other core held what they read), the whole step 1.11×; with
// regions 1.02-1.06× and 1.02×, and two-thread steps 1.04-1.05× faster
// (1.01× at the baby config; measured on the two-vCPU Xeon).
func (s *section) participate(k int) {
	for i := 0; i < s.regions; i++ {
		r := (k + i) % s.regions
		for {
			c := int(s.next[r].Add(1) - 1)
			u0, u1, ok := s.chunk(r, c)
			if !ok {
				break
			}
			if lo, hi := u0*s.grain, min(u1*s.grain, s.n); lo < hi {
				s.job.run(lo, hi)
			}
		}
	}
}

// chunk returns the units [u0, u1) of region r's chunk c, or ok false
// when the region has no chunk c. A region of n units is cut at
// n·(1 − ((q−c)/q)²) for q = min(n, chunksPerWorker): chunks shrink
// linearly, from about 2/q of the region down to a sliver (or nothing,
// skipped). The big ones first keep the claims few and the kernels'
// blocks large; the small ones last let the participants reach the
// barrier within a small chunk of each other, where equal chunks left
// one idling through the other's last (4-8% less wall time per step
// with two threads, measured on the two-vCPU Xeon). Where the boundaries
// fall never moves a sum (see above).
func (s *section) chunk(r, c int) (u0, u1 int, ok bool) {
	r0, r1 := s.bound[r], s.bound[r+1]
	n := r1 - r0
	q := min(n, chunksPerWorker)
	if c >= q {
		return 0, 0, false
	}
	cut := func(c int) int {
		left := int64(q - c)
		return r0 + n - int(int64(n)*left*left/int64(q*q))
	}
	return cut(c), cut(c + 1), true
}

type workerPool struct {
	mu      sync.Mutex // held for a whole section; contenders run serially
	workers []*worker
	wg      sync.WaitGroup
	sec     section // the current section, written only while mu is held
	// gen is (sections published so far)<<16 | (participants of the
	// last one): a change wakes the workers, and tells each, in one
	// atomic read, whether it takes part (a worker that does not must
	// not touch sec, which the next section may be rewriting).
	gen     atomic.Uint64
	pending atomic.Int64 // workers still in the current section
	aborted atomic.Bool  // a participant of the current section panicked

	// Job slots, written only while mu is held.
	nn     gemmNNJob
	nt     gemmNTJob
	attn   attentionJob
	ln     layernormJob
	adam   adamJob
	elem   elementwiseJob
	colsum columnSumJob
	ce     crossEntropyJob
	enc    encoderJob
	sq     sumSquaresJob
}

var pool workerPool

// minParallelWork is the amount of work (in multiply-adds) below which a
// section runs on the calling goroutine: waking a worker costs a few
// microseconds.
var minParallelWork = 1 << 16

// acquire decides whether a section of n items of the given cost is spread
// over the workers; if it returns a count p > 1, the caller holds pool.mu
// and must call dispatch.
func (wp *workerPool) acquire(n, grain, costPerItem int) int {
	p := min(runtime.GOMAXPROCS(0), 1<<16-1) // gen has 16 bits for it
	units := (n + grain - 1) / grain
	if p > units {
		p = units
	}
	if p <= 1 || n*costPerItem < minParallelWork || !wp.mu.TryLock() {
		// A concurrent or nested section simply runs serially: same bits.
		return 1
	}
	return p
}

// spinTime is how long a worker polls for the next section, and the
// caller for the workers' end, before blocking. Sections of a training
// step follow each other within microseconds, and waking a parked
// thread costs tens of microseconds on a virtual machine: polling
// catches the next section at once, while a pause longer than this (the
// end of training, a prompt being typed) still parks everything. A
// participant done with its share waits out the other's last chunk,
// which at the baby config often took longer than the 50 µs this was:
// the worker then started the next section 40 µs late on average (2% of
// a two-thread step, measured on the two-vCPU Xeon). At 200 µs it
// starts within a few; two-thread steps 1.02-1.07× faster (seed),
// 1.00-1.02× (baby); 500 µs gained nothing more.
const spinTime = 200 * time.Microsecond

// dispatch runs job over [0, n) on p participants (the calling goroutine
// and workers 0 to p-2), in chunks whose boundaries are multiples of
// grain, and releases pool.mu.
func (wp *workerPool) dispatch(p, n, grain int, job rangeJob) {
	wp.dispatchRegions(p, n, grain, job, nil)
}

// dispatchRegions is dispatch with the participants' regions given
// (section.setRegions): bound[r] is the unit (of grain) where region r
// starts, the last the number of units.
func (wp *workerPool) dispatchRegions(p, n, grain int, job rangeJob, bound []int) {
	for len(wp.workers) < p-1 {
		w := &worker{index: len(wp.workers), wake: make(chan struct{}, 1)}
		wp.workers = append(wp.workers, w)
		go w.loop(wp, wp.gen.Load())
	}
	units := (n + grain - 1) / grain
	s := &wp.sec
	s.job, s.n, s.grain, s.units = job, n, grain, units
	s.regions = min(p, maxRegions)
	s.setRegions(bound)
	for r := range s.regions {
		s.next[r].Store(0)
	}
	wp.wg.Add(p - 1)
	wp.pending.Store(int64(p - 1))
	wp.aborted.Store(false)
	// Even if the caller's own chunk panics, wait for the workers (they
	// write into the caller's buffers) and release the pool; then pass on
	// a worker's panic, unless the caller's own is already under way.
	callerDone := false
	defer func() {
		if !callerDone {
			wp.aborted.Store(true) // a participant waiting on the caller's work gives up
		}
		for start := time.Now(); wp.pending.Load() > 0 && time.Since(start) < spinTime; {
			runtime.Gosched()
		}
		wp.wg.Wait()
		s.job = nil
		var wpanic *workerPanic
		for _, w := range wp.workers[:p-1] {
			if w.failed != nil && wpanic == nil {
				wpanic = w.failed
			}
			w.failed = nil
		}
		wp.mu.Unlock()
		if wpanic != nil {
			panic(wpanic)
		}
	}()
	// Publish: polling workers see the new generation (and, through the
	// atomic, the section written above); parked ones get a token.
	wp.gen.Store((wp.gen.Load()>>16+1)<<16 | uint64(p))
	for _, w := range wp.workers[:p-1] {
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	s.participate(0)
	callerDone = true
}

// worker is one goroutine of the pool and the record of its last
// section's panic (written by the worker before wg.Done, read and
// cleared by dispatch after wg.Wait).
type worker struct {
	index  int
	parked atomic.Bool
	wake   chan struct{} // capacity 1: a token for a parked worker
	failed *workerPanic
}

// loop takes part in every section that counts this worker among its
// participants, from the generation after seen on.
func (w *worker) loop(wp *workerPool, seen uint64) {
	for {
		seen = w.next(wp, seen)
		if participants := int(seen & 0xffff); w.index < participants-1 {
			w.run(&wp.sec, wp)
		}
	}
}

// next returns the next generation after seen: polled for spinTime,
// then waited for parked. parked is set before the last look at the
// generation and dispatch reads it after publishing, so either this
// worker sees the new generation or dispatch sees it parked and leaves
// a token (a stale token only costs one more look).
func (w *worker) next(wp *workerPool, seen uint64) uint64 {
	for {
		for start := time.Now(); time.Since(start) < spinTime; {
			if g := wp.gen.Load(); g != seen {
				return g
			}
			// Yield between looks: a bare load loop would take issue
			// slots from a hyperthread sibling doing the real work.
			runtime.Gosched()
		}
		w.parked.Store(true)
		if g := wp.gen.Load(); g != seen {
			w.parked.Store(false)
			return g
		}
		<-w.wake
		w.parked.Store(false)
	}
}

// run takes part in a section. A panic is recovered here, with the
// worker's stack, for dispatch to raise on the caller's goroutine (the
// chunks this worker would have claimed next are left to the others);
// the counts come last, so dispatch sees the record.
func (w *worker) run(s *section, wp *workerPool) {
	defer func() {
		if v := recover(); v != nil {
			w.failed = &workerPanic{value: v, stack: debug.Stack()}
			wp.aborted.Store(true)
		}
		wp.pending.Add(-1)
		wp.wg.Done()
	}()
	s.participate(w.index + 1)
}

// workerPanic is what the caller of a parallel section panics with when
// a worker panicked: the worker's panic value and its stack, which the
// caller's own stack trace would not show.
type workerPanic struct {
	value any
	stack []byte
}

func (p *workerPanic) Error() string {
	return fmt.Sprintf("minigpt: panic in a parallel worker: %v\n\nworker goroutine stack:\n%s", p.value, p.stack)
}

// Unwrap returns the worker's panic value when it was an error (a
// runtime.Error for an index out of range, say).
func (p *workerPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// gemmNNJob splits gemmNN over the rows of C (independent outputs). With
// init set, each chunk first sets its rows of C to bias (to zero when bias
// is nil). After the product, each chunk applies to its own rows the
// elementwise layer that follows, while they are still in cache: with
// act set, act = relu(C); with res set, C = res + C (both ldc = n).
type gemmNNJob struct {
	c      []float64
	ldc    int
	a      []float64
	ai, ak int
	b      []float64
	ldb    int
	n, k   int
	init   bool
	bias   []float64
	act    []float64
	res    []float64
}

func (j *gemmNNJob) run(lo, hi int) {
	c, a := j.c[lo*j.ldc:], j.a[lo*j.ai:]
	if !j.init {
		kernels.GemmNN(c, j.ldc, a, j.ai, j.ak, j.b, j.ldb, hi-lo, j.n, j.k)
		j.post(lo, hi)
		return
	}
	// The layer after the product is GemmNNSet's epilogue (the AVX-512
	// kernels apply it as they store C) when it works on C in place.
	if j.act != nil && &j.act[0] != &j.c[0] || j.ldc != j.n && (j.act != nil || j.res != nil) {
		kernels.GemmNNSet(c, j.ldc, j.bias, a, j.ai, j.ak, j.b, j.ldb, hi-lo, j.n, j.k, kernels.EpiNone, nil)
		j.post(lo, hi)
		return
	}
	epi, res := kernels.EpiNone, []float64(nil)
	if j.act != nil {
		epi |= kernels.EpiReLU
	}
	if j.res != nil {
		epi, res = epi|kernels.EpiResidual, j.res[lo*j.n:]
	}
	kernels.GemmNNSet(c, j.ldc, j.bias, a, j.ai, j.ak, j.b, j.ldb, hi-lo, j.n, j.k, epi, res)
}

// post applies the fused elementwise layer to rows [lo, hi).
func (j *gemmNNJob) post(lo, hi int) {
	if j.act != nil {
		e := elementwiseJob{op: opRelu, out: j.act[lo*j.n : hi*j.n], a: j.c[lo*j.n : hi*j.n]}
		e.run(0, len(e.out))
	}
	if j.res != nil {
		c := j.c[lo*j.n : hi*j.n]
		e := elementwiseJob{op: opResidual, out: c, a: j.res[lo*j.n : hi*j.n], b: c}
		e.run(0, len(c))
	}
}

// weightGradJob splits a weight gradient's gemmNN (few rows of C, a
// long k) over blocks of columns and of rows: item i is the columns
// cols·(i / rowBlocks) .. of C (the last block also takes the ragged
// ones) and the rows 4(i % rowBlocks) .. +3. A range of items is one
// kernel call per column block, over all its rows in the range, so the
// kernels' k blocking keeps each block of dout in L2 while the rows
// sweep it.
//
// Two splits came before. Over rows alone, the seed config's dW had 16
// pieces of 0.8M multiply-adds, 8 times a plan's quantum, so a
// section's last chunks were whole pieces. Items of 4 rows × 64 columns,
// one kernel call each, fixed that but streamed all of dout from L3 for
// every four rows: timed inside a one-thread baby step, the weight
// gradients ran at 20-30 GFLOP/s against 49-69 now, and whole steps are
// 1.14-1.26× faster with these blocks, at one and two threads (in-process
// A/B, 31 alternating rounds, two-vCPU Xeon); against the row split they
// are 0.98-1.01×. Every output keeps its whole chain over k, so where
// the blocks fall moves no bit.
type weightGradJob struct {
	mm        gemmNNJob // the whole product (or a half's), init set (a second half's not)
	rows      int       // of C
	cols      int       // columns of C per item
	rowBlocks int
	colBlocks int
}

// weightGradCols is the width of a weightGradJob column block: four of
// the kernels' 32-column blocks. 128 against 64 in a step: 1.04×
// (one thread), 1.00-1.01× (two); 256 was no faster than 128.
const weightGradCols = 128

// set describes dW = inpᵀ·dout (inp N×C, dout N×OC: dW is C×OC, each
// output a chain over the N rows) and returns the number of items.
func (j *weightGradJob) set(dw, inp, dout []float64, N, C, OC int) int {
	j.mm = gemmNNJob{c: dw, ldc: OC, a: inp, ai: 1, ak: C, b: dout, ldb: OC, n: OC, k: N, init: true}
	j.rows, j.cols = C, weightGradCols
	j.rowBlocks, j.colBlocks = (C+3)/4, max(OC/weightGradCols, 1)
	return j.rowBlocks * j.colBlocks
}

// setWeightGradHalves describes dW = inpᵀ·dout as two jobs: first over
// the first half of the N rows (N ≥ 2), second over the rest, continuing
// each chain from where first left it in dW. Every output's chain still
// runs over the rows in order, as in one job (a chain split in k keeps
// its bits, as the kernels' own blocks of k do), so the bits are the
// same; but at two threads each half can run on the core whose chains
// wrote its rows of dout (see weightGradInHalves). Both have the same
// items; run them as a pair of halves (halves.set).
func setWeightGradHalves(first, second *weightGradJob, dw, inp, dout []float64, N, C, OC int) int {
	split := N / 2
	items := first.set(dw, inp, dout, split, C, OC)
	second.set(dw, inp[split*C:], dout[split*OC:], N-split, C, OC)
	second.mm.init = false
	return items
}

// weightGradInHalves reports whether a weight gradient dW = inpᵀ·dout
// (inp N×C, dout N×OC) runs in two halves (setWeightGradHalves): at more
// than one thread but no more than the CPUs, when the rows that each core would otherwise read
// from the other's cache, about N·(C+OC)/2 values, are at least
// weightGradHalvesMin times the C·OC values of dW that the halves pass
// from one core to the other. Measured on the two-vCPU Xeon (two
// threads, in-process A/B, 31-41 rounds), with every weight gradient in
// halves: seed config steps (ratios 10 to 29) 1.028-1.037× faster; baby
// config steps (3.75 to 6 but for its head's 8.9, and activations too
// large to stay in a core's L2 until the weight gradient reads them)
// 0.975-0.989×, its backward attention sections taking 1.07× the CPU
// time. With this threshold: seed 1.025×, baby 0.994× (only its head in
// halves; noise). At one thread the halves only cost (0.98-0.99×: dW is
// written and read back once more); with more threads than CPUs, a
// thread waiting for a first half takes the CPU from the one doing it
// (seed config at GOMAXPROCS 8 on the two vCPUs: 0.89×, 31 rounds), so
// there too the job stays whole.
func weightGradInHalves(N, C, OC int) bool {
	if weightGradHalvesMin == 0 { // the tests' setting: always
		return N >= 2
	}
	procs := runtime.GOMAXPROCS(0)
	return procs > 1 && procs <= runtime.NumCPU() && N*(C+OC) >= weightGradHalvesMin*2*C*OC
}

// rowsInHalves reports whether the other sums over a batch's N rows
// (bias column sums, LayerNorm's weight and bias gradients, the
// encoder's backward) run in two halves (halves): at more than one
// thread but no more than the CPUs, as the weight gradients' halves
// (weightGradInHalves). They pass only a row of sums (or the embedding
// gradients' columns) from one core to the other, against half of the
// rows each core would otherwise read from the other's cache: at two
// threads, with the row tasks split evenly (plan), 1.019× faster steps
// at the seed config, 0.997× at the baby's (in-process A/B, 41
// alternating rounds, two-vCPU Xeon).
func rowsInHalves(N int) bool {
	if weightGradHalvesMin == 0 { // the tests' setting: always
		return N >= 2
	}
	procs := runtime.GOMAXPROCS(0)
	return procs > 1 && procs <= runtime.NumCPU() && N >= 2
}

// weightGradHalvesMin is weightGradInHalves' threshold; 0 makes every
// weight gradient, and every sum over rows, of two or more rows run in
// halves (tests).
var weightGradHalvesMin = 8

// run runs items [lo, hi): one kernel call per column block.
func (j *weightGradJob) run(lo, hi int) {
	for it := lo; it < hi; {
		cb, rb := it/j.rowBlocks, it%j.rowBlocks
		end := min(j.rowBlocks, rb+hi-it) // this column block's row blocks in range
		c0, c1 := cb*j.cols, (cb+1)*j.cols
		if cb == j.colBlocks-1 {
			c1 = j.mm.n
		}
		sub := j.mm
		sub.c, sub.b, sub.n = j.mm.c[c0:], j.mm.b[c0:], c1-c0
		sub.run(rb*4, min(end*4, j.rows))
		it += end - rb
	}
}

// gemmNTJob splits gemmNT over the rows of C.
type gemmNTJob struct {
	c    []float64
	ldc  int
	a    []float64
	lda  int
	b    []float64
	ldb  int
	n, k int
	set  bool // gemmNTSet: C is overwritten, not accumulated into
}

func (j *gemmNTJob) run(lo, hi int) {
	if j.set {
		kernels.GemmNTSet(j.c[lo*j.ldc:], j.ldc, j.a[lo*j.lda:], j.lda, j.b, j.ldb, hi-lo, j.n, j.k)
		return
	}
	kernels.GemmNT(j.c[lo*j.ldc:], j.ldc, j.a[lo*j.lda:], j.lda, j.b, j.ldb, hi-lo, j.n, j.k)
}

// gemmNNParallelInit is gemmNN with the rows of C spread over the
// workers, each first set to bias (N wide), or to zero when bias is nil.
func gemmNNParallelInit(c []float64, ldc int, bias, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	runGemmNN(gemmNNJob{c: c, ldc: ldc, a: a, ai: ai, ak: ak, b: b, ldb: ldb, n: N, k: K, init: true, bias: bias}, M)
}

func runGemmNN(job gemmNNJob, M int) {
	if M <= 0 || job.n <= 0 {
		return
	}
	p := pool.acquire(M, 4, job.n*job.k)
	if p <= 1 {
		job.run(0, M)
		return
	}
	pool.nn = job
	pool.dispatch(p, M, 4, &pool.nn)
}

// gemmNTParallel is gemmNT with the rows of C spread over the workers.
func gemmNTParallel(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	p := pool.acquire(M, 4, N*K)
	if p <= 1 {
		kernels.GemmNT(c, ldc, a, lda, b, ldb, M, N, K)
		return
	}
	pool.nt = gemmNTJob{c: c, ldc: ldc, a: a, lda: lda, b: b, ldb: ldb, n: N, k: K}
	pool.dispatch(p, M, 4, &pool.nt)
}

// plan is one parallel section made of independent tasks (no task writes
// what another reads or writes): the row-wise stretch of a pass beside the
// weight gradients of the layers before it, say. The tasks' pieces are
// laid end to end as the section's units, so one barrier serves them all,
// and a participant done with one task's share goes on to another's. Each
// task is cut into pieces of about the same cost (multiply-adds), so that
// the section's shrinking chunks (section.chunk) shrink in time and not
// only in count. A task's pieces cover its items in order, each item in
// exactly one piece, and no sum spans two items, so where the pieces fall
// never changes a bit.
//
// The tasks are of four kinds, by how they were added, and their units go
// in this order: first halves of sums over rows (addFirst), whole tasks
// (add), row tasks (addRows: row chains and attention, whose items are
// the batch's rows or sequences in order) and second halves (addLast).
// When the whole tasks are a small share of the section (evenRowsWhole),
// the regions split the row tasks evenly (plan.regions), so at two
// threads each core works on the same half of the batch in every section
// and the halves' sums read the rows the core wrote itself; otherwise
// row tasks go among the whole tasks in the order added and the regions
// split all units evenly.
type plan struct {
	tasks [maxPlanTasks]planTask
	n     int
	order [maxPlanTasks]int // the tasks in the order of their units

	// Set by layout: the row tasks' units are [rows0, rows1) when the
	// regions split them evenly (evenRows).
	rows0, rows1, units int
	evenRows            bool
	bound               [maxRegions + 1]int // regions' scratch
}

// maxPlanTasks bounds the tasks of one section (the backward pass's
// attention section has the most: 13, with the weight gradients in halves).
const maxPlanTasks = 16

// planUnits is about how many pieces a section is cut into: enough for
// the chunks to shrink to a small share of the section.
const planUnits = 256

// planTask is job over items [0, items), in pieces whose boundaries are
// multiples of grain (but the last), each item costing cost.
type planTask struct {
	job                rangeJob
	items, grain, cost int
	kind               int // addFirst's, add's, addRows' or addLast's: where its units go
	first, units       int // the task's units in the section
}

func (pl *plan) reset() { pl.n = 0 }

// add appends a whole task, one whose items are not the batch's rows (a
// weight gradient, a transpose); a task with no items is dropped, by
// every add.
func (pl *plan) add(job rangeJob, items, grain, cost int) {
	pl.addKind(job, items, grain, cost, taskWhole)
}

// addFirst appends a task whose units go before those of every task
// added otherwise (and which runs first when the plan runs serially):
// the first half of a sum over rows (halves). At the head of the first region
// it is done early, so the participant of the last region, where the
// second half (addLast) waits for it item by item, waits least.
func (pl *plan) addFirst(job rangeJob, items, grain, cost int) {
	pl.addKind(job, items, grain, cost, taskFirst)
}

// addLast appends a task whose units go after those of every task added
// otherwise (and which runs last when the plan runs serially): the
// second half of a sum over rows, in the last region (so on the core
// with the last rows), and after everything it may wait for.
func (pl *plan) addLast(job rangeJob, items, grain, cost int) {
	pl.addKind(job, items, grain, cost, taskLast)
}

// addRows appends a row task: a job whose items are the batch's rows in
// order (a row chain), or its sequences (attention's (sequence, head)
// pairs), and which reads what the last section's row tasks wrote. Its
// units go after the whole tasks' (and it runs after them serially);
// when the regions split the row tasks evenly, each core keeps its half
// of the batch from section to section.
func (pl *plan) addRows(job rangeJob, items, grain, cost int) {
	pl.addKind(job, items, grain, cost, taskRows)
}

// The kinds of plan tasks, in the order of their units.
const (
	taskFirst = iota
	taskWhole
	taskRows
	taskLast
	taskKinds
)

func (pl *plan) addKind(job rangeJob, items, grain, cost, kind int) {
	if items <= 0 {
		return
	}
	pl.tasks[pl.n] = planTask{job: job, items: items, grain: grain, cost: max(cost, 1), kind: kind}
	pl.n++
}

// addHalves makes first and second the halves h runs (halves.set) and
// appends them: the first with addFirst, the second with addLast, each
// with items items.
func (pl *plan) addHalves(h *halves, first, second rangeJob, items, grain, cost int) {
	h.set(first, second, items)
	pl.addFirst(&h.first, items, grain, cost)
	pl.addLast(&h.second, items, grain, cost)
}

// halves runs a job whose every output is a chain over the batch's rows
// (a weight gradient, a column sum, the encoder's backward) as two jobs,
// one over each half of the rows: the second continues every chain from
// where the first left it, so the bits are those of the whole job. At
// two threads each half can then run on the core whose row chains wrote
// its rows (plan.addHalves puts the first at the head of the first
// region, the second at the tail of the last). The second waits for the
// first item by item: an item is the same block of outputs in both.
type halves struct {
	first, second half
}

// half is one of halves' two jobs.
type half struct {
	job   rangeJob
	done  []atomic.Bool // the first's marks: item i's chains hold the first rows
	after *half         // the second's first half
}

// set makes first and second, which have items items each, the halves
// to run. It allocates only when items outgrows every earlier call's.
func (h *halves) set(first, second rangeJob, items int) {
	if cap(h.first.done) < items {
		h.first.done = make([]atomic.Bool, items)
	}
	h.first.done = h.first.done[:items]
	for i := range h.first.done {
		h.first.done[i].Store(false)
	}
	h.first.job, h.first.after = first, nil
	h.second.job, h.second.after = second, &h.first
}

func (h *half) run(lo, hi int) {
	for lo < hi {
		end := hi
		if h.after != nil {
			if end = h.after.ready(lo, hi); end < 0 {
				return // another participant panicked: the section is lost
			}
		}
		h.job.run(lo, end)
		if h.after == nil { // the first half: mark the items done
			for i := lo; i < end; i++ {
				h.done[i].Store(true)
			}
		}
		lo = end
	}
}

// ready waits until the first half's item lo is done and returns the end
// of the run of done items from lo (at most hi), or -1 if the section
// was aborted (a participant panicked, and may have been the one to do
// item lo). The wait cannot deadlock: a first half's items come before
// every second half's in a section's units (see plan.addFirst), so a
// participant always finishes the first halves' pieces it claimed
// before it waits in a second half's, and the participant that owns
// a region claims its first halves' pieces before anything after them.
func (h *half) ready(lo, hi int) int {
	for !h.done[lo].Load() {
		if pool.aborted.Load() {
			return -1
		}
		runtime.Gosched()
	}
	end := lo + 1
	for end < hi && h.done[end].Load() {
		end++
	}
	return end
}

// item is the first item of the task's piece u.
func (t *planTask) item(u int) int {
	if u >= t.units {
		return t.items
	}
	return t.items * u / t.units / t.grain * t.grain
}

// run runs the pieces of units [lo, hi), task by task in the order of
// their units, so that a chunk's first-half pieces are done before its
// second-half pieces wait (half.ready).
func (pl *plan) run(lo, hi int) {
	for _, i := range pl.order[:pl.n] {
		t := &pl.tasks[i]
		u0, u1 := max(lo, t.first), min(hi, t.first+t.units)
		if u0 >= u1 {
			continue
		}
		if a, b := t.item(u0-t.first), t.item(u1-t.first); a < b {
			t.job.run(a, b)
		}
	}
}

// execute runs the plan's tasks, spread over the workers when there is
// enough work; serially, each task runs whole, in the order of their units.
func (pl *plan) execute() {
	units, total := pl.layout()
	if p := pool.acquire(units, 1, max(total/max(units, 1), 1)); p > 1 {
		pool.dispatchRegions(p, units, 1, pl, pl.regions(min(p, maxRegions)))
		return
	}
	for _, i := range pl.order[:pl.n] {
		pl.tasks[i].job.run(0, pl.tasks[i].items)
	}
}

// evenRowsWhole: the regions split the row tasks evenly when the whole
// tasks cost at most 1/evenRowsWhole of the section. At two threads
// that is every section with row tasks of the seed config's step (all
// but the last, which has only the sums' halves; the forward pass's
// transposes are 3% of theirs; the backward pass's sums over rows run in
// halves), and the baby config's forward pass and head, but not its
// backward sections beside whole weight gradients (20-89% of theirs):
// there, laid out after the whole tasks, the first region's row tasks
// would run on the other core in the end (it steals them), and keeping
// the split by units there made baby steps 1.01× faster than splitting
// the rows evenly everywhere (41 alternating rounds, two-vCPU Xeon).
const evenRowsWhole = 16

// layout lays the tasks' pieces end to end as the section's units, kind
// by kind (plan), and returns their number and the tasks' total cost.
func (pl *plan) layout() (units, total int) {
	var costs [taskKinds]int
	for _, t := range pl.tasks[:pl.n] {
		total += t.items * t.cost
		costs[t.kind] += t.items * t.cost
	}
	pl.evenRows = costs[taskRows] > 0 && costs[taskWhole]*evenRowsWhole <= total
	quantum := max(total/planUnits, 1)
	n := 0
	for kind := range taskKinds {
		if kind == taskRows {
			pl.rows0 = units
			if !pl.evenRows {
				continue // laid out with the whole tasks
			}
		}
		if kind == taskLast {
			pl.rows1 = units
		}
		for i := range pl.tasks[:pl.n] {
			t := &pl.tasks[i]
			if t.kind != kind && (kind != taskWhole || pl.evenRows || t.kind != taskRows) {
				continue
			}
			pl.order[n] = i
			n++
			pieces := (t.items + t.grain - 1) / t.grain
			t.first, t.units = units, min(max(t.items*t.cost/quantum, 1), pieces)
			units += t.units
		}
	}
	pl.units = units
	return units, total
}

// regions returns the boundaries of r regions over the units that layout
// laid: with evenRows, the regions split the row tasks' units evenly, the
// first region also taking everything before them (first halves and whole
// tasks) and the last everything after (second halves); else nil, an
// even split of all units.
func (pl *plan) regions(r int) []int {
	if !pl.evenRows || r < 2 {
		return nil
	}
	for k := 1; k < r; k++ {
		pl.bound[k] = pl.rows0 + k*(pl.rows1-pl.rows0)/r
	}
	pl.bound[0], pl.bound[r] = 0, pl.units
	return pl.bound[:r+1]
}

// rowChain runs row-wise layers (each row's outputs depend only on that
// row's inputs) one after the other over the same rows: a chunk of rows
// goes through all of them while it is in its core's cache, with no
// barrier between the layers.
type rowChain struct {
	steps [maxChainSteps]rangeJob
	n     int
}

// maxChainSteps bounds a chain's layers (the forward pass's stretch from
// one attention to the next has the most).
const maxChainSteps = 8

func (c *rowChain) reset()            { c.n = 0 }
func (c *rowChain) add(step rangeJob) { c.steps[c.n] = step; c.n++ }
func (c *rowChain) run(lo, hi int) {
	for _, s := range c.steps[:c.n] {
		s.run(lo, hi)
	}
}
