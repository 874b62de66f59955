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
	fcAct   []float64 // (L, B, T, 4C) relu(ln2·fc + b), computed in place:
	// backward needs only it, as relu(x) > 0 exactly where x > 0
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
	dresid2  []float64 // (B, T, C) the residual stream's gradient, second buffer
	dln2     []float64 // (B, T, C) gradient of ln2's output (dln: of ln1's and lnf's)

	// weightsT holds, per layer (12·C² each), the transposes of the
	// weights the input gradients multiply by: qkvᵀ (3C, C), attnProjᵀ
	// (C, C), fcᵀ (4C, C), fcProjᵀ (C, 4C) (see inputGradJob). A forward
	// pass with transposeWeights set makes them, each beside the
	// section whose products read that weight (so the weight is read
	// while the section keeps it in the cache; no section waits for
	// them). They are memory traffic, not arithmetic: 0.7% of a
	// one-thread seed step, 2.5% at the baby config, whose 6 MB of
	// weights do not stay in the cache (non-temporal stores halved the
	// transposes' own time there but slowed backward's reads as much:
	// not kept). weightsTReady says they match the parameters; backward
	// makes them itself otherwise.
	weightsT         []float64
	transposes       []transposeJob // per forward section: 0 has qkv(0), l+1 the rest of layer l and qkv(l+1)
	transposeWeights bool           // set by the caller: the next forward pass makes weightsT
	weightsTReady    bool

	jobs passJobs // the parallel sections' job descriptions, reused
}

// passJobs holds the jobs of one parallel section of a pass: the passes
// fill them in and hand pointers to plan, so that no section allocates.
// One section runs at a time per activations.
type passJobs struct {
	plan    plan
	chain   rowChain
	enc     encoderJob
	ln      [2]layernormJob // in the chain
	cols    [2]layernormJob // LayerNorm weight and bias gradients
	mm      [4]gemmNNJob
	wg      [4]weightGradJob // whole, or first halves (setWeightGradHalves)
	wgEnd   [4]weightGradJob // second halves
	wgH     [4]halves
	ig      [4]inputGradJob
	cs      [2]columnSumJob // whole, or first halves
	csEnd   [2]columnSumJob
	csH     [2]halves
	colsEnd [2]layernormJob
	colsH   [2]halves
	encEnd  encoderJob
	encH    halves
	nt      gemmNTJob
	attn    attentionJob
	ce      crossEntropyJob
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
		fcAct:  f(L * BT * 4 * C),
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
	a.dresid2 = make([]float64, BT*C)
	a.dln2 = make([]float64, BT*C)
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
		a.transposes = make([]transposeJob, L+1)
	}
	for s := range a.transposes {
		a.transposes[s].parts = a.transposes[s].parts[:0]
	}
	for l := 0; l < L; l++ {
		qkvT, attnProjT, fcT, fcProjT := a.weightsTOf(l, C)
		a.transposes[l].parts = append(a.transposes[l].parts,
			transposePart{dst: qkvT, src: p.qkvWeight[l*C*3*C : (l+1)*C*3*C], R: C, W: 3 * C})
		a.transposes[l+1].parts = append(a.transposes[l+1].parts,
			transposePart{dst: attnProjT, src: p.attnProjWeight[l*C*C : (l+1)*C*C], R: C, W: C},
			transposePart{dst: fcT, src: p.fcWeight[l*C*4*C : (l+1)*C*4*C], R: C, W: 4 * C},
			transposePart{dst: fcProjT, src: p.fcProjWeight[l*4*C*C : (l+1)*4*C*C], R: 4 * C, W: C})
	}
}

// transposeCost is a transposed element's cost in multiply-adds (the
// plan's unit): a load and a store that miss the cache in turn take
// about as long as 32 of the kernels' multiply-adds.
const transposeCost = 32

