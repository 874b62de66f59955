package minigpt

import (
	"slices"
	"sync"
)

// decoder runs B sequences of equal length through the model, one new
// position per step for all of them together (one batch of B rows through
// every layer, on the worker pool), each sequence with its own KV cache.
// Every row is computed by the same layer functions, in the same order,
// as Model.forward computes it for one sequence, so sequence b's logits
// are the same bits as a single-sequence run's: rows never mix.
//
// While the window grows, position t's keys and values are appended to
// kv; once the sequences are longer than BlockSize every position moves
// at every step, every cached key is stale, and the whole window is
// recomputed (as the seed's ids[-block_size:] does).
type decoder struct {
	cfg Config
	B   int
	n   int // valid cached positions of every sequence; 0 = none

	kv     []float64    // (L, B, T, 3C) queries, keys and values: the KV cache
	kvSwap []float64    // (L, B, T, 3C) beam search's reordering buffer
	att    []float64    // (B, NH, T, T) attention weights of one layer
	attOut []float64    // (B, T, C) attention output of one layer
	x      []float64    // (B, C) residual stream of the new rows
	ln     []float64    // (B, C)
	mean   []float64    // (B)
	rstd   []float64    // (B)
	qkv    []float64    // (B, 3C)
	heads  []float64    // (B, C) the new rows of attOut, gathered
	resid2 []float64    // (B, C)
	fcAct  []float64    // (B, 4C) relu(ln·fc + b), computed in place
	resid3 []float64    // (B, C)
	logits []float64    // (B, V)
	one    *activations // (1, T) for the prompt and for B = 1 rebuilds
	full   *activations // (B, T), one layer, for B > 1 rebuilds, made when first needed
	window []int        // (B, T) the windows of a rebuild
}

func newDecoder(c Config, B int) *decoder {
	C, L, NH, V, T := c.EmbedDim, c.Layers, c.Heads, c.VocabSize, c.BlockSize
	f := func(n int) []float64 { return make([]float64, n) }
	return &decoder{
		cfg: c, B: B,
		kv: f(L * B * T * 3 * C), att: f(B * NH * T * T), attOut: f(B * T * C),
		x: f(B * C), ln: f(B * C), mean: f(B), rstd: f(B), qkv: f(B * 3 * C), heads: f(B * C),
		resid2: f(B * C), fcAct: f(B * 4 * C), resid3: f(B * C),
		logits: f(B * V),
		one:    newActivations(c, 1, T),
	}
}

// next returns the (B, V) logits of the token after each sequence (the
// last position of each window seqs[b][max(0, len-BlockSize):]). All
// sequences must have the same length.
func (d *decoder) next(m *Model, seqs [][]int, noCache bool) []float64 {
	bs := d.cfg.BlockSize
	n := len(seqs[0])
	switch {
	case !noCache && d.n > 0 && n <= bs && d.n == n-1:
		// Every window only grew: compute the new rows from the cache.
		d.step(m, seqs, n-1)
		d.n = n
	case n > bs || noCache:
		d.rebuild(m, seqs)
		d.n = 0
	default:
		d.fill(m, seqs)
		d.n = n
	}
	return d.logits
}

// fill computes the prompt (every window [0, n)) and caches its keys and
// values. Sequences with the same prompt are computed once.
func (d *decoder) fill(m *Model, seqs [][]int) {
	c := d.cfg
	T, C3, V, n := c.BlockSize, 3*c.EmbedDim, c.VocabSize, len(seqs[0])
	for b, seq := range seqs {
		if b == 0 || !slices.Equal(seq, seqs[0]) {
			m.forward(d.one, seq, nil, 0, n, 0)
		}
		for l := range c.Layers {
			copy(d.kv[(l*d.B+b)*T*C3:][:n*C3], d.one.qkv[l*T*C3:][:n*C3])
		}
		copy(d.logits[b*V:(b+1)*V], d.one.logits[(n-1)*V:n*V])
	}
}

