package par

// This file holds Halves: one sum over rows, run as two jobs a section
// places at its two ends.

import (
	"runtime"
	"sync/atomic"
)

// Halves runs a job whose every output is a chain over a batch's rows (a
// weight gradient, a column sum) as two jobs, one over each half of the
// rows: the second continues every chain from where the first left it,
// so the bits are those of the whole job. [Section.AddHalves] puts the
// first at the head of the section's units and the second at their tail,
// so at two participants each half runs on the core whose earlier
// sections wrote its rows. Items are the same blocks of outputs in both
// jobs; the second waits for the first item by item.
//
// The zero value is ready; a Halves allocates only when its item count
// outgrows every earlier use.
type Halves struct {
	first, second half
	// AddSum's two views of its sum.
	firstRows, secondRows rowRange
}

// half is one of Halves' two jobs.
type half struct {
	job   Job
	done  []atomic.Bool // the first's marks: item i holds the first rows' chains
	after *half         // the second's first half
}

// AddHalves adds first and second, jobs of items items each over the two
// halves of the rows, as h: first at the head of the section's units,
// second at their tail. Serially, first runs before every other job and
// second after every other.
func (s *Section) AddHalves(h *Halves, first, second Job, items, grain, cost int) {
	h.set(first, second, items)
	s.add(&h.first, items, grain, cost, kindFirst)
	s.add(&h.second, items, grain, cost, kindLast)
}

func (h *Halves) set(first, second Job, items int) {
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

func (h *half) Run(lo, hi int) {
	for lo < hi {
		end := hi
		if h.after != nil {
			if end = h.after.ready(lo, hi); end < 0 {
				return // another participant panicked: the section is lost
			}
		}
		h.job.Run(lo, end)
		if h.after == nil { // the first half: mark the items done
			for i := lo; i < end; i++ {
				h.done[i].Store(true)
			}
		}
		lo = end
	}
}

// ready waits until the first half's item lo is done and returns the end
// of the run of done items from lo (at most hi), or -1 if the section was
// aborted (a participant panicked, and may have been the one to do item
// lo).
//
// The wait cannot deadlock: every first half's units come before every
// other unit of the section, and a participant runs a chunk's pieces in
// unit order, so it finishes the first halves' pieces it claimed before it
// waits in a second half's; the participant that owns the first region
// claims its first pieces before anything else, and no one claims a
// second half's piece before every earlier unit of its region is claimed.
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