// weightsTOf returns layer l's transposed weights in a.weightsT.
func (a *activations) weightsTOf(l, C int) (qkv, attnProj, fc, fcProj []float64) {
	w := a.weightsT[l*12*C*C : (l+1)*12*C*C]
	return w[:3*C*C], w[3*C*C : 4*C*C], w[4*C*C : 8*C*C], w[8*C*C:]
}

// forward runs the model on idx (B·T ids, row-major) for positions
// [t0, t1) of every sequence, writing activations and logits for those
// rows, and, when targets is not nil (full rows only), each row's loss
// and dlogits (see crossEntropyJob) for meanLoss and backward.
// Training uses t0 = 0, t1 = T. The generator (B = 1) uses t0 > 0 to
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
//
// Everything between two attentions works on each row alone (embeddings,
// projections, LayerNorms, the feed-forward network, residual adds, the
// head, the loss), so each such stretch is one parallel section
// (rowChain): a pass has 2L+1 sections, and a chunk of rows goes through
// a whole stretch in one core's cache.
func (m *Model) forward(a *activations, idx, targets []int, t0, t1, outFrom int) {
	c, p := m.cfg, m.p
	B, T := a.B, a.T
	C, L, NH := c.EmbedDim, c.Layers, c.Heads
	BT := B * T
	if B > 1 && (t0 != 0 || t1 != T || outFrom != 0) {
		panic("minigpt: partial rows need a single sequence")
	}
	if targets != nil && (t0 != 0 || t1 != T || outFrom != 0) {
		panic("minigpt: a loss needs full rows")
	}
	if targets != nil {
		a.ensureGradients(c)
	}
	transpose := targets != nil && a.transposeWeights
	a.transposeWeights, a.weightsTReady = false, false
	if transpose {
		m.setTransposes(a)
	}
	// extra is section s's transposes, or nil.
	extra := func(s int) *transposeJob {
		if !transpose {
			return nil
		}
		return &a.transposes[s]
	}
	r0, nr := t0, t1-t0 // first row and row count (B == 1 or the whole batch)
	if B > 1 {
		r0, nr = 0, BT
	}
	rows := func(buf []float64, l, width int) []float64 {
		return buf[(l*BT+r0)*width : (l*BT+r0+nr)*width]
	}
	residIn := func(l int) []float64 { // the residual stream entering layer l
		if l == 0 {
			return rows(a.encoded, 0, C)
		}
		return rows(a.resid3, l-1, C)
	}
	j := &a.jobs

	// encoded = wte[idx] + wpe, then layer 0's ln1 and qkv.
	j.chain.reset()
	j.enc = encoderJob{out: a.encoded, idx: idx, wte: p.tokenEmbedding, wpe: p.positionEmbedding, T: T, t0: t0, t1: t1, C: C}
	j.chain.add(&j.enc)
	cost := C + m.chainAttentionInputs(a, 0, residIn(0), rows)
	j.runChain(nr, cost, extra(0))

	for l := 0; l < L; l++ {
		if l == L-1 && outFrom > t0 {
			// Only rows [outFrom, t1) go on past the keys and values.
			t0, r0, nr = outFrom, outFrom, t1-outFrom
		}
		attentionForward(a.attnOut[l*BT*C:], a.att[l*B*NH*T*T:], a.qkv[l*BT*3*C:], B, T, t0, t1, C, NH)

		// resid2 = in + attnOut·attnProj
		// resid3 = resid2 + relu(layernorm(resid2)·fc + b)·fcProj + b
		// then the next layer's ln1 and qkv, or the head.
		in, attnOut, resid2 := residIn(l), rows(a.attnOut, l, C), rows(a.resid2, l, C)
		ln2, fcAct, resid3 := rows(a.ln2, l, C), rows(a.fcAct, l, 4*C), rows(a.resid3, l, C)
		j.chain.reset()
		j.mm[0] = gemmNNJob{c: resid2, ldc: C, a: attnOut, ai: C, ak: 1, b: p.attnProjWeight[l*C*C:], ldb: C, n: C, k: C, init: true, res: in}
		j.ln[0] = layernormJob{out: ln2, mean: rows(a.ln2Mean, l, 1), rstd: rows(a.ln2Rstd, l, 1), inp: resid2, weight: p.ln2Gain[l*C : (l+1)*C], bias: p.ln2Bias[l*C : (l+1)*C], C: C}
		j.mm[1] = gemmNNJob{c: fcAct, ldc: 4 * C, a: ln2, ai: C, ak: 1, b: p.fcWeight[l*C*4*C:], ldb: 4 * C, n: 4 * C, k: C, init: true, bias: p.fcBias[l*4*C : (l+1)*4*C], act: fcAct}
		j.mm[2] = gemmNNJob{c: resid3, ldc: C, a: fcAct, ai: 4 * C, ak: 1, b: p.fcProjWeight[l*4*C*C:], ldb: C, n: C, k: 4 * C, init: true, bias: p.fcProjBias[l*C : (l+1)*C], res: resid2}
		j.chain.add(&j.mm[0])
		j.chain.add(&j.ln[0])
		j.chain.add(&j.mm[1])
		j.chain.add(&j.mm[2])
		cost := C*C + 8*C + 8*C*C
		if l+1 < L {
			cost += m.chainAttentionInputs(a, l+1, resid3, rows)
		} else {
			cost += m.chainHead(a, resid3, targets, rows)
		}
		j.runChain(nr, cost, extra(l+1))
	}
	a.weightsTReady = transpose
}

