package minigpt

// This file holds the decoder, which runs the rows of a step's sequences
// through one forward pass, and the KV cache that keeps each sequence's
// queries, keys and values between steps.

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
	m.forward(d.a, d.seqs, nil, false)
}

// logits returns the logits of the last position of the step's sequence
// i (which must have asked for them), valid until the next step.
func (d *decoder) logits(i int) []float64 {
	s, V := &d.seqs[i], d.cfg.VocabSize
	r := s.outRow + s.t1 - 1 - s.out0
	return d.a.logits[r*V : (r+1)*V]
}

// kvCache holds the queries, keys and values of every position of S
// sequence slots: (S, L, T, 3C), a slot's layers one after the other, so
// that a slot is one slice (rowSeq.cache). A slot's rows are the qkv rows
// of its positions, so attention reads its keys and values from here,
// whether a pass computed them or an earlier one did.
type kvCache struct {
	buf   []float64
	S, T  int
	C3, L int
}

func newKVCache(c Config, S int) *kvCache {
	C3, T := 3*c.EmbedDim, c.BlockSize
	return &kvCache{buf: make([]float64, S*c.Layers*T*C3), S: S, T: T, C3: C3, L: c.Layers}
}

// slot returns slot's (L, T, 3C) rows.
func (kv *kvCache) slot(slot int) []float64 {
	n := kv.L * kv.T * kv.C3
	return kv.buf[slot*n : (slot+1)*n : (slot+1)*n]
}

// rows returns slot's rows [t0, t1) at layer l.
func (kv *kvCache) rows(l, slot, t0, t1 int) []float64 {
	base := (slot*kv.L + l) * kv.T * kv.C3
	return kv.buf[base+t0*kv.C3 : base+t1*kv.C3]
}

// copySlot makes slot dst's first n positions a copy of slot src's, in
// every layer.
func (kv *kvCache) copySlot(dst, src, n int) {
	for l := range kv.L {
		copy(kv.rows(l, dst, 0, n), kv.rows(l, src, 0, n))
	}
}
