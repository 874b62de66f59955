package minigpt

// This file holds the model's one forward pass, for training, scoring and
// every generation step alike, as the list of its layers, and the calls
// that run it on a batch of sequences (Logits and the loss).

import (
	"fmt"

	"example.org/minigpt/internal/decode"
	"example.org/minigpt/internal/nn"
)

// forward runs the model on the rows seqs describe, writing their
// activations, their keys and values into their cache slots (none in
// training: the activations' qkv is the batch's cache) and the logits of their wanted
// positions into a.logits, sequence after sequence; with targets (one per
// row, training only), each row's loss and dlogits for meanLoss and
// backward, and, with transpose, the weights' transposes for backward.
//
// Every row is computed by the same kernels in the same order whichever
// rows are computed with it, which is why a sequence decoded one position
// at a time, alone or beside others, gets the bits of a whole pass over
// it. In the last layer only the rows whose logits are wanted go on past
// the keys and values.
func (m *Model) forward(a *activations, seqs []rowSeq, targets []int, transpose bool) {
	c, p, j, s := m.cfg, &m.p, &a.jobs, &a.sched
	C, L := c.EmbedDim, c.Layers
	N, No := a.place(seqs)
	if targets != nil {
		a.ensureGradients(c)
	}
	a.weightsTReady = false
	s.begin()

	// x = wte[ids] + wpe[pos]
	j.encoder = nn.Encoder{Out: a.encoded, WTE: p.tokenEmbedding, WPE: p.positionEmbedding, IDs: a.ids, Pos: a.pos, C: C}
	s.chainRows(N, &j.encoder)
	x, rows := a.encoded, N
	for l := range L {
		w, act, lj := p.layer(l, c), a.layerOf(l, c), &j.layers[l]
		// h = layernorm(x); q, k, v = h·Wqkv, the keys and values to the cache
		lj.ln1 = nn.LayerNorm{Out: act.ln1, Mean: act.ln1Mean, Rstd: act.ln1Rstd, Inp: x, Weight: w.ln1Gain, Bias: w.ln1Bias, C: C}
		lj.qkv = nn.Matmul{Out: act.qkv, Inp: act.ln1, Weight: w.qkvWeight, C: C, OC: 3 * C}
		s.chainRows(N, &lj.ln1, &lj.qkv)
		if !a.keep {
			lj.store = kvStore{seqs: seqs, qkv: act.qkv, layer: l * c.BlockSize * 3 * C, C3: 3 * C}
			s.chainRows(N, &lj.store)
		}
		if transpose {
			s.with(a.transposeQKV(m, l))
		}

		// y = softmax(q·kᵀ/√hs over the positions so far)·v, head by head;
		// in the last layer only the rows whose logits are wanted go on.
		onlyOut := l == L-1 && No < N
		s.run(m.attention(a, l, seqs, onlyOut))
		if onlyOut {
			j.gather = gatherJob{dst: a.gather, src: x, seqs: seqs, C: C}
			s.with(&j.gather)
			x, rows = a.gather, No
		}

		// x = x + y·Wproj;  x = x + relu(layernorm(x)·Wfc + bfc)·Wfcproj + bfcproj
		lj.proj = nn.Matmul{Out: act.resid2, Inp: act.attnOut, Weight: w.attnProjWeight, Residual: x, C: C, OC: C}
		lj.ln2 = nn.LayerNorm{Out: act.ln2, Mean: act.ln2Mean, Rstd: act.ln2Rstd, Inp: act.resid2, Weight: w.ln2Gain, Bias: w.ln2Bias, C: C}
		lj.fc = nn.Matmul{Out: act.fcAct, Inp: act.ln2, Weight: w.fcWeight, Bias: w.fcBias, ReLU: true, C: C, OC: 4 * C}
		lj.fcProj = nn.Matmul{Out: act.resid3, Inp: act.fcAct, Weight: w.fcProjWeight, Bias: w.fcProjBias, Residual: act.resid2, C: 4 * C, OC: C}
		s.chainRows(rows, &lj.proj, &lj.ln2, &lj.fc, &lj.fcProj)
		if transpose {
			s.with(a.transposeMLP(m, l))
		}
		x = act.resid3
	}

	// logits = layernorm(x)·Whead + bhead (tied: layernorm(x)·wteᵀ)
	j.lnf = nn.LayerNorm{Out: a.lnf, Mean: a.lnfMean, Rstd: a.lnfRstd, Inp: x, Weight: p.lnfGain, Bias: p.lnfBias, C: C}
	if c.TiedHead {
		j.headT = nn.MatmulT{Out: a.logits, Inp: a.lnf, Weight: p.tokenEmbedding, C: C, OC: c.VocabSize}
		s.chainRows(rows, &j.lnf, &j.headT)
	} else {
		j.head = nn.Matmul{Out: a.logits, Inp: a.lnf, Weight: p.headWeight, Bias: p.headBias, C: C, OC: c.VocabSize}
		s.chainRows(rows, &j.lnf, &j.head)
	}
	// loss = -log softmax(logits)[target], and dlogits
	if targets != nil {
		j.loss = nn.CrossEntropy{Losses: a.losses, DLogits: a.dlogits, Logits: a.logits, Targets: targets, N: rows, V: c.VocabSize}
		s.chainRows(rows, &j.loss)
	}
	s.end()
	a.weightsTReady = transpose
}

