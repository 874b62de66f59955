package minigpt

// This file holds the model's backward pass, as the list of its layers
// from the loss back to the embeddings, Gradients, which runs it on a
// batch, and the weight transposes it multiplies by.

import (
	"fmt"

	"example.org/minigpt/internal/nn"
)

// Gradients returns the loss and its gradient with respect to every
// parameter, laid out like Params. Its errors are Logits'.
func (m *Model) Gradients(idx, targets []int, B, T int) (float64, []float64, error) {
	if err := m.checkBatch(idx, targets, B, T); err != nil {
		return 0, nil, fmt.Errorf("gradients: %w", err)
	}
	m.use.RLock()
	defer m.use.RUnlock()
	a, release := lendActivations(m.cfg, B, T)
	defer release()
	grads := make([]float64, len(m.slab))
	m.forwardBatch(a, idx, targets, true)
	loss := a.meanLoss()
	m.backward(a, grads)
	return loss, grads, nil
}

// backward writes into grads (laid out like the parameter slab) the
// gradient of the mean loss of the last forward pass with targets over
// the whole batch. Every element of grads is set, none accumulated into,
// so the slab needs no clearing first (TestBackwardSetsEveryGradient).
//
// Each layer undoes the forward pass's lines in reverse; the input
// gradients flow row by row (the schedule runs them as one chain from one
// attention back to the one before), the parameters' gradients, sums over
// every row, run beside the next section (after). dx is the gradient of
// a layer's output, dr2 of its residual stream after the attention.
func (m *Model) backward(a *activations, grads []float64) {
	c, p, g, j, s := m.cfg, &m.p, viewsOf(m.specs, grads), &a.jobs, &a.sched
	N, C, L, V := a.N, c.EmbedDim, c.Layers, c.VocabSize
	if !a.weightsTReady {
		m.transposeWeights(a)
	}
	defer func() { a.weightsTReady = false }() // the update will change the weights
	dx, dr2 := a.dresid3, a.dresid2
	s.begin()

	// logits = h·Whead + bhead: dh = dlogits·Wheadᵀ, dWhead = hᵀ·dlogits, dbhead = Σ dlogits
	// (tied, logits = h·wteᵀ: dh = dlogits·wte, dwte = dlogitsᵀ·h)
	if c.TiedHead {
		j.dHeadT = nn.Matmul{Out: a.dln, Inp: a.dlogits, Weight: p.tokenEmbedding, C: V, OC: C}
		j.gHead = nn.MatmulWeightGrad{DWeight: g.tokenEmbedding, Inp: a.dlogits, DOut: a.lnf, N: N, C: V, OC: C}
		s.chainRows(N, &j.dHeadT)
		s.sums(&j.gHead)
	} else {
		j.dHead = nn.MatmulInputGrad{DInp: a.dln, DOut: a.dlogits, Weight: p.headWeight, C: C, OC: V}
		j.gHead = nn.MatmulWeightGrad{DWeight: g.headWeight, Inp: a.lnf, DOut: a.dlogits, N: N, C: C, OC: V}
		j.gHeadBias = nn.ColumnSum{Sum: g.headBias, Rows: a.dlogits, N: N, W: V}
		s.chainRows(N, &j.dHead)
		s.sums(&j.gHead, &j.gHeadBias)
	}
	// h = layernorm(x): dx = layernorm'(dh), and its gain and bias gradients
	top := a.layerOf(L-1, c).resid3
	j.dLNF = nn.LayerNormBackward{DInp: dx, DOut: a.dln, Inp: top, Weight: p.lnfGain, Mean: a.lnfMean, Rstd: a.lnfRstd, C: C}
	j.gLNF = nn.LayerNormParamGrads{DWeight: g.lnfGain, DBias: g.lnfBias, DOut: a.dln, Inp: top, Mean: a.lnfMean, Rstd: a.lnfRstd, N: N, C: C}
	s.chainRows(N, &j.dLNF)
	s.after(&j.gLNF)

	for l := L - 1; l >= 0; l-- {
		w, gw, wT, act, lj := p.layer(l, c), g.layer(l, c), a.weightsTOf(l, C), a.layerOf(l, c), &j.layers[l]
		in := a.encoded // the layer's input
		if l > 0 {
			in = a.layerOf(l-1, c).resid3
		}
		// x = x2 + relu(layernorm(x2)·Wfc + bfc)·Wfcproj + bfcproj:
		// df = relu'·(dx·Wfcprojᵀ), dh2 = df·Wfcᵀ, dr2 = dx + layernorm'(dh2)
		lj.dFCProj = nn.MatmulInputGrad{DInp: a.dfc, DOut: dx, WeightT: wT.fcProj, ReLU: act.fcAct, C: 4 * C, OC: C}
		lj.dFC = nn.MatmulInputGrad{DInp: a.dln2, DOut: a.dfc, WeightT: wT.fc, C: C, OC: 4 * C}
		lj.dLN2 = nn.LayerNormBackward{DInp: dr2, Start: dx, DOut: a.dln2, Inp: act.resid2, Weight: w.ln2Gain, Mean: act.ln2Mean, Rstd: act.ln2Rstd, C: C}
		// x2 = x + y·Wproj: dy = dr2·Wprojᵀ
		lj.dProj = nn.MatmulInputGrad{DInp: a.dattnOut, DOut: dr2, WeightT: wT.attnProj, C: C, OC: C}
		s.chainRows(N, &lj.dFCProj, &lj.dFC, &lj.dLN2, &lj.dProj)
		// dWfcproj = fᵀ·dx, dbfcproj = Σ dx, dWfc = h2ᵀ·df, dbfc = Σ df, dWproj = yᵀ·dr2
		lj.gFCProj = nn.MatmulWeightGrad{DWeight: gw.fcProjWeight, Inp: act.fcAct, DOut: dx, N: N, C: 4 * C, OC: C}
		lj.gFCProjBias = nn.ColumnSum{Sum: gw.fcProjBias, Rows: dx, N: N, W: C}
		lj.gFC = nn.MatmulWeightGrad{DWeight: gw.fcWeight, Inp: act.ln2, DOut: a.dfc, N: N, C: C, OC: 4 * C}
		lj.gFCBias = nn.ColumnSum{Sum: gw.fcBias, Rows: a.dfc, N: N, W: 4 * C}
		lj.gProj = nn.MatmulWeightGrad{DWeight: gw.attnProjWeight, Inp: act.attnOut, DOut: dr2, N: N, C: C, OC: C}
		lj.gLN2 = nn.LayerNormParamGrads{DWeight: gw.ln2Gain, DBias: gw.ln2Bias, DOut: a.dln2, Inp: act.resid2, Mean: act.ln2Mean, Rstd: act.ln2Rstd, N: N, C: C}
		s.after(&lj.gFCProj, &lj.gFCProjBias, &lj.gFC, &lj.gFCBias, &lj.gProj, &lj.gLN2)

		// y = attention(q, k, v): dq, dk, dv, head by head
		lj.dAttn = nn.AttentionBackward{DQKV: a.dqkv, DAtt: a.datt, DOut: a.dattnOut, QKV: act.qkv, Att: act.att, B: a.B, T: a.T, C: C, NH: c.Heads}
		s.run(&lj.dAttn)

		// q, k, v = h·Wqkv: dh = dqkv·Wqkvᵀ, dWqkv = hᵀ·dqkv
		// h = layernorm(x): dx = dr2 + layernorm'(dh), and its gain and bias gradients
		lj.dQKV = nn.MatmulInputGrad{DInp: a.dln, DOut: a.dqkv, WeightT: wT.qkv, C: C, OC: 3 * C}
		lj.dLN1 = nn.LayerNormBackward{DInp: dx, Start: dr2, DOut: a.dln, Inp: in, Weight: w.ln1Gain, Mean: act.ln1Mean, Rstd: act.ln1Rstd, C: C}
		lj.gQKV = nn.MatmulWeightGrad{DWeight: gw.qkvWeight, Inp: act.ln1, DOut: a.dqkv, N: N, C: C, OC: 3 * C}
		lj.gLN1 = nn.LayerNormParamGrads{DWeight: gw.ln1Gain, DBias: gw.ln1Bias, DOut: a.dln, Inp: in, Mean: act.ln1Mean, Rstd: act.ln1Rstd, N: N, C: C}
		s.after(&lj.gQKV)
		s.chainRows(N, &lj.dQKV, &lj.dLN1)
		s.after(&lj.gLN1)
	}

	// x = wte[ids] + wpe[pos]: dwte[ids] += dx, dwpe[pos] += dx (tied:
	// after the head's part of dwte)
	j.gEncoder = nn.EncoderBackward{DWTE: g.tokenEmbedding, DWPE: g.positionEmbedding, DOut: dx, IDs: a.ids, Pos: a.pos, N: N, C: C, AddWTE: c.TiedHead}
	s.after(&j.gEncoder)
	s.end()
}

