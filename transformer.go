package minigpt

// The whole model's forward and backward passes, layer by layer.

// activations holds every intermediate value of a (B, T) forward pass that
// the backward pass needs, plus the backward pass's scratch gradients. It
// is allocated once per (config, batch shape) and reused, so a training
// step allocates nothing.
type activations struct {
	B, T int

	encoded []float64 // (B, T, C) token + position embeddings
	ln1     []float64 // (L, B, T, C)
	ln1Mean []float64 // (L, B, T)
	ln1Rstd []float64 // (L, B, T)
	qkv     []float64 // (L, B, T, 3C); for the generator, the KV cache
	att     []float64 // (L, B, NH, T, T) attention weights, lower triangle only
	attnOut []float64 // (L, B, T, C) heads merged, before the projection
	resid2  []float64 // (L, B, T, C) residual stream after attention
	ln2     []float64 // (L, B, T, C)
	ln2Mean []float64 // (L, B, T)
	ln2Rstd []float64 // (L, B, T)
	fcPre   []float64 // (L, B, T, 4C) before ReLU
	fcAct   []float64 // (L, B, T, 4C) after ReLU
	resid3  []float64 // (L, B, T, C) residual stream after the feed-forward network
	lnf     []float64 // (B, T, C)
	lnfMean []float64 // (B, T)
	lnfRstd []float64 // (B, T)
	logits  []float64 // (B, T, V)
	losses  []float64 // (B, T)

	// Gradients with respect to activations, allocated by the first
	// backward pass (the generator never needs them). The per-layer
	// buffers above are not duplicated: one layer's gradients are live at
	// a time.
	dlogits  []float64 // (B, T, V); the cross-entropy writes it with the loss
	dresid   []float64 // (B, T, C) gradient of the residual stream
	dln      []float64 // (B, T, C) gradient of a LayerNorm output
	dattnOut []float64 // (B, T, C)
	dqkv     []float64 // (B, T, 3C)
	datt     []float64 // (B, NH, T, T)
	dfc      []float64 // (B, T, 4C)
}

func newActivations(c Config, B, T int) *activations {
	C, L, NH, V := c.EmbedDim, c.Layers, c.Heads, c.VocabSize
	BT := B * T
	f := func(n int) []float64 { return make([]float64, n) }
	return &activations{
		B: B, T: T,
		encoded: f(BT * C),
		ln1:     f(L * BT * C), ln1Mean: f(L * BT), ln1Rstd: f(L * BT),
		qkv:     f(L * BT * 3 * C),
		att:     f(L * B * NH * T * T),
		attnOut: f(L * BT * C),
		resid2:  f(L * BT * C),
		ln2:     f(L * BT * C), ln2Mean: f(L * BT), ln2Rstd: f(L * BT),
		fcPre: f(L * BT * 4 * C), fcAct: f(L * BT * 4 * C),
		resid3: f(L * BT * C),
		lnf:    f(BT * C), lnfMean: f(BT), lnfRstd: f(BT),
		logits: f(BT * V),
		losses: f(BT),
	}
}

func (a *activations) ensureGradients(c Config) {
	if a.dresid != nil {
		return
	}
	C, NH, V := c.EmbedDim, c.Heads, c.VocabSize
	BT := a.B * a.T
	a.dlogits = make([]float64, BT*V)
	a.dresid = make([]float64, BT*C)
	a.dln = make([]float64, BT*C)
	a.dattnOut = make([]float64, BT*C)
	a.dqkv = make([]float64, BT*3*C)
	a.datt = make([]float64, a.B*NH*a.T*a.T)
	a.dfc = make([]float64, BT*4*C)
}

