package minigpt

// This file holds the model's backward pass, layer by layer from the loss
// back to the embeddings, and the weight transposes it multiplies by.

import (
	"fmt"

	"example.org/minigpt/internal/nn"
	"example.org/minigpt/internal/par"
)

// backwardJobs holds the backward pass's job descriptions.
type backwardJobs struct {
	ln      [2]nn.LayerNormBackward
	cols    [2]nn.LayerNormParamGrads // LayerNorm weight and bias gradients: whole, or first halves
	colsEnd [2]nn.LayerNormParamGrads // second halves
	colsH   [2]par.Halves
	ig      [4]nn.MatmulInputGrad
	mm      nn.Matmul              // the tied head's input gradient
	wg      [4]nn.MatmulWeightGrad // whole, or first halves
	wgEnd   [4]nn.MatmulWeightGrad // second halves
	wgH     [4]par.Halves
	cs      [2]nn.ColumnSum // whole, or first halves
	csEnd   [2]nn.ColumnSum
	csH     [2]par.Halves
	attn    nn.AttentionBackward
	enc     nn.EncoderBackward
	encEnd  nn.EncoderBackward
	encH    par.Halves
}

// weightGradHalvesMin: a weight gradient dW = inpᵀ·dout (inp N×C, dout
// N×OC) runs in two Halves when the rows each core would otherwise read
// from the other's cache, about N·(C+OC)/2 values, are at least this many
// times the C·OC values of dW the halves pass from one core to the other
// (every weight gradient of the default config, only the head's of the baby
// config). 0 makes every sum over two or more rows run in halves (tests).
var weightGradHalvesMin = 8

// weightGradInHalves reports whether dW = inpᵀ·dout runs in halves.
func weightGradInHalves(N, C, OC int) bool {
	if weightGradHalvesMin == 0 {
		return N >= 2
	}
	return par.HalvesPay() && N*(C+OC) >= weightGradHalvesMin*2*C*OC
}

// rowsInHalves reports whether the other sums over a batch's N rows (bias
// column sums, LayerNorm's weight and bias gradients, the encoder's
// backward) run in halves: they pass only a row of sums from one core to
// the other.
func rowsInHalves(N int) bool {
	if weightGradHalvesMin == 0 {
		return N >= 2
	}
	return par.HalvesPay() && N >= 2
}