// layerWeightsT are a layer's transposed weights, which the input gradients
// multiply by: views into activations.weightsT.
type layerWeightsT struct {
	qkv      []float64 // (3C, C)
	attnProj []float64 // (C, C)
	fc       []float64 // (4C, C)
	fcProj   []float64 // (C, 4C)
}

// weightsTOf returns layer l's transposed weights.
func (a *activations) weightsTOf(l, C int) layerWeightsT {
	w := a.weightsT[l*12*C*C : (l+1)*12*C*C]
	return layerWeightsT{qkv: w[:3*C*C], attnProj: w[3*C*C : 4*C*C], fc: w[4*C*C : 8*C*C], fcProj: w[8*C*C:]}
}

// ensureWeightsT allocates the transposed weights on first use: only
// activations that run backward need them (a loss alone does not).
func (a *activations) ensureWeightsT(c Config) {
	if a.weightsT == nil {
		a.weightsT = make([]float64, c.Layers*12*c.EmbedDim*c.EmbedDim)
	}
}

// transposeQKV returns the job that transposes layer l's qkv weight.
func (a *activations) transposeQKV(m *Model, l int) *nn.Transpose {
	c := m.cfg
	a.ensureWeightsT(c)
	C, w, t := c.EmbedDim, m.p.layer(l, c), &a.jobs.layers[l].tQKV
	t.Parts = append(t.Parts[:0], nn.TransposePart{Dst: a.weightsTOf(l, C).qkv, Src: w.qkvWeight, R: C, W: 3 * C})
	return t
}

