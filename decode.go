package minigpt

// This file holds the decoder: the KV cache slots of the sequences being
// generated and the forward pass that advances them together. Which rows
// a sequence needs at a step (its prompt, one new position, or the whole
// window once it outgrew the block) is its request's business
// (request.go); the layer sequence is the model's one (forward.go).

import (
	"math/rand/v2"
	"sync"
)

// decoder runs the rows its sequences ask for through one forward pass
// per step, each sequence with its own slot of the KV cache. Rows never
// mix, so a sequence's logits are the bits a pass over it alone gives.
type decoder struct {
	cfg  Config
	kv   *kvCache
	a    *activations // the pass's buffers, grown to the most rows a step has needed
	seqs []rowSeq     // this step's pass
	rows int          // rows in this step's pass
}

func newDecoder(c Config, slots int) *decoder {
	return &decoder{cfg: c, kv: newKVCache(c, slots)}
}

// begin starts a step's pass.
func (d *decoder) begin() { d.seqs, d.rows = d.seqs[:0], 0 }

// add adds one sequence's rows to the step's pass and returns its index.
func (d *decoder) add(s rowSeq) int {
	d.seqs = append(d.seqs, s)
	d.rows += s.t1 - s.t0
	return len(d.seqs) - 1
}

// run runs the step's pass.
func (d *decoder) run(m *Model) {
	if len(d.seqs) == 0 {
		return
	}
	if d.a == nil || d.a.N < d.rows {
		d.a = newActivations(d.cfg, d.rows, false)
	}
	m.forward(d.a, d.kv, d.seqs, nil, false)
}

// logits returns the logits of the last position of the step's sequence
// i (which must have asked for them), valid until the next step.
func (d *decoder) logits(i int) []float64 {
	s, V := &d.seqs[i], d.cfg.VocabSize
	r := s.outRow + s.t1 - 1 - s.out0
	return d.a.logits[r*V : (r+1)*V]
}

// reqRow is one sample (or beam): a sequence and its cache slot.
type reqRow struct {
	slot   int
	seq    []int // prompt + generated tokens
	spare  []int // beam search's buffer for the next step's sequence
	cached int   // positions of the sequence's window in the cache
	state  seqState
	rand   *rand.Rand
	done   bool
	pass   int       // the decoder index of the row's pass this step, or -1
	att    []float64 // with TraceAttention: the pass's attention weights, (L, NH, T)
	window int       // the length of the window of the row's last pass
}

// serial is what a call needs to run its request alone: a decoder with a
// cache slot per row, the sampler, the rows' buffers and the trace
// buffer. It never lives in the Model, so that calls on one Model may run
// concurrently; it is pooled per (config, rows), so that a call allocates
// it only when no earlier call left one behind, and a token allocates
// nothing.
type serial struct {
	key   serialKey
	dec   *decoder
	s     sampler
	rows  []reqRow
	slots []int
	step  Step
}

type serialKey struct {
	cfg  Config
	rows int
}

var serialPools sync.Map // serialKey -> *sync.Pool of *serial

// getSerial returns the scratch of a call of R rows on models of config c.
func getSerial(c Config, R int) *serial {
	key := serialKey{c, R}
	p, ok := serialPools.Load(key)
	if !ok {
		p, _ = serialPools.LoadOrStore(key, &sync.Pool{})
	}
	sc, _ := p.(*sync.Pool).Get().(*serial)
	if sc == nil {
		V := c.VocabSize
		sc = &serial{key: key, dec: newDecoder(c, R), s: newSampler(V), rows: make([]reqRow, R), slots: make([]int, R)}
		for b := range sc.rows {
			sc.rows[b].state = seqState{seen: make([]bool, V), counts: make([]int32, V)}
			sc.slots[b] = b
		}
	}
	return sc
}

func putSerial(sc *serial) {
	p, _ := serialPools.Load(sc.key)
	p.(*sync.Pool).Put(sc)
}
