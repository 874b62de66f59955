package server

// This file owns admission: the generation slots, the in-flight byte
// budget and the bounded queue in front of them.

import (
	"context"
	"errors"
	"sync"
	"time"
)

// slots is a fixed number of generation slots and a budget of in-flight
// bytes, with a bounded queue in front of them. A request takes a slot and
// its size at once if both are free and nobody waits, otherwise waits in
// the queue if there is room (first come, first served), otherwise is
// refused: the server never holds more than slots+queue requests, nor
// more than the budget's worth of responses, whatever the load.
type slots struct {
	mu       sync.Mutex
	n        int   // slots
	queueCap int   // waiting requests at most
	budget   int64 // bytes
	inUse    int   // slots taken
	used     int64 // bytes taken
	waiting  []*waiter
}

type waiter struct {
	size    int64
	granted chan struct{} // closed when the slot and the bytes are the waiter's
}

var (
	errQueueFull    = errors.New("every generation slot is busy (or the in-flight budget is taken) and the queue is full")
	errQueueTimeout = errors.New("timed out waiting for a generation slot (or room in the in-flight budget)")
	errClosed       = errors.New("the server is shutting down")
)

func newSlots(n, queue int, budget int64) *slots {
	return &slots{n: n, queueCap: queue, budget: budget}
}

// acquire takes a slot and size bytes of the budget, waiting at most
// timeout in the queue. It returns errQueueFull, errQueueTimeout, errClosed
// (closed is done) or ctx's error if it gets none; otherwise the caller
// must call releaseSlot and releaseBytes(size), in either order.
func (s *slots) acquire(ctx, closed context.Context, size int64, timeout time.Duration) error {
	s.mu.Lock()
	if len(s.waiting) == 0 && s.fits(size) {
		s.take(size)
		s.mu.Unlock()
		return nil
	}
	if len(s.waiting) >= s.queueCap {
		s.mu.Unlock()
		return errQueueFull
	}
	w := &waiter{size: size, granted: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed.Done():
		err = errClosed
	case <-t.C:
		err = errQueueTimeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		// Granted while giving up: hand it on.
		s.inUse--
		s.used -= size
		s.grant()
	default:
		for i, x := range s.waiting {
			if x == w {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				break
			}
		}
		s.grant() // a large request that left may unblock smaller ones
	}
	return err
}

func (s *slots) fits(size int64) bool { return s.inUse < s.n && s.used+size <= s.budget }

func (s *slots) take(size int64) {
	s.inUse++
	s.used += size
}

// grant gives slots to the waiters at the head of the queue while they
// fit (s.mu held).
func (s *slots) grant() {
	for len(s.waiting) > 0 && s.fits(s.waiting[0].size) {
		w := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.take(w.size)
		close(w.granted)
	}
}

// releaseSlot gives a slot back (the request no longer generates).
func (s *slots) releaseSlot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse--
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

func (s *slots) state() (busy, queued int, used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse, len(s.waiting), s.used
}

func (s *slots) busy() int {
	b, _, _ := s.state()
	return b
}

func (s *slots) queued() int {
	_, q, _ := s.state()
	return q
}
