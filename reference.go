// reference.go holds the reference model: the whole GPT and its training, written as the math. Read this first.
//
// # Read this first
//
// This file and reference_layers.go are minigpt's model written plainly,
// to be read in one sitting: the same char-level GPT the rest of the
// package computes, as a list of layers, each a pair of functions (forward
// and backward) of plain loops over flat []float64 slices, in the style of
// llm.c's train_gpt2.c. There are no goroutines, no assembly, no scheduler
// and no buffers kept for speed; every activation is a fresh slice with
// its shape written beside it. The fast engine (the Model's own passes
// over the packages under internal/) computes exactly the same numbers
// with blocked kernels, AVX-512 and several cores; reference_test.go
// proves that the two give the same bits, for the logits of the embedded
// model, the loss and every gradient of a batch, and the weights and Adam
// moments after 50 training steps, on every kernel path and at any
// GOMAXPROCS. So to learn what the engine computes, read these two files;
// to learn how it goes fast, read the engine.
//
// Read them top to bottom:
//
//  1. The orders of the sums. A float64 sum's bits depend on its order,
//     so the engine fixes one order for every sum (internal/kernels'
//     package doc states them all). Most sums are chains: each term is
//     added to the running total of the terms before it, in ascending
//     order. The helpers dot8, dotChain and sumInOrder are the orders the
//     layers share; where a chain's terms lie apart in memory, a layer
//     writes it as a loop of math.FMA instead. Every product that feeds
//     a sum is a math.FMA (one rounding for the product and the sum) or
//     an explicit float64(x*y), so that no compiler may fuse it
//     differently on another machine.
//  2. The parameters and the activations: named views into one slab, in
//     the slab's order (docs/checkpoint-format.md), each field with its
//     shape, as llm.c's ParameterTensors and ActivationTensors.
//  3. The layers, forward then backward, in reference_layers.go: the
//     encoder, LayerNorm, the matrix product (and the head, which is
//     one), causal self-attention, the ReLU, the residual add and the
//     cross-entropy loss.
//  4. The model: refModel.forward and refModel.backward, the list of
//     those calls, the backward one the forward one reversed.
//  5. The optimiser: gradient clipping by the global norm, AdamW, and the
//     learning-rate schedule.
//  6. The training loop, drawing its batches exactly as the Trainer does.
//
// Each function's comment gives its formula and the lesson it comes from.
// The lessons are a course of NumPy lessons that builds this char-level
// MiniGPT and its text generator; their last guided project holds the
// whole model (a MiniGPT class with _ln_f, _ln_b, forward and backward,
// an Adam class, get_batch and train_model), and docs/lessons.md maps
// each of their functions to the one here. What the lessons do not have
// (the tied head, gradient clipping, weight decay, the warmup and cosine
// schedule) comes from nanoGPT's training options and says so.
//
// Conventions, from llm.c: arguments are outputs first, then inputs,
// then sizes (B sequences of T positions, C channels, OC output
// channels, NH heads, V the vocabulary, L layers, N = B·T rows); every
// output starts as a fresh slice of +0s; a backward function adds (+=)
// into its gradients, and zeroing them is its own step (refModel.backward
// starts with it). A row-major matrix of R rows and K columns is a slice
// of R·K values, element (r, k) at r*K + k.

package minigpt

import (
	"math"
	"math/rand/v2"

	"example.org/minigpt/internal/kernels"
)

// ---------------------------------------------------------------------
// 1. The orders of the sums
// ---------------------------------------------------------------------