// place lays the sequences' rows end to end, each row's token and
// position, and returns the pass's rows and rows of logits.
func (a *activations) place(seqs []rowSeq) (N, No int) {
	for i := range seqs {
		s := &seqs[i]
		s.row, s.outRow = N, No
		if N+s.T1-s.T0 > a.N {
			panic("minigpt: a forward pass of more rows than its buffers hold")
		}
		for t := s.T0; t < s.T1; t++ {
			a.ids[N], a.pos[N] = s.IDs[t-s.T0], t
			N++
		}
		No += s.T1 - s.Out0
	}
	if a.keep && (N != a.N || No != N) {
		panic("minigpt: a training pass must compute every row of its batch")
	}
	return N, No
}

// attention returns layer l's attention over the sequences' query rows
// (with onlyOut, only those whose logits are wanted), each against its
// keys and values: its cache slot's, or in training the batch's own rows.
func (m *Model) attention(a *activations, l int, seqs []rowSeq, onlyOut bool) *nn.Attention {
	c, lj := m.cfg, &a.jobs.layers[l]
	C, NH, T := c.EmbedDim, c.Heads, c.BlockSize
	if a.keep {
		T = a.T // training: the batch's (B, NH, T, T) weights, as backward reads them
	}
	C3, act := 3*C, a.layerOf(l, c)
	if cap(lj.aseqs) < len(seqs) {
		lj.aseqs = make([]nn.AttentionSeq, len(seqs))
	}
	lj.aseqs = lj.aseqs[:len(seqs)]
	for i := range seqs {
		s := &seqs[i]
		// The first query position and the row its output goes to: in
		// the last layer of a pass that wants fewer logits than rows, the
		// rows of logits.
		q0, row := s.T0, s.row
		if onlyOut {
			q0, row = s.Out0, s.outRow
		}
		qRow := s.row + q0 - s.T0  // the first query's row of qkv
		keys := act.qkv[s.row*C3:] // training: the batch's own rows are its cache
		if s.Cache != nil {
			keys = s.Cache[l*c.BlockSize*C3:][:s.T1*C3]
		}
		var last []float64
		if s.Att != nil {
			last = s.Att[l*NH*c.BlockSize:]
		}
		lj.aseqs[i] = nn.AttentionSeq{Q: act.qkv[qRow*C3:], KV: keys, Out: act.attnOut[row*C:], Att: act.att[row*NH*T:], Last: last, T0: q0, T1: s.T1}
	}
	lj.attn = nn.Attention{Seqs: lj.aseqs, C: C, NH: NH, LdAtt: T, LdLast: c.BlockSize}
	return &lj.attn
}