// forward runs the model on idx (B·T ids, row-major) for positions
// [t0, t1) of every sequence, writing activations and logits for those
// rows. Training uses t0 = 0, t1 = T. The generator (B = 1) uses t0 > 0 to
// extend a sequence whose earlier rows, and so its keys and values, are
// already in a: every row is computed by the same kernels in the same
// order either way, which is why cached and uncached logits agree to the
// bit.
//
// Rows before outFrom (t0 <= outFrom < t1) get only what later tokens
// need, their keys and values: in the last layer, attention and everything
// after it, logits included, is computed for rows [outFrom, t1) only. The
// generator uses this once the window slides, because the next token
// slides it again and rebuilds every row anyway. Training passes t0.
func (m *Model) forward(a *activations, idx []int, t0, t1, outFrom int) {
	c, p := m.Config, m.p
	B, T := a.B, a.T
	C, L, NH, V := c.EmbedDim, c.Layers, c.Heads, c.VocabSize
	BT := B * T
	if B > 1 && (t0 != 0 || t1 != T || outFrom != 0) {
		panic("minigpt: partial rows need a single sequence")
	}
	r0, nr := t0, t1-t0 // first row and row count (B == 1 or the whole batch)
	if B > 1 {
		r0, nr = 0, BT
	}
	rows := func(buf []float64, l, width int) []float64 {
		return buf[(l*BT+r0)*width : (l*BT+r0+nr)*width]
	}

	encoderForward(a.encoded, idx, p.tokenEmbedding, p.positionEmbedding, B, T, t0, t1, C)
	residual := a.encoded
	for l := 0; l < L; l++ {
		in := rows(residual, 0, C)
		if l > 0 {
			in = rows(a.resid3, l-1, C)
		}
		ln1, qkv, attnOut, resid2 := rows(a.ln1, l, C), rows(a.qkv, l, 3*C), rows(a.attnOut, l, C), rows(a.resid2, l, C)
		ln2, fcPre, fcAct, resid3 := rows(a.ln2, l, C), rows(a.fcPre, l, 4*C), rows(a.fcAct, l, 4*C), rows(a.resid3, l, C)

		layernormForward(ln1, rows(a.ln1Mean, l, 1), rows(a.ln1Rstd, l, 1), in, p.ln1Gain[l*C:], p.ln1Bias[l*C:], nr, C)
		matmulForward(qkv, ln1, p.qkvWeight[l*C*3*C:], nil, nr, C, 3*C)
		if l == L-1 && outFrom > t0 {
			// Only rows [outFrom, t1) go on past the keys and values.
			t0, r0, nr = outFrom, outFrom, t1-outFrom
			if l == 0 {
				in = rows(residual, 0, C)
			} else {
				in = rows(a.resid3, l-1, C)
			}
			attnOut, resid2 = rows(a.attnOut, l, C), rows(a.resid2, l, C)
			ln2, fcPre, fcAct, resid3 = rows(a.ln2, l, C), rows(a.fcPre, l, 4*C), rows(a.fcAct, l, 4*C), rows(a.resid3, l, C)
		}
		attentionForward(a.attnOut[l*BT*C:], a.att[l*B*NH*T*T:], a.qkv[l*BT*3*C:], B, T, t0, t1, C, NH)
		matmulForwardResidual(resid2, attnOut, p.attnProjWeight[l*C*C:], nil, in, nr, C, C)
		layernormForward(ln2, rows(a.ln2Mean, l, 1), rows(a.ln2Rstd, l, 1), resid2, p.ln2Gain[l*C:], p.ln2Bias[l*C:], nr, C)
		matmulForwardReLU(fcPre, fcAct, ln2, p.fcWeight[l*C*4*C:], p.fcBias[l*4*C:], nr, C, 4*C)
		matmulForwardResidual(resid3, fcAct, p.fcProjWeight[l*4*C*C:], p.fcProjBias[l*C:], resid2, nr, 4*C, C)
	}
	lnf := rows(a.lnf, 0, C)
	layernormForward(lnf, rows(a.lnfMean, 0, 1), rows(a.lnfRstd, 0, 1), rows(a.resid3, L-1, C), p.lnfGain, p.lnfBias, nr, C)
	logits := rows(a.logits, 0, V)
	if c.TiedHead {
		// logits = lnf · wteᵀ: dot products along the embedding rows.
		clear(logits)
		gemmNTParallel(logits, V, lnf, C, p.tokenEmbedding, C, nr, V, C)
	} else {
		matmulForward(logits, lnf, p.headWeight, p.headBias, nr, C, V)
	}
}