// dot8 is Σ_k x[k]·y[k] in eight interleaved lanes: element k goes to
// lane k%8, each lane a chain of fused multiply-adds from +0 (the ragged
// tail continuing the same lanes), and the lanes are added by the fixed
// tree ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)), the order in which a SIMD
// register is reduced. It is the engine's order (kernels.Dot, GemmNT)
// for the products that read both operands along rows: the attention
// scores q·k and the gradient of the attention weights, the tied head's
// logits (a row of lnf with a row of the token embedding) and the untied
// head's input gradient (a row of dlogits with a row of the head's
// weight). Its caller adds the result to its output once.
func dot8(x, y []float64) float64 {
	var s [8]float64
	for k := range x {
		s[k%8] = math.FMA(x[k], y[k], s[k%8])
	}
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

// dotChain is acc + Σ_k x[k]·y[k] as one chain of fused multiply-adds in
// index order, continuing from acc. It is the engine's other order
// (kernels.GemmNN: every output one chain over k ascending), which the
// other matrix products use, and the order of the sums of products in
// the softmax's backward and in the gradient's norm.
func dotChain(acc float64, x, y []float64) float64 {
	for k := range x {
		acc = math.FMA(x[k], y[k], acc)
	}
	return acc
}

// sumInOrder is x[0] + x[1] + ... as one chain of additions in index
// order from +0 (kernels.SumInOrder): a softmax's normaliser and a
// LayerNorm's mean.
func sumInOrder(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// ---------------------------------------------------------------------
// 2. Parameters and activations
// ---------------------------------------------------------------------

// refParams is the model's parameters as named views into one slab: the
// slab of a Model (Model.Params), of its gradients, or of Adam's moments.
// A layer's queries, keys and values share one (C, 3C) matrix:
// its columns [0, C) make the queries, [C, 2C) the keys, [2C, 3C) the
// values, and within each, head h has the columns [h·hs, (h+1)·hs), hs =
// C/NH. Weights are stored (in, out), so that a layer is x·W, as in the
// lessons.
type refParams struct {
	tokenEmbedding    []float64 // (V, C) wte: also the tied head's weight
	positionEmbedding []float64 // (BlockSize, C) wpe
	ln1Gain           []float64 // (L, C)
	ln1Bias           []float64 // (L, C)
	qkvWeight         []float64 // (L, C, 3C)
	attnProjWeight    []float64 // (L, C, C)
	ln2Gain           []float64 // (L, C)
	ln2Bias           []float64 // (L, C)
	fcWeight          []float64 // (L, C, 4C)
	fcBias            []float64 // (L, 4C)
	fcProjWeight      []float64 // (L, 4C, C)
	fcProjBias        []float64 // (L, C)
	lnfGain           []float64 // (C)
	lnfBias           []float64 // (C)
	headWeight        []float64 // (C, V); absent with a tied head
	headBias          []float64 // (V); absent with a tied head
}

// refTensor is one entry of the slab's table of contents.
type refTensor struct {
	name   string     // as in the checkpoint format and Model.Tensors
	view   *[]float64 // the refParams field it fills
	size   int
	decays bool // a matrix or an embedding: AdamW's weight decay applies
}

// refTensors lists p's tensors in slab order, the order of the checkpoint
// format (docs/checkpoint-format.md) and of Model.Tensors.
func refTensors(c Config, p *refParams) []refTensor {
	V, T, C, L := c.VocabSize, c.BlockSize, c.EmbedDim, c.Layers
	ts := []refTensor{
		{"token_embedding", &p.tokenEmbedding, V * C, true},
		{"position_embedding", &p.positionEmbedding, T * C, true},
		{"ln1_gain", &p.ln1Gain, L * C, false},
		{"ln1_bias", &p.ln1Bias, L * C, false},
		{"qkv_weight", &p.qkvWeight, L * C * 3 * C, true},
		{"attn_proj_weight", &p.attnProjWeight, L * C * C, true},
		{"ln2_gain", &p.ln2Gain, L * C, false},
		{"ln2_bias", &p.ln2Bias, L * C, false},
		{"fc_weight", &p.fcWeight, L * C * 4 * C, true},
		{"fc_bias", &p.fcBias, L * 4 * C, false},
		{"fc_proj_weight", &p.fcProjWeight, L * 4 * C * C, true},
		{"fc_proj_bias", &p.fcProjBias, L * C, false},
		{"lnf_gain", &p.lnfGain, C, false},
		{"lnf_bias", &p.lnfBias, C, false},
	}
	if !c.TiedHead {
		ts = append(ts,
			refTensor{"head_weight", &p.headWeight, C * V, true},
			refTensor{"head_bias", &p.headBias, V, false})
	}
	return ts
}

// refNumParams is the number of parameters of a model of config c.
func refNumParams(c Config) int {
	n := 0
	for _, t := range refTensors(c, &refParams{}) {
		n += t.size
	}
	return n
}

// refParamViews cuts slab (refNumParams(c) values) into c's tensors.
func refParamViews(c Config, slab []float64) refParams {
	var p refParams
	off := 0
	for _, t := range refTensors(c, &p) {
		*t.view = slab[off : off+t.size]
		off += t.size
	}
	return p
}

// refActivations is every value the forward pass computes, kept for the
// backward pass; the backward pass's gradients of them have the same
// shapes and use the same struct, as in llm.c. Per-layer values lead with
// the layer. The attention's (T, T) matrices hold the causal lower
// triangle (s ≤ t) and +0 above it.
type refActivations struct {
	encoded  []float64 // (B, T, C) token embedding + position embedding
	ln1      []float64 // (L, B, T, C)
	ln1Mean  []float64 // (L, B, T)
	ln1Rstd  []float64 // (L, B, T) 1/sqrt(variance + ε)
	qkv      []float64 // (L, B, T, 3C) queries, keys, values
	preatt   []float64 // (L, B, NH, T, T) q·k, before the scaling
	att      []float64 // (L, B, NH, T, T) softmax(q·k/sqrt(hs)) over the keys s ≤ t
	attnOut  []float64 // (L, B, T, C) Σ_s att·v, heads side by side
	attnProj []float64 // (L, B, T, C) attnOut·attnProjWeight
	resid2   []float64 // (L, B, T, C) the residual stream after attention
	ln2      []float64 // (L, B, T, C)
	ln2Mean  []float64 // (L, B, T)
	ln2Rstd  []float64 // (L, B, T)
	fc       []float64 // (L, B, T, 4C) ln2·fcWeight + fcBias
	fcRelu   []float64 // (L, B, T, 4C) max(fc, 0)
	fcProj   []float64 // (L, B, T, C) fcRelu·fcProjWeight + fcProjBias
	resid3   []float64 // (L, B, T, C) the residual stream after the feed-forward network
	lnf      []float64 // (B, T, C)
	lnfMean  []float64 // (B, T)
	lnfRstd  []float64 // (B, T)
	logits   []float64 // (B, T, V)
	probs    []float64 // (B, T, V) softmax(logits)
	losses   []float64 // (B, T) -log probs[target]
}

// newRefActivations returns fresh (+0) activations for B sequences of T
// positions.
func newRefActivations(c Config, B, T int) *refActivations {
	C, NH, V, L := c.EmbedDim, c.Heads, c.VocabSize, c.Layers
	N := B * T
	return &refActivations{
		encoded:  make([]float64, N*C),
		ln1:      make([]float64, L*N*C),
		ln1Mean:  make([]float64, L*N),
		ln1Rstd:  make([]float64, L*N),
		qkv:      make([]float64, L*N*3*C),
		preatt:   make([]float64, L*B*NH*T*T),
		att:      make([]float64, L*B*NH*T*T),
		attnOut:  make([]float64, L*N*C),
		attnProj: make([]float64, L*N*C),
		resid2:   make([]float64, L*N*C),
		ln2:      make([]float64, L*N*C),
		ln2Mean:  make([]float64, L*N),
		ln2Rstd:  make([]float64, L*N),
		fc:       make([]float64, L*N*4*C),
		fcRelu:   make([]float64, L*N*4*C),
		fcProj:   make([]float64, L*N*C),
		resid3:   make([]float64, L*N*C),
		lnf:      make([]float64, N*C),
		lnfMean:  make([]float64, N),
		lnfRstd:  make([]float64, N),
		logits:   make([]float64, N*V),
		probs:    make([]float64, N*V),
		losses:   make([]float64, N),
	}
}

// layer returns layer l's part of a per-layer tensor of n values a layer.
func layerSlice(x []float64, l, n int) []float64 { return x[l*n : (l+1)*n] }

// ---------------------------------------------------------------------
// 4. The model
// ---------------------------------------------------------------------

// refModel is a model in the reference: its config and its parameters,
// and, once trained, their gradients, Adam's moments and the activations
// of the last forward pass.
type refModel struct {
	cfg    Config
	params []float64 // the slab, laid out like Model.Params
	p      refParams // views into params
	grads  []float64 // laid out like params
	g      refParams // views into grads
	m, v   []float64 // Adam's first and second moments, laid out like params
	step   int       // Adam's t: updates applied so far

	// The last forward pass: its batch and its activations.
	B, T            int
	inputs, targets []int
	acts            *refActivations
	loss            float64 // its mean loss, with targets
	// The last backward pass's gradients of the activations.
	dacts *refActivations
}

// newRefModel returns the reference model of m's config with a copy of
// m's parameters, read through the package's exported surface.
func newRefModel(m *Model) *refModel {
	c := m.Config()
	r := &refModel{cfg: c, params: append([]float64(nil), m.Params()...)}
	r.p = refParamViews(c, r.params)
	r.grads = make([]float64, len(r.params))
	r.g = refParamViews(c, r.grads)
	r.m, r.v = make([]float64, len(r.params)), make([]float64, len(r.params))
	return r
}

// forward runs the model on B sequences of T tokens (inputs, row-major,
// T at most BlockSize) and keeps the activations; with targets (B·T ids,
// each position's next token) it returns the mean loss, the loss of
// every row summed in order and divided by N (from the lessons:
// MiniGPT.forward).
func (r *refModel) forward(inputs, targets []int, B, T int) float64 {
	c, p := r.cfg, r.p
	C, NH, V, L := c.EmbedDim, c.Heads, c.VocabSize, c.Layers
	N := B * T
	a := newRefActivations(c, B, T)
	r.B, r.T, r.inputs, r.targets, r.acts = B, T, inputs, targets, a

	encoderForward(a.encoded, inputs, p.tokenEmbedding, p.positionEmbedding, B, T, C)
	residual := a.encoded
	for l := 0; l < L; l++ {
		// Layer l's parameters.
		ln1w, ln1b := layerSlice(p.ln1Gain, l, C), layerSlice(p.ln1Bias, l, C)
		qkvw := layerSlice(p.qkvWeight, l, C*3*C)
		attprojw := layerSlice(p.attnProjWeight, l, C*C)
		ln2w, ln2b := layerSlice(p.ln2Gain, l, C), layerSlice(p.ln2Bias, l, C)
		fcw, fcb := layerSlice(p.fcWeight, l, C*4*C), layerSlice(p.fcBias, l, 4*C)
		fcprojw, fcprojb := layerSlice(p.fcProjWeight, l, 4*C*C), layerSlice(p.fcProjBias, l, C)
		// Layer l's activations.
		ln1, ln1Mean, ln1Rstd := layerSlice(a.ln1, l, N*C), layerSlice(a.ln1Mean, l, N), layerSlice(a.ln1Rstd, l, N)
		qkv := layerSlice(a.qkv, l, N*3*C)
		preatt, att := layerSlice(a.preatt, l, B*NH*T*T), layerSlice(a.att, l, B*NH*T*T)
		attnOut, attnProj, resid2 := layerSlice(a.attnOut, l, N*C), layerSlice(a.attnProj, l, N*C), layerSlice(a.resid2, l, N*C)
		ln2, ln2Mean, ln2Rstd := layerSlice(a.ln2, l, N*C), layerSlice(a.ln2Mean, l, N), layerSlice(a.ln2Rstd, l, N)
		fc, fcRelu := layerSlice(a.fc, l, N*4*C), layerSlice(a.fcRelu, l, N*4*C)
		fcProj, resid3 := layerSlice(a.fcProj, l, N*C), layerSlice(a.resid3, l, N*C)

		layernormForward(ln1, ln1Mean, ln1Rstd, residual, ln1w, ln1b, B, T, C)
		matmulForward(qkv, ln1, qkvw, nil, B, T, C, 3*C)
		attentionForward(attnOut, preatt, att, qkv, B, T, C, NH)
		matmulForward(attnProj, attnOut, attprojw, nil, B, T, C, C)
		residualForward(resid2, residual, attnProj, N*C)
		layernormForward(ln2, ln2Mean, ln2Rstd, resid2, ln2w, ln2b, B, T, C)
		matmulForward(fc, ln2, fcw, fcb, B, T, C, 4*C)
		reluForward(fcRelu, fc, N*4*C)
		matmulForward(fcProj, fcRelu, fcprojw, fcprojb, B, T, 4*C, C)
		residualForward(resid3, resid2, fcProj, N*C)
		residual = resid3
	}
	layernormForward(a.lnf, a.lnfMean, a.lnfRstd, residual, p.lnfGain, p.lnfBias, B, T, C)
	if c.TiedHead {
		tiedHeadForward(a.logits, a.lnf, p.tokenEmbedding, B, T, C, V)
	} else {
		matmulForward(a.logits, a.lnf, p.headWeight, p.headBias, B, T, C, V)
	}
	if targets == nil {
		return 0
	}
	crossEntropyForward(a.losses, a.probs, a.logits, targets, B, T, V)
	r.loss = sumInOrder(a.losses) / float64(N)
	return r.loss
}

// backward sets r.grads to the gradient of the last forward pass's mean
// loss with respect to every parameter: the forward pass's calls undone
// in reverse order (from the lessons: MiniGPT.backward). It first
// zeroes the gradients, then every backward function adds to them.
func (r *refModel) backward() {
	c, p, g, a := r.cfg, r.p, r.g, r.acts
	C, NH, V, L := c.EmbedDim, c.Heads, c.VocabSize, c.Layers
	B, T := r.B, r.T
	N := B * T
	clear(r.grads)
	d := newRefActivations(c, B, T) // the activations' gradients, +0
	r.dacts = d

	crossEntropyBackward(d.logits, a.probs, r.targets, B, T, V)
	if c.TiedHead {
		tiedHeadBackward(d.lnf, g.tokenEmbedding, d.logits, a.lnf, p.tokenEmbedding, B, T, C, V)
	} else {
		untiedHeadBackward(d.lnf, g.headWeight, g.headBias, d.logits, a.lnf, p.headWeight, B, T, C, V)
	}
	layernormBackward(layerSlice(d.resid3, L-1, N*C), g.lnfGain, g.lnfBias, d.lnf, layerSlice(a.resid3, L-1, N*C), p.lnfGain, a.lnfMean, a.lnfRstd, B, T, C)
	for l := L - 1; l >= 0; l-- {
		residual, dresidual := a.encoded, d.encoded
		if l > 0 {
			residual, dresidual = layerSlice(a.resid3, l-1, N*C), layerSlice(d.resid3, l-1, N*C)
		}
		// Layer l's parameters and their gradients.
		ln1w := layerSlice(p.ln1Gain, l, C)
		dln1w, dln1b := layerSlice(g.ln1Gain, l, C), layerSlice(g.ln1Bias, l, C)
		qkvw, dqkvw := layerSlice(p.qkvWeight, l, C*3*C), layerSlice(g.qkvWeight, l, C*3*C)
		attprojw, dattprojw := layerSlice(p.attnProjWeight, l, C*C), layerSlice(g.attnProjWeight, l, C*C)
		ln2w := layerSlice(p.ln2Gain, l, C)
		dln2w, dln2b := layerSlice(g.ln2Gain, l, C), layerSlice(g.ln2Bias, l, C)
		fcw, dfcw, dfcb := layerSlice(p.fcWeight, l, C*4*C), layerSlice(g.fcWeight, l, C*4*C), layerSlice(g.fcBias, l, 4*C)
		fcprojw := layerSlice(p.fcProjWeight, l, 4*C*C)
		dfcprojw, dfcprojb := layerSlice(g.fcProjWeight, l, 4*C*C), layerSlice(g.fcProjBias, l, C)
		// Layer l's activations and their gradients.
		ln1, ln1Mean, ln1Rstd := layerSlice(a.ln1, l, N*C), layerSlice(a.ln1Mean, l, N), layerSlice(a.ln1Rstd, l, N)
		qkv, att := layerSlice(a.qkv, l, N*3*C), layerSlice(a.att, l, B*NH*T*T)
		attnOut, resid2 := layerSlice(a.attnOut, l, N*C), layerSlice(a.resid2, l, N*C)
		ln2, ln2Mean, ln2Rstd := layerSlice(a.ln2, l, N*C), layerSlice(a.ln2Mean, l, N), layerSlice(a.ln2Rstd, l, N)
		fc, fcRelu := layerSlice(a.fc, l, N*4*C), layerSlice(a.fcRelu, l, N*4*C)
		dln1, dqkv := layerSlice(d.ln1, l, N*C), layerSlice(d.qkv, l, N*3*C)
		dpreatt, datt := layerSlice(d.preatt, l, B*NH*T*T), layerSlice(d.att, l, B*NH*T*T)
		dattnOut, dattnProj, dresid2 := layerSlice(d.attnOut, l, N*C), layerSlice(d.attnProj, l, N*C), layerSlice(d.resid2, l, N*C)
		dln2, dfc, dfcRelu := layerSlice(d.ln2, l, N*C), layerSlice(d.fc, l, N*4*C), layerSlice(d.fcRelu, l, N*4*C)
		dfcProj, dresid3 := layerSlice(d.fcProj, l, N*C), layerSlice(d.resid3, l, N*C)

		residualBackward(dresid2, dfcProj, dresid3, N*C)
		matmulBackward(dfcRelu, dfcprojw, dfcprojb, dfcProj, fcRelu, fcprojw, B, T, 4*C, C)
		reluBackward(dfc, fc, dfcRelu, N*4*C)
		matmulBackward(dln2, dfcw, dfcb, dfc, ln2, fcw, B, T, C, 4*C)
		layernormBackward(dresid2, dln2w, dln2b, dln2, resid2, ln2w, ln2Mean, ln2Rstd, B, T, C)
		residualBackward(dresidual, dattnProj, dresid2, N*C)
		matmulBackward(dattnOut, dattprojw, nil, dattnProj, attnOut, attprojw, B, T, C, C)
		attentionBackward(dqkv, dpreatt, datt, dattnOut, qkv, att, B, T, C, NH)
		matmulBackward(dln1, dqkvw, nil, dqkv, ln1, qkvw, B, T, C, 3*C)
		layernormBackward(dresidual, dln1w, dln1b, dln1, residual, ln1w, ln1Mean, ln1Rstd, B, T, C)
	}
	encoderBackward(g.tokenEmbedding, g.positionEmbedding, d.encoded, r.inputs, B, T, C)
}

// ---------------------------------------------------------------------
// 5. The optimiser
// ---------------------------------------------------------------------

// clipGradNorm scales grads so that their global L2 norm is at most clip
// (0: no clipping): with norm = sqrt(Σ g²) over the whole slab, a chain
// of fused multiply-adds in slab order,
//
//	if norm > clip { g *= clip/norm }
//
// as PyTorch's clip_grad_norm_ and nanoGPT's -grad_clip (not in the
// lessons). It returns the norm. The engine sums in parallel first, in
// another fixed order, to learn quickly that no clipping is needed, and
// takes this chain whenever it might be: the weights depend only on it.
func clipGradNorm(grads []float64, clip float64) float64 {
	norm := math.Sqrt(dotChain(0, grads, grads))
	if clip > 0 && norm > clip {
		s := clip / norm
		for i := range grads {
			grads[i] *= s
		}
	}
	return norm
}

// Adam's constants, the lessons'.
const (
	refBeta1   = 0.9
	refBeta2   = 0.999
	refAdamEps = 1e-8
)

// update applies one AdamW step with learning rate lr and decoupled
// weight decay wd to every parameter (from the lessons: Adam.step, with
// nanoGPT's weight decay, 0 in the lessons' run):
//
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	p = p·(1 - lr·wd) - lr·(m/(1-β1^t)) / (sqrt(v/(1-β2^t)) + ε)
//
// the decay only on matrices and embeddings, never on gains and biases.
// Every product is rounded on its own; the bias corrections are
// kernels.PowInt's (repeated squaring, only exactly rounded products,
// where math.Pow promises no particular rounding).
func (r *refModel) update(lr, wd float64) {
	// β1 and β2 as float64 values, not constants: Go evaluates constant
	// expressions exactly, so 1-refBeta1 would be 0.1 rounded once, where
	// the engine's 1-β1 of its float64 β1 is 0.09999999999999998.
	b1, b2 := float64(refBeta1), float64(refBeta2)
	r.step++
	c1 := 1 - kernels.PowInt(b1, r.step)
	c2 := 1 - kernels.PowInt(b2, r.step)
	off := 0
	for _, t := range refTensors(r.cfg, &refParams{}) {
		shrink := 1.0
		if wd > 0 && t.decays {
			shrink = 1 - float64(lr*wd)
		}
		for i := off; i < off+t.size; i++ {
			g := r.grads[i]
			r.m[i] = float64(b1*r.m[i]) + float64((1-b1)*g)
			r.v[i] = float64(b2*r.v[i]) + float64((1-b2)*float64(g*g))
			mhat, vhat := r.m[i]/c1, r.v[i]/c2
			r.params[i] = float64(r.params[i]*shrink) - float64(lr*mhat)/(math.Sqrt(vhat)+refAdamEps)
		}
		off += t.size
	}
}

// ---------------------------------------------------------------------
// 6. Training
// ---------------------------------------------------------------------

// train runs tc.Steps training steps on data (a Dataset's Train part)
// as the Trainer does, and returns every step's loss and gradient norm
// before clipping (from the lessons: train_model). A step: draw a batch
// (the Trainer's sampleBatch: B windows of BlockSize tokens and the
// tokens one step later, from a PCG seeded with tc.Seed), forward,
// backward, clip, update at the schedule's learning rate
// (TrainConfig.learningRate).
func (r *refModel) train(data []int32, tc TrainConfig) (losses, norms []float64) {
	B, T := tc.BatchSize, r.cfg.BlockSize
	rng := rand.New(rand.NewPCG(tc.Seed, streamBatch))
	inputs, targets := make([]int, B*T), make([]int, B*T)
	for step := 0; step < tc.Steps; step++ {
		sampleBatch(inputs, targets, data, B, T, rng)
		losses = append(losses, r.forward(inputs, targets, B, T))
		r.backward()
		norms = append(norms, clipGradNorm(r.grads, tc.GradClip))
		r.update(tc.learningRate(step), tc.WeightDecay)
	}
	return losses, norms
}
