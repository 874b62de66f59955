package minigpt

// This file holds the activations: every buffer a forward pass writes
// and a backward pass reads, sized from one table.

import (
	"sync"

	"example.org/minigpt/internal/nn"
	"example.org/minigpt/internal/par"
)

// activations holds the intermediate values of forward passes over up to
// N rows, and for training the backward pass's scratch gradients. In
// training (keep) every layer's values are kept for backward, and qkv is
// the (L, B, T, 3C) keys and values of the batch's B sequences of T rows:
// the pass's own KV cache. Otherwise one layer's buffers serve every
// layer (a layer's input is consumed before its output is written) and
// the keys and values go to a separate cache (a decoder's). Allocated
// once per shape and reused, so a step allocates nothing.
type activations struct {
	N    int  // row capacity
	keep bool // training: every layer kept, qkv is the cache
	B, T int  // training: the batch's sequences and their length (N = B·T)

	encoded []float64 // (N, C) token + position embeddings
	ln1     []float64 // (L, N, C)
	ln1Mean []float64 // (L, N)
	ln1Rstd []float64 // (L, N)
	qkv     []float64 // (L, N, 3C) queries, keys and values
	att     []float64 // (L, N, NH, T) attention weights (per sequence (NH, rows, T)), lower triangle only
	attnOut []float64 // (L, N, C) heads merged, before the projection
	resid2  []float64 // (L, N, C) residual stream after attention
	ln2     []float64 // (L, N, C)
	ln2Mean []float64 // (L, N)
	ln2Rstd []float64 // (L, N)
	fcAct   []float64 // (L, N, 4C) relu(ln2·fc + b): backward needs only it, as relu(x) > 0 exactly where x > 0
	resid3  []float64 // (L, N, C) residual stream after the feed-forward network
	gather  []float64 // (N, C) the residual rows that go on past the last attention (inference only)
	lnf     []float64 // (N, C)
	lnfMean []float64 // (N)
	lnfRstd []float64 // (N)
	logits  []float64 // (N, V)
	losses  []float64 // (N)

	ids, pos []int // (N) each row's token and position
	seqs     []rowSeq

	// Gradients with respect to activations, made by the first backward
	// pass. The per-layer buffers above are not duplicated: one layer's
	// gradients are live at a time.
	dlogits  []float64 // (N, V); the cross-entropy writes it with the loss
	dresid   []float64 // (N, C) gradient of the residual stream
	dresid2  []float64 // (N, C) the residual stream's gradient, second buffer
	dln      []float64 // (N, C) gradient of ln1's or lnf's output
	dln2     []float64 // (N, C) gradient of ln2's output
	dattnOut []float64 // (N, C)
	dqkv     []float64 // (N, 3C)
	datt     []float64 // (N, NH, T)
	dfc      []float64 // (N, 4C)

	// weightsT holds, per layer (12·C² each), the transposes of the
	// weights the input gradients multiply by: qkvᵀ (3C, C), attnProjᵀ
	// (C, C), fcᵀ (4C, C), fcProjᵀ (C, 4C). A training forward pass
	// makes them beside the section whose products read that weight, so
	// the weight is read while it is in the cache and no section waits
	// for them; weightsTReady says they match the parameters.
	weightsT      []float64
	transposes    []nn.Transpose // per forward section: 0 has qkv(0), l+1 the rest of layer l and qkv(l+1)
	weightsTReady bool

	jobs passJobs // the passes' job descriptions, reused
}

// buffer is one row of the activations table: a buffer and its width per
// row (perLayer: per row and layer).
type buffer struct {
	buf      *[]float64
	width    int
	perLayer bool
}