// transposeMLP returns the job that transposes layer l's projection and
// feed-forward weights.
func (a *activations) transposeMLP(m *Model, l int) *nn.Transpose {
	c := m.cfg
	a.ensureWeightsT(c)
	C, w, wT, t := c.EmbedDim, m.p.layer(l, c), a.weightsTOf(l, c.EmbedDim), &a.jobs.layers[l].tMLP
	t.Parts = append(t.Parts[:0],
		nn.TransposePart{Dst: wT.attnProj, Src: w.attnProjWeight, R: C, W: C},
		nn.TransposePart{Dst: wT.fc, Src: w.fcWeight, R: C, W: 4 * C},
		nn.TransposePart{Dst: wT.fcProj, Src: w.fcProjWeight, R: 4 * C, W: C})
	return t
}

// transposeWeights makes every transposed weight at once, when the
// forward pass was not asked to.
func (m *Model) transposeWeights(a *activations) {
	t := &a.jobs.transposes
	t.Parts = t.Parts[:0]
	for l := range m.cfg.Layers {
		t.Parts = append(t.Parts, a.transposeQKV(m, l).Parts...)
		t.Parts = append(t.Parts, a.transposeMLP(m, l).Parts...)
	}
	s := &a.sched
	s.begin()
	s.run(t)
	s.end()
}