// forwardBatch runs a training-shaped pass: B sequences of T tokens (idx,
// row-major), every position's logits, with targets each row's loss.
func (m *Model) forwardBatch(a *activations, idx, targets []int, transpose bool) {
	T := a.T
	for b := range a.seqs {
		a.seqs[b] = rowSeq{Seq: decode.Seq{IDs: idx[b*T : (b+1)*T], T0: 0, T1: T, Out0: 0}}
	}
	m.forward(a, a.seqs, targets, transpose)
}

// Logits runs the model on B sequences of T tokens (idx holds B·T ids,
// row-major) and returns the (B, T, V) logits. T may be at most BlockSize.
// Errors wrap ErrBadOption (a nil model, a shape) or ErrBadText (an id
// outside the vocabulary).
func (m *Model) Logits(idx []int, B, T int) ([]float64, error) {
	if err := m.checkBatch(idx, nil, B, T); err != nil {
		return nil, fmt.Errorf("logits: %w", err)
	}
	m.use.RLock()
	defer m.use.RUnlock()
	a, release := lendActivations(m.cfg, B, T)
	defer release()
	m.forwardBatch(a, idx, nil, false)
	return append([]float64(nil), a.logits...), nil
}

// loss runs the model on B sequences of T tokens and returns the mean
// cross-entropy of predicting targets (also B·T ids) over all B·T
// positions. It computes -log softmax exactly (the lessons add 1e-12 inside
// the log; the difference is below 1e-11 for any probability it matters
// for).
func (m *Model) loss(idx, targets []int, B, T int) (float64, error) {
	if err := m.checkBatch(idx, targets, B, T); err != nil {
		return 0, fmt.Errorf("loss: %w", err)
	}
	m.use.RLock()
	defer m.use.RUnlock()
	a, release := lendActivations(m.cfg, B, T)
	defer release()
	m.forwardBatch(a, idx, targets, false)
	return a.meanLoss(), nil
}

// checkBatch checks a (B, T) batch of inputs and, if not nil, targets.
func (m *Model) checkBatch(idx, targets []int, B, T int) error {
	if m == nil {
		return fmt.Errorf("%w: nil model", ErrBadOption)
	}
	if B < 1 || T < 1 || T > m.cfg.BlockSize {
		return fmt.Errorf("%w: batch shape (%d, %d): need B >= 1 and 1 <= T <= block size %d", ErrBadOption, B, T, m.cfg.BlockSize)
	}
	if len(idx) != B*T {
		return fmt.Errorf("%w: batch shape (%d, %d) needs %d input ids, got %d", ErrBadOption, B, T, B*T, len(idx))
	}
	if err := m.checkTokens(idx, "inputs"); err != nil {
		return fmt.Errorf("%w: %w", ErrBadText, err)
	}
	if targets != nil {
		if len(targets) != B*T {
			return fmt.Errorf("%w: batch shape (%d, %d) needs %d targets, got %d", ErrBadOption, B, T, B*T, len(targets))
		}
		if err := m.checkTokens(targets, "targets"); err != nil {
			return fmt.Errorf("%w: %w", ErrBadText, err)
		}
	}
	return nil
}

// pass is the forward pass as a decoder runs it (a decode.Pass): m over
// a step's sequences, in activations grown to the most rows a step has
// needed.
type pass struct {
	m    *Model
	a    *activations
	seqs []rowSeq
}

// Forward runs seqs, rows positions in all, and returns their logits.
func (p *pass) Forward(seqs []decode.Seq, rows int) []float64 {
	if p.a == nil || p.a.N < rows {
		p.a = newActivations(p.m.cfg, rows, false)
	}
	p.seqs = p.seqs[:0]
	for _, s := range seqs {
		p.seqs = append(p.seqs, rowSeq{Seq: s})
	}
	p.m.forward(p.a, p.seqs, nil, false)
	return p.a.logits
}
