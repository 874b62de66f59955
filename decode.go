package minigpt

// This file holds the decoder, which keeps the KV caches of the sequences
// being generated: it fills a cache from a prompt, extends it one
// position per token, recomputes the window once a sequence outgrows the
// block, and reorders the caches for beam search. The forward pass is
// the model's one (forward.go).

import (
	"slices"
	"sync"
)

// decoder runs B sequences through the model, one new position per step
// for all of them together (one forward pass over their new rows), each
// sequence with its own slot of the KV cache. Rows never mix, so sequence
// b's logits are the same bits as a one-sequence run's.
//
// While a window grows, position t's keys and values are appended to its
// cache; once a sequence is longer than BlockSize every position moves at
// every step, every cached key is stale, and the whole window is
// recomputed (as the lessons' ids[-block_size:] does).
type decoder struct {
	cfg    Config
	B      int
	kv     *kvCache
	swap   *kvCache     // beam search's reordering buffer, made when first needed
	a      *activations // the pass's buffers, grown to the most rows a step has needed
	cached []int        // (B) positions of each slot's window in the cache; 0 = none
	parent []int        // (B) reorder's scratch
	seqs   []rowSeq     // this step's pass
	from   []int        // (B) the sequence whose cache and logits b copies this step, or -1
	logits []float64    // (B, V)
}

func newDecoder(c Config, B int) *decoder {
	return &decoder{cfg: c, B: B, kv: newKVCache(c, B), cached: make([]int, B), parent: make([]int, B),
		seqs: make([]rowSeq, 0, B), from: make([]int, B), logits: make([]float64, B*c.VocabSize)}
}

// reset forgets every cached position.
func (d *decoder) reset() { clear(d.cached) }

// next returns the (B, V) logits of the token after each sequence (the
// last position of each window seqs[b][max(0, len-BlockSize):]).
func (d *decoder) next(m *Model, seqs [][]int, noCache bool) []float64 {
	T, V := d.cfg.BlockSize, d.cfg.VocabSize
	d.seqs = d.seqs[:0]
	rows := 0
	for b, seq := range seqs {
		n := len(seq)
		d.from[b] = -1
		switch {
		case !noCache && n <= T && d.cached[b] > 0 && d.cached[b] == n-1:
			// The window only grew: compute the new row from the cache.
			d.seqs = append(d.seqs, rowSeq{slot: b, ids: seq[n-1:], t0: n - 1, t1: n, out0: n - 1})
			d.cached[b] = n
		case n > T || noCache:
			// The window slid (or no cache is wanted): recompute it.
			w := seq[max(0, n-T):]
			d.seqs = append(d.seqs, rowSeq{slot: b, ids: w, t0: 0, t1: len(w), out0: len(w) - 1})
			d.cached[b] = 0
		default:
			// A prompt: fill the cache. Sequences with the same prompt
			// (the samples of one call) are computed once.
			d.cached[b] = n
			if e := d.samePrompt(seqs, b); e >= 0 {
				d.from[b] = e
				continue
			}
			d.seqs = append(d.seqs, rowSeq{slot: b, ids: seq, t0: 0, t1: n, out0: n - 1})
		}
		rows += d.seqs[len(d.seqs)-1].t1 - d.seqs[len(d.seqs)-1].t0
	}
	if d.a == nil || d.a.N < rows {
		d.a = newActivations(d.cfg, rows, false)
	}
	m.forward(d.a, d.kv, d.seqs, nil, false)
	for i, s := range d.seqs {
		copy(d.logits[s.slot*V:(s.slot+1)*V], d.a.logits[i*V:(i+1)*V])
	}
	for b, e := range d.from {
		if e >= 0 {
			d.kv.copySlot(b, e, d.cached[b])
			copy(d.logits[b*V:(b+1)*V], d.logits[e*V:(e+1)*V])
		}
	}
	return d.logits
}

// samePrompt returns an earlier sequence that fills the same prompt this
// step (a prompt the pass computes), or -1.
func (d *decoder) samePrompt(seqs [][]int, b int) int {
	for _, s := range d.seqs {
		if s.t0 == 0 && s.t1 == len(seqs[b]) && d.cached[s.slot] == s.t1 && slices.Equal(seqs[s.slot], seqs[b]) {
			return s.slot
		}
	}
	return -1
}

// reorder makes sequence b's cache a copy of sequence parents[b]'s (beam
// search: each beam continues one of the previous step's beams).
func (d *decoder) reorder(parents []int) {
	if d.swap == nil {
		d.swap = newKVCache(d.cfg, d.B)
	}
	for b, pb := range parents {
		if n := d.cached[pb]; n > 0 {
			for l := range d.cfg.Layers {
				copy(d.swap.rows(l, b, 0, n), d.kv.rows(l, pb, 0, n))
			}
		}
	}
	copy(d.parent, d.cached)
	for b, pb := range parents {
		d.cached[b] = d.parent[pb]
	}
	d.kv, d.swap = d.swap, d.kv
}

// scratch is everything one generating call needs besides the model:
// the decoder with its KV caches, the sampler's buffers and the
// sequences. It never lives in the Model, so that calls on one Model may
// run concurrently; it is pooled per (config, batch size), so that a call
// allocates it only when no earlier call left one behind, and a token
// allocates nothing.
type scratch struct {
	key    scratchKey
	dec    *decoder
	s      sampler
	seqs   [][]int    // (B) prompt + generated tokens
	states []seqState // (B)
	done   []bool     // (B) samples that ended at a stop string
	step   Step       // the trace buffer handed to OnStep
}

type scratchKey struct {
	cfg Config
	B   int
}

var scratchPools sync.Map // scratchKey -> *sync.Pool of *scratch

// getScratch returns scratch for B sequences of m's config, its decoder
// emptied (no cached position survives from an earlier call).
func getScratch(c Config, B int) *scratch {
	key := scratchKey{c, B}
	p, ok := scratchPools.Load(key)
	if !ok {
		p, _ = scratchPools.LoadOrStore(key, &sync.Pool{})
	}
	sc, _ := p.(*sync.Pool).Get().(*scratch)
	if sc == nil {
		V := c.VocabSize
		sc = &scratch{key: key, dec: newDecoder(c, B), s: newSampler(V),
			seqs: make([][]int, B), states: make([]seqState, B), done: make([]bool, B)}
		for b := range sc.states {
			sc.states[b] = seqState{seen: make([]bool, V), counts: make([]int32, V)}
		}
	}
	sc.dec.reset()
	return sc
}

func putScratch(sc *scratch) {
	p, _ := scratchPools.Load(sc.key)
	p.(*sync.Pool).Put(sc)
}