// table is every activation buffer of a forward pass with its size, the
// one description that newActivations allocates from and
// Config.activationFloats counts. Gradients are the second table.
func (a *activations) table(c Config) (forward, grads []buffer) {
	C, NH, V, T := c.EmbedDim, c.Heads, c.VocabSize, c.BlockSize
	gather := C // the rows that go on past the last attention: inference only
	if a.keep {
		gather = 0
	}
	forward = []buffer{
		{&a.encoded, C, false},
		{&a.ln1, C, true}, {&a.ln1Mean, 1, true}, {&a.ln1Rstd, 1, true},
		{&a.qkv, 3 * C, true},
		{&a.att, NH * T, true},
		{&a.attnOut, C, true}, {&a.resid2, C, true},
		{&a.ln2, C, true}, {&a.ln2Mean, 1, true}, {&a.ln2Rstd, 1, true},
		{&a.fcAct, 4 * C, true}, {&a.resid3, C, true},
		{&a.gather, gather, false},
		{&a.lnf, C, false}, {&a.lnfMean, 1, false}, {&a.lnfRstd, 1, false},
		{&a.logits, V, false}, {&a.losses, 1, false},
	}
	grads = []buffer{
		{&a.dlogits, V, false}, {&a.dresid, C, false}, {&a.dresid2, C, false},
		{&a.dln, C, false}, {&a.dln2, C, false}, {&a.dattnOut, C, false},
		{&a.dqkv, 3 * C, false}, {&a.datt, NH * T, false}, {&a.dfc, 4 * C, false},
	}
	return forward, grads
}

// activationFloats is the number of float64s the activations of a
// training batch of B sequences of T rows and their gradients take (the
// activations table), computed in float64 so that no size can overflow:
// every term is an integer below 2^53 near the limits it is compared with.
func (c Config) activationFloats(B, T int) float64 {
	a := activations{keep: true}
	forward, grads := a.table(c)
	N, L, total := float64(B)*float64(T), float64(c.Layers), 0.0
	for _, b := range append(forward, grads...) {
		n := N * float64(b.width)
		if b.perLayer {
			n *= L
		}
		total += n
	}
	return total
}

// newTrainingActivations returns the buffers of a training batch of B
// sequences of T rows: every layer kept, qkv the batch's KV cache.
func newTrainingActivations(c Config, B, T int) *activations {
	a := newActivations(c, B*T, true)
	a.B, a.T = B, T
	for r := range a.pos {
		a.pos[r] = r % T
	}
	a.seqs = make([]rowSeq, B)
	return a
}

// newActivations returns buffers for forward passes over up to N rows;
// with keep every layer's values are kept (training).
func newActivations(c Config, N int, keep bool) *activations {
	a := &activations{N: N, keep: keep}
	L := 1
	if keep {
		L = c.Layers
	}
	forward, _ := a.table(c)
	for _, b := range forward {
		n := N * b.width
		if b.perLayer {
			n *= L
		}
		*b.buf = make([]float64, n)
	}
	a.ids, a.pos = make([]int, N), make([]int, N)
	return a
}

// ensureGradients allocates the gradient buffers on first use.
func (a *activations) ensureGradients(c Config) {
	if a.dresid != nil {
		return
	}
	_, grads := a.table(c)
	for _, b := range grads {
		*b.buf = make([]float64, a.N*b.width)
	}
}

// layer returns layer l's part of a per-layer buffer of width w (the
// whole buffer's first N·w when layers are not kept).
func (a *activations) layer(buf []float64, l, w int) []float64 {
	if !a.keep {
		l = 0
	}
	return buf[l*a.N*w : (l+1)*a.N*w]
}

// meanLoss is the mean of the losses the last forward pass with targets
// wrote, summed in row order.
func (a *activations) meanLoss() float64 {
	total := 0.0
	for _, l := range a.losses[:a.N] {
		total += l
	}
	return total / float64(a.N)
}

var _ par.Job = (*kvStore)(nil)

// batchKey names the activations of one (config, B, T) shape.
type batchKey struct {
	cfg  Config
	B, T int
}

// batchPools holds, per shape, the training-shaped activations that
// Logits, Loss and Gradients lend: a call allocates them only when no
// earlier call of the same shape left one behind, so serial use allocates
// nothing, and concurrent calls never share scratch.
var batchPools sync.Map // batchKey -> *sync.Pool of *activations

// lendActivations returns buffers for a (B, T) batch of models of config
// c and the function that gives them back.
func lendActivations(c Config, B, T int) (*activations, func()) {
	key := batchKey{c, B, T}
	p, ok := batchPools.Load(key)
	if !ok {
		p, _ = batchPools.LoadOrStore(key, &sync.Pool{})
	}
	pool := p.(*sync.Pool)
	a, _ := pool.Get().(*activations)
	if a == nil {
		a = newTrainingActivations(c, B, T)
	}
	return a, func() { pool.Put(a) }
}