// crossEntropy finishes a full forward pass with targets: it returns the
// mean loss and leaves dlogits ready for backward.
func (m *Model) crossEntropy(a *activations, targets []int) float64 {
	a.ensureGradients(m.Config)
	return crossEntropyForward(a.losses, a.dlogits, a.logits, targets, a.B*a.T, m.Config.VocabSize)
}

// backward accumulates into grads (laid out like Params) the gradient of
// the mean loss of the last forward pass over the whole batch, whose
// dlogits crossEntropy wrote.
func (m *Model) backward(a *activations, grads []float64, idx []int) {
	c, p, g := m.Config, m.p, viewsOf(m.specs, grads)
	B, T := a.B, a.T
	C, L, NH, V := c.EmbedDim, c.Layers, c.Heads, c.VocabSize
	N := B * T
	layer := func(buf []float64, l, width int) []float64 { return buf[l*N*width : (l+1)*N*width] }

	// logits = lnf·head + bias (or lnf·wteᵀ when tied)
	if c.TiedHead {
		clear(a.dln)
		gemmNNParallel(g.tokenEmbedding, C, a.dlogits, 1, V, a.lnf, C, V, C, N) // dwte += dlogitsᵀ·lnf
		gemmNNParallel(a.dln, C, a.dlogits, V, 1, p.tokenEmbedding, C, N, C, V) // dlnf = dlogits·wte
	} else {
		matmulBackwardSet(a.dln, g.headWeight, g.headBias, a.dlogits, a.lnf, p.headWeight, nil, N, C, V)
	}
	clear(a.dresid)
	layernormBackward(a.dresid, g.lnfGain, g.lnfBias, a.dln, layer(a.resid3, L-1, C), p.lnfGain, a.lnfMean, a.lnfRstd, N, C)

	for l := L - 1; l >= 0; l-- {
		in := a.encoded
		if l > 0 {
			in = layer(a.resid3, l-1, C)
		}
		// resid3 = resid2 + relu(ln2·fc + b)·fcProj + b
		matmulBackwardSet(a.dfc, g.fcProjWeight[l*4*C*C:], g.fcProjBias[l*C:], a.dresid, layer(a.fcAct, l, 4*C), p.fcProjWeight[l*4*C*C:], layer(a.fcPre, l, 4*C), N, 4*C, C)
		matmulBackwardSet(a.dln, g.fcWeight[l*C*4*C:], g.fcBias[l*4*C:], a.dfc, layer(a.ln2, l, C), p.fcWeight[l*C*4*C:], nil, N, C, 4*C)
		// ln2 = layernorm(resid2): its gradient joins the residual stream's.
		layernormBackward(a.dresid, g.ln2Gain[l*C:], g.ln2Bias[l*C:], a.dln, layer(a.resid2, l, C), p.ln2Gain[l*C:], layer(a.ln2Mean, l, 1), layer(a.ln2Rstd, l, 1), N, C)
		// resid2 = in + attention(ln1)·attnProj
		matmulBackwardSet(a.dattnOut, g.attnProjWeight[l*C*C:], nil, a.dresid, layer(a.attnOut, l, C), p.attnProjWeight[l*C*C:], nil, N, C, C)
		clear(a.dqkv)
		attentionBackward(a.dqkv, a.datt, a.dattnOut, layer(a.qkv, l, 3*C), a.att[l*B*NH*T*T:(l+1)*B*NH*T*T], B, T, C, NH)
		matmulBackwardSet(a.dln, g.qkvWeight[l*C*3*C:], nil, a.dqkv, layer(a.ln1, l, C), p.qkvWeight[l*C*3*C:], nil, N, C, 3*C)
		layernormBackward(a.dresid, g.ln1Gain[l*C:], g.ln1Bias[l*C:], a.dln, in, p.ln1Gain[l*C:], layer(a.ln1Mean, l, 1), layer(a.ln1Rstd, l, 1), N, C)
	}
	// encoded = wte[idx] + wpe
	encoderBackward(g.tokenEmbedding, g.positionEmbedding, a.dresid, idx, B, T, C)
}