// Gradients returns the loss and its gradient with respect to every
// parameter, laid out like Params.
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
// Its parallel sections (2L+3) pair the two kinds of work: the input
// gradients run row-wise from one attention back to the one before
// (par.Chain), while the weight gradients of the layers just passed,
// which need every row, run beside the next section's chain or the
// attention's heads; no job of a section reads what another writes. The
// residual stream's gradient alternates between two buffers, so that a
// weight gradient still reading one value of it is never overwritten by
// the next.
func (m *Model) backward(a *activations, grads []float64) {
	c, p, g := m.cfg, m.p, viewsOf(m.specs, grads)
	B, T := a.B, a.T
	C, L, NH, V := c.EmbedDim, c.Layers, c.Heads, c.VocabSize
	N, hs := B*T, C/NH
	layer := func(buf []float64, l, width int) []float64 { return buf[l*N*width : (l+1)*N*width] }
	in := func(l int) []float64 { // the residual stream entering layer l
		if l == 0 {
			return a.encoded
		}
		return layer(a.resid3, l-1, C)
	}
	other := func(buf []float64) []float64 {
		if &buf[0] == &a.dresid[0] {
			return a.dresid2
		}
		return a.dresid
	}
	j, sec, chain := &a.jobs.back, &a.jobs.sec, &a.jobs.chain
	h := N / 2 // where the halves of a sum over rows meet
	// dW = inpᵀ·dout, whole or in two halves over the rows.
	weightGrad := func(k int, dw, inp, dout []float64, C, OC int) {
		j.wg[k] = nn.MatmulWeightGrad{DWeight: dw, Inp: inp, DOut: dout, N: N, C: C, OC: OC}
		items := j.wg[k].Items()
		if !weightGradInHalves(N, C, OC) {
			sec.Add(&j.wg[k], items, 1, N*OC*C/items)
			return
		}
		j.wg[k].N = h
		j.wgEnd[k] = nn.MatmulWeightGrad{DWeight: dw, Inp: inp[h*C:], DOut: dout[h*OC:], N: N - h, C: C, OC: OC, Add: true}
		sec.AddHalves(&j.wgH[k], &j.wg[k], &j.wgEnd[k], items, 1, (N+1)/2*OC*C/items)
	}
	columnSum := func(k int, sum, rows []float64, W int) {
		if !rowsInHalves(N) {
			j.cs[k] = nn.ColumnSum{Sum: sum[:W], Rows: rows, N: N, W: W, Set: true}
			sec.Add(&j.cs[k], W, 8, N)
			return
		}
		j.cs[k] = nn.ColumnSum{Sum: sum[:W], Rows: rows[:h*W], N: h, W: W, Set: true}
		j.csEnd[k] = nn.ColumnSum{Sum: sum[:W], Rows: rows[h*W : N*W], N: N - h, W: W}
		sec.AddHalves(&j.csH[k], &j.cs[k], &j.csEnd[k], W, 8, N-h)
	}
	// A LayerNorm's weight and bias gradients (j.cols[k], described by
	// lnBackward in the section before).
	lnColumns := func(k int) {
		cols := &j.cols[k]
		if !rowsInHalves(N) {
			sec.Add(cols, C, 4, 3*N)
			return
		}
		end := &j.colsEnd[k]
		*end = *cols
		end.DOut, end.Inp, end.Mean, end.Rstd, end.N, end.Set = cols.DOut[h*C:], cols.Inp[h*C:], cols.Mean[h:], cols.Rstd[h:], N-h, false
		cols.N = h
		sec.AddHalves(&j.colsH[k], cols, end, C, 4, 3*(N-h))
	}

	// The layers' weights transposed for their input gradients: made by
	// the forward pass when its caller asked, here otherwise.
	if !a.weightsTReady {
		m.setTransposes(a)
		for s := range a.transposes {
			sec.Reset()
			addTranspose(sec, &a.transposes[s])
			sec.Run()
		}
	}
	defer func() { a.weightsTReady = false }() // the update will change the weights

	// ln sets j.ln[k] to a LayerNorm's input gradient, adds it to the
	// chain, and describes its weight and bias gradients in j.cols[col].
	ln := func(k, col int, dinp, start, dweight, dbias, dout, inp, weight, mean, rstd []float64) {
		j.ln[k] = nn.LayerNormBackward{DInp: dinp, Start: start, DOut: dout, Inp: inp, Weight: weight[:C], Mean: mean, Rstd: rstd, C: C}
		j.cols[col] = nn.LayerNormParamGrads{DWeight: dweight[:C], DBias: dbias[:C], DOut: dout, Inp: inp, Mean: mean, Rstd: rstd, N: N, C: C, Set: true}
		chain.Add(&j.ln[k])
	}

	// The head: dlnf = dlogits·headᵀ (dlogits·wte when tied), then dresid
	// = lnf's input gradient; beside them, the head's gradients.
	sec.Reset()
	chain.Reset()
	cur := a.dresid
	if c.TiedHead {
		j.mm = nn.Matmul{Out: a.dln, Inp: a.dlogits, Weight: p.tokenEmbedding, C: V, OC: C}
		chain.Add(&j.mm)
		// dwte = dlogitsᵀ·lnf, a weight gradient's product (the encoder
		// adds its part later).
		j.wg[1] = nn.MatmulWeightGrad{DWeight: g.tokenEmbedding, Inp: a.dlogits, DOut: a.lnf, N: N, C: V, OC: C}
		items := j.wg[1].Items()
		sec.Add(&j.wg[1], items, 1, N*V*C/items)
	} else {
		j.ig[0] = nn.MatmulInputGrad{DInp: a.dln, DOut: a.dlogits, Weight: p.headWeight, C: C, OC: V}
		chain.Add(&j.ig[0])
		weightGrad(1, g.headWeight, a.lnf, a.dlogits, C, V)
		columnSum(0, g.headBias, a.dlogits, V)
	}
	ln(0, 1, cur, nil, g.lnfGain, g.lnfBias, a.dln, layer(a.resid3, L-1, C), p.lnfGain, a.lnfMean, a.lnfRstd)
	sec.Add(chain, N, 4, C*V+8*C)
	sec.Run()
	ln1Pending := true // j.cols[1]'s sums: lnf's, then a layer's ln1

	for l := L - 1; l >= 0; l-- {
		sec.Reset()
		chain.Reset()
		chainCost := 0
		r1 := cur // the residual gradient after layer l+1's ln1
		if l < L-1 {
			// Layer l+1's ln1 and qkv, whose dqkv the last section made:
			// dln = dqkv·qkvᵀ, r1 = cur + ln1's input gradient.
			k := l + 1
			r1 = other(cur)
			qkvT, _, _, _ := a.weightsTOf(k, C)
			j.ig[3] = nn.MatmulInputGrad{DInp: a.dln, DOut: a.dqkv, WeightT: qkvT, C: C, OC: 3 * C}
			chain.Add(&j.ig[3])
			ln(1, 1, r1, cur, g.ln1Gain[k*C:], g.ln1Bias[k*C:], a.dln, in(k), p.ln1Gain[k*C:], layer(a.ln1Mean, k, 1), layer(a.ln1Rstd, k, 1))
			chainCost += 3*C*C + 8*C
			weightGrad(3, g.qkvWeight[k*C*3*C:], layer(a.ln1, k, C), a.dqkv, C, 3*C)
			ln1Pending = true
		} else {
			// lnf's column sums: its rows were in the last chain.
			lnColumns(1)
			ln1Pending = false
		}
		// Layer l's feed-forward network and projection, backward:
		// dfc = relu'·(r1·fcProjᵀ) (kept where fcAct > 0), dln2 = dfc·fcᵀ,
		// r2 = r1 + ln2's input gradient, dattnOut = r2·attnProjᵀ.
		r2 := other(r1)
		_, attnProjT, fcT, fcProjT := a.weightsTOf(l, C)
		j.ig[0] = nn.MatmulInputGrad{DInp: a.dfc, DOut: r1, WeightT: fcProjT, ReLU: layer(a.fcAct, l, 4*C), C: 4 * C, OC: C}
		j.ig[1] = nn.MatmulInputGrad{DInp: a.dln2, DOut: a.dfc, WeightT: fcT, C: C, OC: 4 * C}
		chain.Add(&j.ig[0])
		chain.Add(&j.ig[1])
		ln(0, 0, r2, r1, g.ln2Gain[l*C:], g.ln2Bias[l*C:], a.dln2, layer(a.resid2, l, C), p.ln2Gain[l*C:], layer(a.ln2Mean, l, 1), layer(a.ln2Rstd, l, 1))
		j.ig[2] = nn.MatmulInputGrad{DInp: a.dattnOut, DOut: r2, WeightT: attnProjT, C: C, OC: C}
		chain.Add(&j.ig[2])
		chainCost += 9*C*C + 8*C
		sec.Add(chain, N, 4, chainCost)
		sec.Run()

		// Layer l's attention, backward (dqkv set, head by head), beside
		// the weight gradients of the chain just run.
		sec.Reset()
		j.attn = nn.AttentionBackward{DQKV: a.dqkv, DAtt: a.datt, DOut: a.dattnOut, QKV: layer(a.qkv, l, 3*C), Att: layer(a.att, l, NH*T), T: T, C: C, NH: NH}
		sec.Add(&j.attn, B*NH, 1, 2*T*T*hs)
		weightGrad(0, g.fcProjWeight[l*4*C*C:], layer(a.fcAct, l, 4*C), r1, 4*C, C)
		columnSum(0, g.fcProjBias[l*C:], r1, C)
		weightGrad(1, g.fcWeight[l*C*4*C:], layer(a.ln2, l, C), a.dfc, C, 4*C)
		columnSum(1, g.fcBias[l*4*C:], a.dfc, 4*C)
		weightGrad(2, g.attnProjWeight[l*C*C:], layer(a.attnOut, l, C), r2, C, C)
		lnColumns(0) // ln2's
		if ln1Pending {
			lnColumns(1) // layer l+1's ln1
		}
		sec.Run()
		cur = r2
	}

	// Layer 0's ln1 and qkv, beside qkv's weight gradient.
	sec.Reset()
	chain.Reset()
	r1 := other(cur)
	qkvT, _, _, _ := a.weightsTOf(0, C)
	j.ig[3] = nn.MatmulInputGrad{DInp: a.dln, DOut: a.dqkv, WeightT: qkvT, C: C, OC: 3 * C}
	chain.Add(&j.ig[3])
	ln(1, 1, r1, cur, g.ln1Gain, g.ln1Bias, a.dln, a.encoded, p.ln1Gain, layer(a.ln1Mean, 0, 1), layer(a.ln1Rstd, 0, 1))
	sec.Add(chain, N, 4, 3*C*C+8*C)
	weightGrad(3, g.qkvWeight, layer(a.ln1, 0, C), a.dqkv, C, 3*C)
	sec.Run()

	// encoded = wte[ids] + wpe[pos], beside ln1's column sums.
	sec.Reset()
	j.enc = nn.EncoderBackward{DWTE: g.tokenEmbedding, DWPE: g.positionEmbedding, DOut: r1, IDs: a.ids, Pos: a.pos, R0: 0, R1: N, SetWTE: !c.TiedHead, SetWPE: true, C: C}
	if rowsInHalves(N) {
		j.encEnd = j.enc
		j.enc.R1, j.encEnd.R0, j.encEnd.SetWTE, j.encEnd.SetWPE = h, h, false, false
		sec.AddHalves(&j.encH, &j.enc, &j.encEnd, C, 8, 2*(N-h))
	} else {
		sec.Add(&j.enc, C, 8, 2*N)
	}
	lnColumns(1)
	sec.Run()
}

