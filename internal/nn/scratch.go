package nn

// This file holds the scratch buffers jobs pack operands into.

import "sync/atomic"

// scratchPool lends float64 buffers to jobs running on any number of
// goroutines at once, without a lock and, once every buffer has grown to
// what its users ask, without allocating: a buffer is taken from a slot
// and put back into a free one, and only a request larger than the
// buffer found (or one with every slot empty) allocates.
type scratchPool struct {
	slots [16]atomic.Pointer[[]float64]
}

// scratch is the package's one pool.
var scratch scratchPool

// get returns a buffer of at least n floats, its length n, for the
// caller alone until it puts it back.
func (p *scratchPool) get(n int) *[]float64 {
	for i := range p.slots {
		if b := p.slots[i].Swap(nil); b != nil {
			if cap(*b) >= n {
				*b = (*b)[:n]
				return b
			}
			// Too small for this use: replaced by a larger one below,
			// which later calls of this size find.
			break
		}
	}
	b := make([]float64, n)
	return &b
}

// put returns b to the pool (dropped if every slot is taken).
func (p *scratchPool) put(b *[]float64) {
	for i := range p.slots {
		if p.slots[i].CompareAndSwap(nil, b) {
			return
		}
	}
}
