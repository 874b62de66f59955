package server

import (
	"context"
	"errors"
	"time"
)

// slots is a fixed number of generation slots with a bounded queue in
// front of them. A request takes a slot at once if one is free, otherwise
// waits in the queue if there is room, otherwise is refused: the server
// never holds more than slots+queue requests' worth of generation state,
// whatever the load.
type slots struct {
	free  chan struct{} // one value per busy slot (a counting semaphore)
	queue chan struct{} // one value per waiting request
}

var (
	errQueueFull    = errors.New("every generation slot is busy and the queue is full")
	errQueueTimeout = errors.New("timed out waiting for a generation slot")
)

func newSlots(n, queue int) *slots {
	return &slots{free: make(chan struct{}, n), queue: make(chan struct{}, queue)}
}

// acquire takes a slot, waiting at most timeout in the queue. It returns
// errQueueFull, errQueueTimeout or ctx's error if it gets none; otherwise
// the caller must call release.
func (s *slots) acquire(ctx context.Context, timeout time.Duration) error {
	select {
	case s.free <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.queue <- struct{}{}:
	default:
		return errQueueFull
	}
	defer func() { <-s.queue }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s.free <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errQueueTimeout
	}
}

func (s *slots) release() { <-s.free }

func (s *slots) busy() int   { return len(s.free) }
func (s *slots) queued() int { return len(s.queue) }