// chainAttentionInputs adds layer l's ln1 = layernorm(in) and qkv =
// ln1·qkvWeight to the chain and returns their cost per row.
func (m *Model) chainAttentionInputs(a *activations, l int, in []float64, rows func([]float64, int, int) []float64) int {
	C, p, j := m.cfg.EmbedDim, m.p, &a.jobs
	ln1 := rows(a.ln1, l, C)
	j.ln[1] = layernormJob{out: ln1, mean: rows(a.ln1Mean, l, 1), rstd: rows(a.ln1Rstd, l, 1), inp: in, weight: p.ln1Gain[l*C : (l+1)*C], bias: p.ln1Bias[l*C : (l+1)*C], C: C}
	j.mm[3] = gemmNNJob{c: rows(a.qkv, l, 3*C), ldc: 3 * C, a: ln1, ai: C, ak: 1, b: p.qkvWeight[l*C*3*C:], ldb: 3 * C, n: 3 * C, k: C, init: true}
	j.chain.add(&j.ln[1])
	j.chain.add(&j.mm[3])
	return 8*C + 3*C*C
}

// chainHead adds lnf = layernorm(in), logits = lnf·head + bias (lnf·wteᵀ
// when tied) and, with targets, the loss rows to the chain and returns
// their cost per row.
func (m *Model) chainHead(a *activations, in []float64, targets []int, rows func([]float64, int, int) []float64) int {
	c, p, j := m.cfg, m.p, &a.jobs
	C, V := c.EmbedDim, c.VocabSize
	lnf, logits := rows(a.lnf, 0, C), rows(a.logits, 0, V)
	j.ln[1] = layernormJob{out: lnf, mean: rows(a.lnfMean, 0, 1), rstd: rows(a.lnfRstd, 0, 1), inp: in, weight: p.lnfGain[:C], bias: p.lnfBias[:C], C: C}
	j.chain.add(&j.ln[1])
	if c.TiedHead {
		// logits = lnf · wteᵀ: dot products along the embedding rows.
		j.nt = gemmNTJob{c: logits, ldc: V, a: lnf, lda: C, b: p.tokenEmbedding, ldb: C, n: V, k: C, set: true}
		j.chain.add(&j.nt)
	} else {
		j.mm[3] = gemmNNJob{c: logits, ldc: V, a: lnf, ai: C, ak: 1, b: p.headWeight, ldb: V, n: V, k: C, init: true, bias: p.headBias[:V]}
		j.chain.add(&j.mm[3])
	}
	cost := 8*C + C*V
	if targets != nil {
		j.ce = crossEntropyJob{losses: a.losses, dlogits: a.dlogits, logits: a.logits, targets: targets, N: a.B * a.T, V: V}
		j.chain.add(&j.ce)
		cost += 4 * V
	}
	return cost
}