// rebuild recomputes every window from scratch (no cache).
func (d *decoder) rebuild(m *Model, seqs [][]int) {
	c := d.cfg
	T, V := c.BlockSize, c.VocabSize
	n := len(seqs[0])
	start := max(0, n-T)
	t1 := n - start
	if d.B == 1 || t1 < T {
		// One sequence (or windows shorter than the block, which only
		// noCache asks for): one forward pass each, and only the last
		// row goes past the keys and values.
		for b, seq := range seqs {
			m.forward(d.one, seq[start:], nil, 0, t1, t1-1)
			copy(d.logits[b*V:(b+1)*V], d.one.logits[(t1-1)*V:t1*V])
		}
		return
	}
	if d.full == nil {
		// One layer's buffers serve every layer: nothing is kept for a
		// backward pass, and a layer's input (the previous resid3) is
		// consumed before its own resid3 is written.
		oneLayer := c
		oneLayer.Layers = 1
		d.full = newActivations(oneLayer, d.B, T)
		d.window = make([]int, d.B*T)
	}
	for b, seq := range seqs {
		copy(d.window[b*T:(b+1)*T], seq[start:])
	}
	d.forwardWindows(m)
}

// forwardWindows is Model.forward over the B full windows in d.window
// with outFrom = T-1: every layer but the last runs on all B·T rows;
// the last computes every row's keys and values and then, like step, only
// each sequence's last row.
func (d *decoder) forwardWindows(m *Model) {
	c, p, a := d.cfg, m.p, d.full
	B, T, C, L, NH := d.B, c.BlockSize, c.EmbedDim, c.Layers, c.Heads
	BT, C3 := B*T, 3*c.EmbedDim
	layer := func(buf []float64, _, width int) []float64 { return buf[:BT*width] } // every layer in the same buffers
	encoderForward(a.encoded, d.window, p.tokenEmbedding, p.positionEmbedding, B, T, 0, T, C)
	in := a.encoded
	for l := 0; l < L; l++ {
		ln1, qkv := layer(a.ln1, l, C), layer(a.qkv, l, C3)
		layernormForward(ln1, layer(a.ln1Mean, l, 1), layer(a.ln1Rstd, l, 1), in, p.ln1Gain[l*C:], p.ln1Bias[l*C:], BT, C)
		matmulForward(qkv, ln1, p.qkvWeight[l*C*C3:], nil, BT, C, C3)
		if l == L-1 {
			attentionForward(d.attOut, d.att, qkv, B, T, T-1, T, C, NH)
			for b := range B {
				copy(d.heads[b*C:(b+1)*C], d.attOut[(b*T+T-1)*C:(b*T+T)*C])
				copy(d.x[b*C:(b+1)*C], in[(b*T+T-1)*C:(b*T+T)*C])
			}
			d.tail(m, l, d.x)
			d.head(m, d.resid3)
			return
		}
		attnOut, resid2 := layer(a.attnOut, l, C), layer(a.resid2, l, C)
		ln2, fcAct, resid3 := layer(a.ln2, l, C), layer(a.fcAct, l, 4*C), layer(a.resid3, l, C)
		attentionForward(attnOut, layer(a.att, l, NH*T), qkv, B, T, 0, T, C, NH)
		matmulForward(resid2, attnOut, p.attnProjWeight[l*C*C:], nil, BT, C, C)
		residualForward(resid2, in, resid2)
		layernormForward(ln2, layer(a.ln2Mean, l, 1), layer(a.ln2Rstd, l, 1), resid2, p.ln2Gain[l*C:], p.ln2Bias[l*C:], BT, C)
		matmulForward(fcAct, ln2, p.fcWeight[l*C*4*C:], p.fcBias[l*4*C:], BT, C, 4*C)
		reluForward(fcAct, fcAct)
		matmulForward(resid3, fcAct, p.fcProjWeight[l*4*C*C:], p.fcProjBias[l*C:], BT, 4*C, C)
		residualForward(resid3, resid2, resid3)
		in = resid3
	}
}

