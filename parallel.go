package minigpt

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Parallel sections split a range of independent outputs (rows of a
// matrix, (batch, head) pairs) into contiguous chunks, a few per
// available processor, which the caller and the workers claim one at a
// time until none is left: a core that is slowed down (by another process
// on a shared machine, or by a slower kernel for its part) simply claims
// fewer chunks. No output is ever shared between chunks and no sum is
// ever split, so the bits depend neither on GOMAXPROCS nor on who ran
// which chunk. Workers are started once and reused; a section costs two
// channel operations per worker, an atomic add per chunk, and no
// allocation: the job descriptions live in the pool and are guarded by
// its mutex.
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

// section is one parallel section: job over [0, n) cut into chunks
// whose boundaries are multiples of grain, claimed through next.
type section struct {
	job                     rangeJob
	n, grain, units, chunks int
	next                    atomic.Int64
}

// chunksPerWorker is how many chunks a section has per participant: more
// balance the load better, fewer cost fewer claims and keep blocks big.
const chunksPerWorker = 4

// participate claims and runs chunks until none is left.
func (s *section) participate() {
	for {
		c := int(s.next.Add(1) - 1)
		if c >= s.chunks {
			return
		}
		lo := (s.units * c / s.chunks) * s.grain
		hi := min((s.units*(c+1)/s.chunks)*s.grain, s.n)
		s.job.run(lo, hi)
	}
}

type workerPool struct {
	mu      sync.Mutex // held for a whole section; contenders run serially
	workers []*worker
	wg      sync.WaitGroup
	sec     section // the current section, written only while mu is held

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
	mmb    matmulBackwardJob
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
	p := runtime.GOMAXPROCS(0)
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

// dispatch runs job over [0, n) on p participants (the calling goroutine
// and p-1 workers), in chunks whose boundaries are multiples of grain,
// and releases pool.mu.
func (wp *workerPool) dispatch(p, n, grain int, job rangeJob) {
	for len(wp.workers) < p-1 {
		w := &worker{tasks: make(chan *section)}
		wp.workers = append(wp.workers, w)
		go w.loop(&wp.wg)
	}
	units := (n + grain - 1) / grain
	s := &wp.sec
	s.job, s.n, s.grain, s.units = job, n, grain, units
	s.chunks = min(units, p*chunksPerWorker)
	s.next.Store(0)
	wp.wg.Add(p - 1)
	// Even if the caller's own chunk panics, wait for the workers (they
	// write into the caller's buffers) and release the pool; then pass on
	// a worker's panic, unless the caller's own is already under way.
	defer func() {
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
	for _, w := range wp.workers[:p-1] {
		w.tasks <- s
	}
	s.participate()
}

// worker is one goroutine of the pool and the record of its last
// section's panic (written by the worker before wg.Done, read and
// cleared by dispatch after wg.Wait).
type worker struct {
	tasks  chan *section
	failed *workerPanic
}

func (w *worker) loop(wg *sync.WaitGroup) {
	for s := range w.tasks {
		w.run(s, wg)
	}
}

// run takes part in a section. A panic is recovered here, with the
// worker's stack, for dispatch to raise on the caller's goroutine (the
// chunks this worker would have claimed next are left to the others);
// wg.Done comes last, so dispatch sees the record.
func (w *worker) run(s *section, wg *sync.WaitGroup) {
	defer func() {
		if v := recover(); v != nil {
			w.failed = &workerPanic{value: v, stack: debug.Stack()}
		}
		wg.Done()
	}()
	s.participate()
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
	if j.init && gemmNNInitBlocks(j.c[lo*j.ldc:], j.ldc, j.bias, j.a[lo*j.ai:], j.ai, j.ak, j.b, j.ldb, hi-lo, j.n, j.k) {
		// The kernels started the chains from the bias themselves.
		j.post(lo, hi)
		return
	}
	if j.init {
		for i := lo; i < hi; i++ {
			row := j.c[i*j.ldc : i*j.ldc+j.n]
			if j.bias != nil {
				copy(row, j.bias)
			} else {
				clear(row)
			}
		}
	}
	gemmNN(j.c[lo*j.ldc:], j.ldc, j.a[lo*j.ai:], j.ai, j.ak, j.b, j.ldb, hi-lo, j.n, j.k)
	j.post(lo, hi)
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

// gemmNTJob splits gemmNT over the rows of C.
type gemmNTJob struct {
	c    []float64
	ldc  int
	a    []float64
	lda  int
	b    []float64
	ldb  int
	n, k int
}

func (j *gemmNTJob) run(lo, hi int) {
	gemmNT(j.c[lo*j.ldc:], j.ldc, j.a[lo*j.lda:], j.lda, j.b, j.ldb, hi-lo, j.n, j.k)
}

// gemmNNParallel is gemmNN with the rows of C spread over the workers.
func gemmNNParallel(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	runGemmNN(gemmNNJob{c: c, ldc: ldc, a: a, ai: ai, ak: ak, b: b, ldb: ldb, n: N, k: K}, M)
}

// gemmNNParallelInit is gemmNNParallel on a C whose M rows are first set
// to bias (N wide), or to zero when bias is nil.
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
		gemmNT(c, ldc, a, lda, b, ldb, M, N, K)
		return
	}
	pool.nt = gemmNTJob{c, ldc, a, lda, b, ldb, N, K}
	pool.dispatch(p, M, 4, &pool.nt)
}