// runChain runs the chain over n rows as one parallel section, beside
// the transposes tj (when not nil).
func (j *passJobs) runChain(n, cost int, tj *transposeJob) {
	j.plan.reset()
	j.plan.addRows(&j.chain, n, 4, cost)
	if tj != nil {
		tj.add(&j.plan)
	}
	j.plan.execute()
}

// meanLoss is the mean of the losses the last forward pass with targets
// wrote, summed in row order.
func (a *activations) meanLoss() float64 {
	N := a.B * a.T
	total := 0.0
	for _, l := range a.losses[:N] {
		total += l
	}
	return total / float64(N)
}

// backward writes into grads (laid out like Params) the gradient of the
// mean loss of the last forward pass with targets over the whole batch.
// Every element of grads is set, none accumulated into, so the slab
// needs no clearing first (TestBackwardSetsEveryGradient).
//
// Its parallel sections (2L+3) pair the two kinds of work: the input
// gradients run row-wise from one attention back to the one before
// (rowChain), while the weight gradients of the layers just passed,
// which need every row, run beside the next section's chain or the
// attention's heads; no task of a section reads what another writes.
// The row tasks go in with addRows, the sums over rows in halves, so
// that at two threads each core keeps to its half of the batch (plan).
// The residual stream's gradient alternates between two buffers, so that
// a weight gradient still reading one value of it is never overwritten
// by the next.
func (m *Model) backward(a *activations, grads []float64, idx []int) {
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
	j, pl := &a.jobs, &a.jobs.plan
	// dW = inpᵀ·dout in blocks of its rows and columns (weightGradJob),
	// or in two halves over the rows (weightGradInHalves): the first
	// half's pieces go before the section's other tasks, so to the first
	// region, the second's after them, to the last (setWeightGradHalves).
	weightGrad := func(k int, dw, inp, dout []float64, C, OC int) {
		if !weightGradInHalves(N, C, OC) {
			items := j.wg[k].set(dw, inp, dout, N, C, OC)
			pl.add(&j.wg[k], items, 1, N*OC*C/items)
			return
		}
		items := setWeightGradHalves(&j.wg[k], &j.wgEnd[k], dw, inp, dout, N, C, OC)
		pl.addHalves(&j.wgH[k], &j.wg[k], &j.wgEnd[k], items, 1, (N+1)/2*OC*C/items)
	}
	// The other sums over the rows (column sums, a LayerNorm's weight
	// and bias gradients, the encoder's backward) likewise run in halves
	// at two threads (rowsInHalves), the second half's chains going on
	// from row h where the first's stopped.
	h := N / 2
	columnSum := func(k int, sum, rows []float64, W int) {
		if !rowsInHalves(N) {
			j.cs[k] = columnSumJob{sum: sum[:W], rows: rows, N: N, W: W, set: true}
			pl.add(&j.cs[k], W, 8, N)
			return
		}
		j.cs[k] = columnSumJob{sum: sum[:W], rows: rows[:h*W], N: h, W: W, set: true}
		j.csEnd[k] = columnSumJob{sum: sum[:W], rows: rows[h*W : N*W], N: N - h, W: W}
		pl.addHalves(&j.csH[k], &j.cs[k], &j.csEnd[k], W, 8, N-h)
	}
	// A LayerNorm's weight and bias gradients (j.cols[k], described by
	// lnBackward in the section before).
	lnColumns := func(k int) {
		cols := &j.cols[k]
		if !rowsInHalves(N) {
			pl.add(cols, C, 4, 3*N)
			return
		}
		end := &j.colsEnd[k]
		*end = *cols
		end.dout, end.inp, end.mean, end.rstd, end.N, end.set = cols.dout[h*C:], cols.inp[h*C:], cols.mean[h:], cols.rstd[h:], N-h, false
		cols.N = h
		pl.addHalves(&j.colsH[k], cols, end, C, 4, 3*(N-h))
	}
	// LayerNorm backward: rows in the chain (dinp = start + ...), the
	// weight and bias gradients (column sums) in a later section.
	lnBackward := func(row, cols *layernormJob, dinp, start, dweight, dbias, dout, inp, weight, mean, rstd []float64) {
		*row = layernormJob{phase: lnBackwardRows, dinp: dinp, start: start, set: true, dweight: dweight[:C], dbias: dbias[:C], dout: dout, inp: inp, weight: weight[:C], mean: mean, rstd: rstd, N: N, C: C}
		*cols = *row
		cols.phase = lnBackwardColumns
		j.chain.add(row)
	}

	// The layers' weights transposed for their input gradients: made by
	// the forward pass when its caller asked (transposeWeights), here
	// otherwise.
	if !a.weightsTReady {
		m.setTransposes(a)
		for s := range a.transposes {
			pl.reset()
			a.transposes[s].add(pl)
			pl.execute()
		}
	}
	defer func() { a.weightsTReady = false }() // the update will change the weights

	// The head: dlnf = dlogits·headᵀ (dlogits·wte when tied), then
	// dresid = lnf's input gradient; beside them, the head's gradient.
	pl.reset()
	j.chain.reset()
	cur := a.dresid
	if c.TiedHead {
		j.mm[0] = gemmNNJob{c: a.dln, ldc: C, a: a.dlogits, ai: V, ak: 1, b: p.tokenEmbedding, ldb: C, n: C, k: V, init: true}
		j.chain.add(&j.mm[0])
		// dwte = dlogitsᵀ·lnf (the encoder adds its part later)
		j.mm[1] = gemmNNJob{c: g.tokenEmbedding, ldc: C, a: a.dlogits, ai: 1, ak: V, b: a.lnf, ldb: C, n: C, k: N, init: true}
		pl.add(&j.mm[1], V, 4, N*C)
	} else {
		j.ig[0] = inputGradJob{dinp: a.dln, dout: a.dlogits, weight: p.headWeight, C: C, OC: V}
		j.chain.add(&j.ig[0])
		weightGrad(1, g.headWeight, a.lnf, a.dlogits, C, V)
		columnSum(0, g.headBias, a.dlogits, V)
	}
	lnBackward(&j.ln[0], &j.cols[1], cur, nil, g.lnfGain, g.lnfBias, a.dln, layer(a.resid3, L-1, C), p.lnfGain, a.lnfMean, a.lnfRstd)
	pl.addRows(&j.chain, N, 4, C*V+8*C)
	pl.execute()
	ln1Pending := true // j.cols[1]'s column sums: lnf's, then a layer's ln1

	for l := L - 1; l >= 0; l-- {
		pl.reset()
		j.chain.reset()
		chainCost := 0
		r1 := cur // the residual gradient after layer l+1's ln1
		if l < L-1 {
			// Layer l+1's ln1 and qkv, whose dqkv the last section made:
			// dln = dqkv·qkvᵀ, r1 = cur + ln1's input gradient.
			k := l + 1
			r1 = other(cur)
			qkvT, _, _, _ := a.weightsTOf(k, C)
			j.ig[3] = inputGradJob{dinp: a.dln, dout: a.dqkv, weightT: qkvT, C: C, OC: 3 * C}
			j.chain.add(&j.ig[3])
			lnBackward(&j.ln[1], &j.cols[1], r1, cur, g.ln1Gain[k*C:], g.ln1Bias[k*C:], a.dln, in(k), p.ln1Gain[k*C:], layer(a.ln1Mean, k, 1), layer(a.ln1Rstd, k, 1))
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
		j.ig[0] = inputGradJob{dinp: a.dfc, dout: r1, weightT: fcProjT, relu: layer(a.fcAct, l, 4*C), C: 4 * C, OC: C}
		j.ig[1] = inputGradJob{dinp: a.dln2, dout: a.dfc, weightT: fcT, C: C, OC: 4 * C}
		j.chain.add(&j.ig[0])
		j.chain.add(&j.ig[1])
		lnBackward(&j.ln[0], &j.cols[0], r2, r1, g.ln2Gain[l*C:], g.ln2Bias[l*C:], a.dln2, layer(a.resid2, l, C), p.ln2Gain[l*C:], layer(a.ln2Mean, l, 1), layer(a.ln2Rstd, l, 1))
		j.ig[2] = inputGradJob{dinp: a.dattnOut, dout: r2, weightT: attnProjT, C: C, OC: C}
		j.chain.add(&j.ig[2])
		chainCost += 9*C*C + 8*C
		pl.addRows(&j.chain, N, 4, chainCost)
		pl.execute()

		// Layer l's attention, backward (dqkv set, head by head), beside
		// the weight gradients of the chain just run.
		pl.reset()
		j.attn = attentionJob{backward: true, set: true, out: a.dattnOut, att: a.att[l*B*NH*T*T : (l+1)*B*NH*T*T], qkv: layer(a.qkv, l, 3*C), dqkv: a.dqkv, datt: a.datt, T: T, t0: 0, t1: T, C: C, NH: NH}
		pl.addRows(&j.attn, B*NH, 1, 2*T*T*hs)
		weightGrad(0, g.fcProjWeight[l*4*C*C:], layer(a.fcAct, l, 4*C), r1, 4*C, C)
		columnSum(0, g.fcProjBias[l*C:], r1, C)
		weightGrad(1, g.fcWeight[l*C*4*C:], layer(a.ln2, l, C), a.dfc, C, 4*C)
		columnSum(1, g.fcBias[l*4*C:], a.dfc, 4*C)
		weightGrad(2, g.attnProjWeight[l*C*C:], layer(a.attnOut, l, C), r2, C, C)
		lnColumns(0) // ln2's
		if ln1Pending {
			lnColumns(1) // layer l+1's ln1
		}
		pl.execute()
		cur = r2
	}

	// Layer 0's ln1 and qkv, beside qkv's weight gradient.
	pl.reset()
	j.chain.reset()
	r1 := other(cur)
	qkvT, _, _, _ := a.weightsTOf(0, C)
	j.ig[3] = inputGradJob{dinp: a.dln, dout: a.dqkv, weightT: qkvT, C: C, OC: 3 * C}
	j.chain.add(&j.ig[3])
	lnBackward(&j.ln[1], &j.cols[1], r1, cur, g.ln1Gain, g.ln1Bias, a.dln, a.encoded, p.ln1Gain, layer(a.ln1Mean, 0, 1), layer(a.ln1Rstd, 0, 1))
	pl.addRows(&j.chain, N, 4, 3*C*C+8*C)
	weightGrad(3, g.qkvWeight, layer(a.ln1, 0, C), a.dqkv, C, 3*C)
	pl.execute()

	// encoded = wte[idx] + wpe, beside ln1's column sums.
	pl.reset()
	j.enc = encoderJob{backward: true, setWte: !c.TiedHead, setWpe: true, dwte: g.tokenEmbedding, dwpe: g.positionEmbedding, dout: r1, idx: idx, B: B, T: T, C: C, n1: N}
	if rowsInHalves(N) {
		j.encEnd = j.enc
		j.enc.n1, j.encEnd.n0, j.encEnd.setWte, j.encEnd.setWpe = h, h, false, false
		pl.addHalves(&j.encH, &j.enc, &j.encEnd, C, 8, 2*(N-h))
	} else {
		pl.add(&j.enc, C, 8, 2*N)
	}
	lnColumns(1)
	pl.execute()
}
