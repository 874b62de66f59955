package minigpt

// This file holds what a pass works on besides the parameters: the
// activations (every buffer a forward pass writes and a backward pass
// reads, sized from one table), the rows of a pass, and the jobs that
// compute them, one slot each.

import (
	"sync"

	"example.org/minigpt/internal/decode"
	"example.org/minigpt/internal/nn"
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
	dresid3  []float64 // (N, C) gradient of a layer's output (the next layer's input)
	dresid2  []float64 // (N, C) gradient of a layer's residual stream after attention
	dln      []float64 // (N, C) gradient of ln1's or lnf's output
	dln2     []float64 // (N, C) gradient of ln2's output
	dattnOut []float64 // (N, C)
	dqkv     []float64 // (N, 3C)
	datt     []float64 // (N, NH, T)
	dfc      []float64 // (N, 4C)

	// weightsT holds, per layer (12·C² each), the transposes of the
	// weights the input gradients multiply by: qkvᵀ (3C, C), attnProjᵀ
	// (C, C), fcᵀ (4C, C), fcProjᵀ (C, 4C). A training forward pass makes
	// them beside the chains whose products read those weights, so the
	// weight is read while it is in the cache; weightsTReady says they
	// match the parameters.
	weightsT      []float64
	weightsTReady bool

	jobs  passJobs // one slot for every job of a pass
	sched schedule
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
		{&a.dlogits, V, false}, {&a.dresid3, C, false}, {&a.dresid2, C, false},
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
	a.jobs.layers = make([]layerJobs, c.Layers)
	return a
}

// ensureGradients allocates the gradient buffers on first use.
func (a *activations) ensureGradients(c Config) {
	if a.dresid3 != nil {
		return
	}
	_, grads := a.table(c)
	for _, b := range grads {
		*b.buf = make([]float64, a.N*b.width)
	}
}

// layerActs are layer l's activations: views into the buffers (all
// layers share one set when the layers are not kept).
type layerActs struct {
	ln1, ln1Mean, ln1Rstd []float64 // (N, C), (N), (N)
	qkv                   []float64 // (N, 3C)
	att                   []float64 // (N, NH, T)
	attnOut, resid2       []float64 // (N, C)
	ln2, ln2Mean, ln2Rstd []float64 // (N, C), (N), (N)
	fcAct                 []float64 // (N, 4C)
	resid3                []float64 // (N, C)
}

// layerOf returns layer l's activations.
func (a *activations) layerOf(l int, c Config) layerActs {
	C, NH, T := c.EmbedDim, c.Heads, c.BlockSize
	if a.keep {
		T = a.T // training: the batch's (B, NH, T, T) weights
	}
	return layerActs{
		ln1: a.layer(a.ln1, l, C), ln1Mean: a.layer(a.ln1Mean, l, 1), ln1Rstd: a.layer(a.ln1Rstd, l, 1),
		qkv: a.layer(a.qkv, l, 3*C), att: a.layer(a.att, l, NH*T),
		attnOut: a.layer(a.attnOut, l, C), resid2: a.layer(a.resid2, l, C),
		ln2: a.layer(a.ln2, l, C), ln2Mean: a.layer(a.ln2Mean, l, 1), ln2Rstd: a.layer(a.ln2Rstd, l, 1),
		fcAct: a.layer(a.fcAct, l, 4*C), resid3: a.layer(a.resid3, l, C),
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

// rowSeq is one sequence's part of a forward pass (see decode.Seq),
// with the rows forward gives it.
type rowSeq struct {
	decode.Seq
	row, outRow int // the sequence's first row, and first row of logits
}

// passJobs are the jobs of a pass, forward and backward, each in a slot
// of its own (a layer's in its layerJobs): the passes fill them in and
// hand pointers to the schedule, so that no pass allocates.
type passJobs struct {
	encoder nn.Encoder
	layers  []layerJobs // (L)
	gather  gatherJob
	lnf     nn.LayerNorm
	head    nn.Matmul  // untied: lnf·head + bias
	headT   nn.MatmulT // tied: lnf·wteᵀ
	loss    nn.CrossEntropy

	dHead      nn.MatmulInputGrad // untied: dlnf = dlogits·headᵀ
	dHeadT     nn.Matmul          // tied: dlnf = dlogits·wte
	dLNF       nn.LayerNormBackward
	gHead      nn.MatmulWeightGrad // dhead = lnfᵀ·dlogits (tied: dwte = dlogitsᵀ·lnf)
	gHeadBias  nn.ColumnSum
	gLNF       nn.LayerNormParamGrads
	gEncoder   nn.EncoderBackward
	transposes nn.Transpose // every weight at once, when the forward pass did not make them
}

// layerJobs are one layer's jobs.
type layerJobs struct {
	// forward
	ln1    nn.LayerNorm
	qkv    nn.Matmul
	store  kvStore
	attn   nn.Attention
	aseqs  []nn.AttentionSeq
	proj   nn.Matmul
	ln2    nn.LayerNorm
	fc     nn.Matmul
	fcProj nn.Matmul
	tQKV   nn.Transpose // qkvᵀ, beside the chain that reads qkv
	tMLP   nn.Transpose // attnProjᵀ, fcᵀ, fcProjᵀ, beside the chain that reads them

	// backward: input gradients
	dFCProj nn.MatmulInputGrad
	dFC     nn.MatmulInputGrad
	dLN2    nn.LayerNormBackward
	dProj   nn.MatmulInputGrad
	dAttn   nn.AttentionBackward
	dQKV    nn.MatmulInputGrad
	dLN1    nn.LayerNormBackward
	// backward: the parameters' gradients, sums over rows
	gFCProj, gFC, gProj, gQKV nn.MatmulWeightGrad
	gFCProjBias, gFCBias      nn.ColumnSum
	gLN2, gLN1                nn.LayerNormParamGrads
}

// kvStore copies the queries, keys and values of a pass's rows into their
// sequences' cache slots: a row job.
type kvStore struct {
	seqs  []rowSeq
	qkv   []float64 // (N, 3C) this layer's rows
	layer int       // the layer's offset in a slot: l·BlockSize·3C
	C3    int
}

// RowCost is a row's cost: a copy, next to nothing.
func (j *kvStore) RowCost() int { return 1 }

// Run stores rows [lo, hi).
func (j *kvStore) Run(lo, hi int) {
	for i := range j.seqs {
		s := &j.seqs[i]
		r0, r1 := max(lo, s.row), min(hi, s.row+s.T1-s.T0)
		if r0 < r1 {
			t0 := s.T0 + r0 - s.row
			copy(s.Cache[j.layer+t0*j.C3:], j.qkv[r0*j.C3:r1*j.C3])
		}
	}
}

// gatherJob copies, for each sequence, the residual rows of its positions
// whose logits are wanted to its rows of logits: the rows that go on past
// the last layer's attention. A job over sequences.
type gatherJob struct {
	dst, src []float64
	seqs     []rowSeq
	C        int
}

// Size is the items (sequences), grain and an item's cost.
func (j *gatherJob) Size() (items, grain, cost int) { return len(j.seqs), 1, j.C }

// Run gathers sequences [lo, hi).
func (j *gatherJob) Run(lo, hi int) {
	C := j.C
	for _, s := range j.seqs[lo:hi] {
		from := s.row + s.Out0 - s.T0
		n := s.T1 - s.Out0
		copy(j.dst[s.outRow*C:(s.outRow+n)*C], j.src[from*C:(from+n)*C])
	}
}