// setTransposes fills a.transposes from the current parameters: section
// 0 transposes layer 0's qkv, section l+1 layer l's attnProj, fc and
// fcProj and layer l+1's qkv.
func (m *Model) setTransposes(a *activations) {
	C, L, p := m.cfg.EmbedDim, m.cfg.Layers, m.p
	if a.weightsT == nil {
		// Only activations that run backward need them (a loss alone
		// does not): allocated by the first.
		a.weightsT = make([]float64, L*12*C*C)
		a.transposes = make([]nn.Transpose, L+1)
	}
	for s := range a.transposes {
		a.transposes[s].Parts = a.transposes[s].Parts[:0]
	}
	for l := 0; l < L; l++ {
		qkvT, attnProjT, fcT, fcProjT := a.weightsTOf(l, C)
		a.transposes[l].Parts = append(a.transposes[l].Parts,
			nn.TransposePart{Dst: qkvT, Src: p.qkvWeight[l*C*3*C : (l+1)*C*3*C], R: C, W: 3 * C})
		a.transposes[l+1].Parts = append(a.transposes[l+1].Parts,
			nn.TransposePart{Dst: attnProjT, Src: p.attnProjWeight[l*C*C : (l+1)*C*C], R: C, W: C},
			nn.TransposePart{Dst: fcT, Src: p.fcWeight[l*C*4*C : (l+1)*C*4*C], R: C, W: 4 * C},
			nn.TransposePart{Dst: fcProjT, Src: p.fcProjWeight[l*4*C*C : (l+1)*4*C*C], R: 4 * C, W: C})
	}
}

// transposeCost is a transposed element's cost in multiply-adds (the
// sections' unit): a load and a store that miss the cache in turn take
// about as long as 32 of the kernels' multiply-adds.
const transposeCost = 32

// addTranspose adds t to the section as one job (none without parts).
func addTranspose(sec *par.Section, t *nn.Transpose) {
	if rows := t.Rows(); rows > 0 {
		sec.Add(t, rows, 8, transposeCost*t.Elems()/rows)
	}
}

// weightsTOf returns layer l's transposed weights in a.weightsT.
func (a *activations) weightsTOf(l, C int) (qkv, attnProj, fc, fcProj []float64) {
	w := a.weightsT[l*12*C*C : (l+1)*12*C*C]
	return w[:3*C*C], w[3*C*C : 4*C*C], w[4*C*C : 8*C*C], w[8*C*C:]
}