// step computes position t of every sequence from the cached positions
// [0, t): Model.forward's layers, one row per sequence.
func (d *decoder) step(m *Model, seqs [][]int, t int) {
	c, p := d.cfg, m.p
	B, T, C, L, NH := d.B, c.BlockSize, c.EmbedDim, c.Layers, c.Heads
	C3 := 3 * C
	for b, seq := range seqs {
		// encoded = wte[id] + wpe[t]
		o, e, pe := d.x[b*C:(b+1)*C], p.tokenEmbedding[seq[t]*C:][:C], p.positionEmbedding[t*C:][:C]
		for i := range o {
			o[i] = e[i] + pe[i]
		}
	}
	in := d.x
	for l := 0; l < L; l++ {
		layernormForward(d.ln, d.mean, d.rstd, in, p.ln1Gain[l*C:], p.ln1Bias[l*C:], B, C)
		matmulForward(d.qkv, d.ln, p.qkvWeight[l*C*C3:], nil, B, C, C3)
		kv := d.kv[l*B*T*C3 : (l+1)*B*T*C3]
		for b := range B {
			copy(kv[(b*T+t)*C3:(b*T+t+1)*C3], d.qkv[b*C3:(b+1)*C3])
		}
		attentionForward(d.attOut, d.att, kv, B, T, t, t+1, C, NH)
		for b := range B {
			copy(d.heads[b*C:(b+1)*C], d.attOut[(b*T+t)*C:(b*T+t+1)*C])
		}
		d.tail(m, l, in)
		in = d.resid3
	}
	d.head(m, in)
}

// tail finishes layer l for the B new rows, whose attention heads are in
// d.heads and whose residual input is in: projection, residual,
// feed-forward network, residual into d.resid3.
func (d *decoder) tail(m *Model, l int, in []float64) {
	c, p := d.cfg, m.p
	B, C := d.B, c.EmbedDim
	matmulForward(d.resid2, d.heads, p.attnProjWeight[l*C*C:], nil, B, C, C)
	residualForward(d.resid2, in, d.resid2)
	layernormForward(d.ln, d.mean, d.rstd, d.resid2, p.ln2Gain[l*C:], p.ln2Bias[l*C:], B, C)
	matmulForward(d.fcAct, d.ln, p.fcWeight[l*C*4*C:], p.fcBias[l*4*C:], B, C, 4*C)
	reluForward(d.fcAct, d.fcAct)
	matmulForward(d.resid3, d.fcAct, p.fcProjWeight[l*4*C*C:], p.fcProjBias[l*C:], B, 4*C, C)
	residualForward(d.resid3, d.resid2, d.resid3)
}

// head: logits = layernorm(x)·head + bias (or ·wteᵀ when tied), B rows.
func (d *decoder) head(m *Model, x []float64) {
	c, p := d.cfg, m.p
	B, C, V := d.B, c.EmbedDim, c.VocabSize
	layernormForward(d.ln, d.mean, d.rstd, x, p.lnfGain, p.lnfBias, B, C)
	if c.TiedHead {
		clear(d.logits)
		gemmNTParallel(d.logits, V, d.ln, C, p.tokenEmbedding, C, B, V, C)
	} else {
		matmulForward(d.logits, d.ln, p.headWeight, p.headBias, B, C, V)
	}
}

// reorder makes sequence b's cache a copy of sequence parents[b]'s (beam
// search: each beam continues one of the previous step's beams).
func (d *decoder) reorder(parents []int) {
	if d.n == 0 {
		return // nothing cached: the next step rebuilds every window
	}
	c := d.cfg
	T, C3 := c.BlockSize, 3*c.EmbedDim
	if d.kvSwap == nil {
		d.kvSwap = make([]float64, len(d.kv))
	}
	for l := range c.Layers {
		for b, pb := range parents {
			copy(d.kvSwap[(l*d.B+b)*T*C3:][:d.n*C3], d.kv[(l*d.B+pb)*T*C3:][:d.n*C3])
		}
	}
	d.kv, d.kvSwap = d.kvSwap, d.kv
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
	sc.dec.n = 0
	return sc
}

func putScratch(sc *scratch) {
	p, _ := scratchPools.Load(sc.key)
	p.(*sync.Pool).Put(sc)
}
