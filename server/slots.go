package server

// This file owns admission: each model's batch rows, the in-flight byte
// budget and the bounded queue in front of them.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// slots admits requests to the models' batches: each model has a fixed
// number of rows (Limits.Slots, the most sequences its batch decodes
// together), a request takes one per sample or beam and its size bound
// of a server-wide byte budget, and a request that cannot have both at
// once waits in a bounded queue or is refused. The server never holds
// more than the queue's requests waiting, more rows than the batches
// have, nor more than the budget's worth of responses, whatever the load.
//
// The queue is served in arrival order: a request is granted as soon as
// its rows and its bytes are free, provided that no request that arrived
// before it still waits for the same model's rows or for bytes it would
// take (the sizes of the earlier waiters are held back from the budget).
// So a request of another model, or a small one, may start before an
// earlier request that waits, but never delays it; no request waits for
// one that came after it.
type slots struct {
	mu       sync.Mutex
	rows     int   // rows per model
	taken    int   // rows taken, every model's
	queueCap int   // waiting requests at most
	budget   int64 // bytes
	used     int64 // bytes taken
	waiting  []*waiter
	pass     uint64 // grant's passes, counted: see modelRows.blocked
}

// modelRows is one model's part of the admission, kept with the model
// (fine-tuned models come and go), guarded by slots.mu.
type modelRows struct {
	busy    int    // rows taken
	blocked uint64 // the grant pass in which an earlier waiter wanted them
}

type waiter struct {
	model   *modelRows
	rows    int
	size    int64
	granted chan struct{} // closed when the rows and the bytes are the waiter's
}

var (
	errQueueFull    = errors.New("every batch row is taken (or the in-flight budget is) and the queue is full")
	errQueueTimeout = errors.New("timed out waiting for batch rows (or room in the in-flight budget)")
	errClosed       = errors.New("the server is shutting down")
)

// newSlots returns the admission of models of rows rows each.
func newSlots(rows, queue int, budget int64) *slots {
	return &slots{rows: rows, queueCap: queue, budget: budget}
}

// acquire takes rows rows of model's batch and size bytes of the budget,
// waiting at most timeout in the queue. It returns errQueueFull,
// errQueueTimeout, errClosed (closed is done) or ctx's error if it gets
// none; otherwise the caller must call releaseRows and releaseBytes, in
// either order. It returns how long the request waited.
func (s *slots) acquire(ctx, closed context.Context, model *modelRows, rows int, size int64, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	w := &waiter{model: model, rows: rows, size: size, granted: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	s.grant()
	if granted(w) {
		s.mu.Unlock()
		return 0, nil
	}
	if len(s.waiting) > s.queueCap {
		s.remove(w) // the last: nobody after it was held back for it
		s.mu.Unlock()
		return 0, errQueueFull
	}
	s.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return time.Since(start), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed.Done():
		err = errClosed
	case <-t.C:
		err = errQueueTimeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if granted(w) {
		// Granted while giving up: hand it on.
		model.busy -= rows
		s.taken -= rows
		s.used -= size
	} else {
		s.remove(w)
	}
	s.grant() // a request that left may unblock the ones after it
	return time.Since(start), err
}

func granted(w *waiter) bool {
	select {
	case <-w.granted:
		return true
	default:
		return false
	}
}

// remove takes w out of the queue (s.mu held).
func (s *slots) remove(w *waiter) {
	if i := slices.Index(s.waiting, w); i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
}

// grant gives the waiters, in arrival order, their rows and bytes when
// both are free and no earlier waiter wants them (s.mu held).
func (s *slots) grant() {
	s.pass++
	var held int64 // bytes the earlier waiters still wait for
	kept := s.waiting[:0]
	for _, w := range s.waiting {
		m := w.model
		if m.blocked != s.pass && m.busy+w.rows <= s.rows && s.used+held+w.size <= s.budget {
			m.busy += w.rows
			s.taken += w.rows
			s.used += w.size
			close(w.granted)
			continue
		}
		m.blocked = s.pass
		held += w.size
		kept = append(kept, w)
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept
}

// releaseRows gives rows rows of model's batch back (the request no
// longer generates).
func (s *slots) releaseRows(model *modelRows, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	model.busy -= rows
	s.taken -= rows
	s.grant()
}

// releaseBytes gives size bytes of the budget back (the response is
// written).
func (s *slots) releaseBytes(size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used -= size
	s.grant()
}

// state returns the rows taken (every model's), the requests waiting and
// the bytes taken.
func (s *slots) state() (busy, queued int, used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken, len(s.waiting), s.used
}

func (s *slots) busy() int {
	b, _, _ := s.state()
	return b
}

func (s *slots) queued() int {
	_, q, _ := s.state()
	return q
}
