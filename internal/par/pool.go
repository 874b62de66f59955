package par

// This file holds the worker pool: regions, chunks, workers, and the
// passing of a worker's panic to the section's caller.

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// section is the pool's view of one running section: job over [0, n) in
// units of grain, split into regions contiguous regions, region r the
// units [bound[r], bound[r+1]), its chunks claimed through next[r].
type section struct {
	job                      Job
	n, grain, units, regions int
	next                     [maxRegions]paddedCounter
	bound                    [maxRegions + 1]int
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

// setRegions splits the units evenly into the regions.
func (s *section) setRegions() {
	for r := range s.regions + 1 {
		s.bound[r] = r * s.units / s.regions
	}
}

// chunksPerRegion is how many chunks a region is cut into: more balance
// the load better, fewer cost fewer claims and keep the kernels' blocks
// big.
const chunksPerRegion = 4

// participate claims and runs chunks until none is left: participant k
// (0 for the caller, worker i is i+1) starts in its own region and then
// helps the next ones.
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
				s.job.Run(lo, hi)
			}
		}
	}
}

// chunk returns the units [u0, u1) of region r's chunk c, or ok false when
// the region has no chunk c. A region of n units is cut at
// n·(1 − ((q−c)/q)²) for q = min(n, chunksPerRegion): chunks shrink
// linearly, from about 2/q of the region down to a sliver (or nothing,
// skipped), so the big ones keep the claims few and the small ones let
// the participants reach the barrier together.
func (s *section) chunk(r, c int) (u0, u1 int, ok bool) {
	r0, r1 := s.bound[r], s.bound[r+1]
	n := r1 - r0
	q := min(n, chunksPerRegion)
	if c >= q {
		return 0, 0, false
	}
	cut := func(c int) int {
		left := int64(q - c)
		return r0 + n - int(int64(n)*left*left/int64(q*q))
	}
	return cut(c), cut(c + 1), true
}

// workerPool is the package's one pool of workers.
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
}

var pool workerPool

// MinParallelWork is the total cost below which a section runs on the
// calling goroutine: waking a worker costs a few microseconds, about this
// many multiply-adds. Tests may lower it (restoring it after).
var MinParallelWork = 1 << 16

// acquire decides whether a section of the given units and total cost is
// spread over the workers; if it returns a count p > 1, the caller holds
// pool.mu and must call dispatch.
func (wp *workerPool) acquire(units, total int) int {
	p := min(runtime.GOMAXPROCS(0), units, 1<<16-1) // gen has 16 bits for it
	if p <= 1 || total < MinParallelWork || !wp.mu.TryLock() {
		// A concurrent or nested section simply runs serially: same bits.
		return 1
	}
	return p
}

// spinTime is how long a worker polls for the next section, and the
// caller for the workers' end, before blocking: sections of a training
// step follow each other within microseconds, and waking a parked thread
// costs tens of microseconds on a virtual machine, while a longer pause
// (the end of training, a prompt being typed) still parks everything.
const spinTime = 200 * time.Microsecond

// dispatch runs job over [0, n) on p participants (the calling goroutine
// and workers 0 to p-2), in chunks whose boundaries are multiples of
// grain, and releases pool.mu.
func (wp *workerPool) dispatch(p, n, grain int, job Job) {
	for len(wp.workers) < p-1 {
		w := &worker{index: len(wp.workers), wake: make(chan struct{}, 1)}
		wp.workers = append(wp.workers, w)
		go w.loop(wp, wp.gen.Load())
	}
	s := &wp.sec
	s.job, s.n, s.grain, s.units = job, n, grain, (n+grain-1)/grain
	s.regions = min(p, maxRegions)
	s.setRegions()
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
		var wpanic *WorkerPanic
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
	failed *WorkerPanic
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

// next returns the next generation after seen: polled for spinTime, then
// waited for parked. parked is set before the last look at the generation
// and dispatch reads it after publishing, so either this worker sees the
// new generation or dispatch sees it parked and leaves a token (a stale
// token only costs one more look).
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
// chunks this worker would have claimed next are left to the others); the
// counts come last, so dispatch sees the record.
func (w *worker) run(s *section, wp *workerPool) {
	defer func() {
		if v := recover(); v != nil {
			w.failed = &WorkerPanic{Value: v, Stack: debug.Stack()}
			wp.aborted.Store(true)
		}
		wp.pending.Add(-1)
		wp.wg.Done()
	}()
	s.participate(w.index + 1)
}

// WorkerPanic is what the caller of a section panics with when a job
// panicked on a worker: the job's panic value and the worker's stack,
// which the caller's own stack trace would not show.
type WorkerPanic struct {
	Value any
	Stack []byte
}

func (p *WorkerPanic) Error() string {
	return fmt.Sprintf("panic in a parallel worker: %v\n\nworker goroutine stack:\n%s", p.Value, p.Stack)
}

// Unwrap returns the worker's panic value when it was an error (a
// runtime.Error for an index out of range, say).
func (p *WorkerPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
