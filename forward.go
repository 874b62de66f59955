package minigpt

// This file holds the model's one forward pass: for training, the prompt
// and every cached decoding step alike, over rows of any sequences at any
// positions against their KV caches.

import (
	"fmt"

	"example.org/minigpt/internal/nn"
	"example.org/minigpt/internal/par"
)

// rowSeq is one sequence's part of a forward pass: the rows of its
// positions [t0, t1), whose keys and values join those of positions
// [0, t0) in its cache slot, and whose logits are wanted from position
// out0 on (out0 == t1: none; the pass only fills the cache). Positions
// count from the start of the sequence's window, as the lessons'
// ids[-block_size:] does.
type rowSeq struct {
	slot   int   // the sequence's slot in the KV cache
	ids    []int // the tokens at positions [t0, t1)
	t0, t1 int
	out0   int
	// att, if not nil, receives the attention weights of the last
	// position, t1-1, in every layer and head: (L, NH, T), row (l, h)
	// holding its weights over positions [0, t1).
	att []float64

	row, outRow int // set by forward: the sequence's first row, and first row of logits
}

// kvCache holds the queries, keys and values of every position of S
// sequence slots, layer by layer: (L, S, T, 3C). A slot's rows are the
// qkv rows of its positions, so attention reads its keys and values from
// here, whether a pass computed them or an earlier one did.
type kvCache struct {
	buf    []float64
	S, T   int
	C3, L  int
	layers int // a layer's stride: S·T·3C
}

func newKVCache(c Config, S int) *kvCache {
	C3, T := 3*c.EmbedDim, c.BlockSize
	return &kvCache{buf: make([]float64, c.Layers*S*T*C3), S: S, T: T, C3: C3, L: c.Layers, layers: S * T * C3}
}

// rows returns slot's rows [t0, t1) at layer l.
func (kv *kvCache) rows(l, slot, t0, t1 int) []float64 {
	base := l*kv.layers + slot*kv.T*kv.C3
	return kv.buf[base+t0*kv.C3 : base+t1*kv.C3]
}

// copySlot makes slot dst's first n positions a copy of slot src's, in
// every layer.
func (kv *kvCache) copySlot(dst, src, n int) {
	for l := range kv.L {
		copy(kv.rows(l, dst, 0, n), kv.rows(l, src, 0, n))
	}
}

// passJobs holds the job descriptions of a pass: the passes fill them in
// and hand pointers to the scheduler, so that no section allocates. One
// section runs at a time per activations.
type passJobs struct {
	sec   par.Section
	chain par.Chain
	enc   nn.Encoder
	ln    [2]nn.LayerNorm
	mm    [4]nn.Matmul
	mmT   nn.MatmulT
	store kvStore
	attn  nn.Attention
	aseqs []nn.AttentionSeq
	gath  gatherJob
	ce    nn.CrossEntropy

	back backwardJobs
}

// forward runs the model on the rows seqs describe, writing their
// activations, their keys and values into kv (nil in training: the
// activations' qkv is the batch's cache) and the logits of their wanted
// positions into a.logits, sequence after sequence; with targets (one per
// row, training only), each row's loss and dlogits for meanLoss and
// backward, and, with transpose, the weights' transposes for backward.
//
// Every row is computed by the same kernels in the same order whichever
// rows are computed with it, which is why a sequence decoded one position
// at a time, alone or beside others, gets the bits of a whole pass over
// it.
//
// Everything between two attentions works on each row alone (embeddings,
// projections, LayerNorms, the feed-forward network, residual adds, the
// head, the loss), so each such stretch is one parallel section (a
// par.Chain): a pass has 2L+1 sections, and a chunk of rows goes through
// a whole stretch in one core's cache. In the last layer only the rows
// whose logits are wanted go on past the keys and values.
func (m *Model) forward(a *activations, kv *kvCache, seqs []rowSeq, targets []int, transpose bool) {
	c, p := m.cfg, m.p
	C, L := c.EmbedDim, c.Layers
	N, No := 0, 0 // rows, and rows of logits
	for i := range seqs {
		s := &seqs[i]
		s.row, s.outRow = N, No
		if N+s.t1-s.t0 > a.N {
			panic("minigpt: a forward pass of more rows than its buffers hold")
		}
		for t := s.t0; t < s.t1; t++ {
			a.ids[N], a.pos[N] = s.ids[t-s.t0], t
			N++
		}
		No += s.t1 - s.out0
	}
	if a.keep && (N != a.N || No != N) {
		panic("minigpt: a training pass must compute every row of its batch")
	}
	if targets != nil {
		a.ensureGradients(c)
	}
	a.weightsTReady = false
	if transpose {
		m.setTransposes(a)
	}
	j := &a.jobs
	if cap(j.aseqs) < len(seqs) {
		j.aseqs = make([]nn.AttentionSeq, len(seqs))
	}
	j.aseqs = j.aseqs[:len(seqs)]
	j.store = kvStore{kv: kv, seqs: seqs, C3: 3 * C}

	// x = wte[ids] + wpe[pos], then layer 0's ln1 and qkv.
	j.chain.Reset()
	j.enc = nn.Encoder{Out: a.encoded, WTE: p.tokenEmbedding, WPE: p.positionEmbedding, IDs: a.ids, Pos: a.pos, C: C}
	j.chain.Add(&j.enc)
	cost := C + m.chainAttentionInputs(a, 0, a.encoded[:N*C])
	m.runChain(a, N, cost, 0, transpose)

	for l := 0; l < L; l++ {
		last := l == L-1
		// The residual stream entering layer l, and the rows that go on:
		// in the last layer only those whose logits are wanted.
		in, rows := a.encoded, N
		if l > 0 {
			in = a.layer(a.resid3, l-1, C)
		}
		j.sec.Reset()
		if last && No < N {
			rows = No
			j.gath = gatherJob{dst: a.gather, src: in, seqs: seqs, C: C}
			j.sec.Add(&j.gath, len(seqs), 1, C)
			in = a.gather
		}
		m.addAttention(a, kv, l, seqs, last && No < N)
		j.sec.Run()
		m.captureAttention(a, l, seqs, last && No < N)

		// resid2 = in + attnOut·attnProj
		// resid3 = resid2 + relu(layernorm(resid2)·fc + b)·fcProj + b
		// then the next layer's ln1 and qkv, or the head.
		attnOut, resid2 := a.layer(a.attnOut, l, C), a.layer(a.resid2, l, C)
		ln2, fcAct, resid3 := a.layer(a.ln2, l, C), a.layer(a.fcAct, l, 4*C), a.layer(a.resid3, l, C)
		j.chain.Reset()
		j.mm[0] = nn.Matmul{Out: resid2, Inp: attnOut, Weight: p.attnProjWeight[l*C*C:], Residual: in, C: C, OC: C}
		j.ln[0] = nn.LayerNorm{Out: ln2, Mean: a.layer(a.ln2Mean, l, 1), Rstd: a.layer(a.ln2Rstd, l, 1), Inp: resid2, Weight: p.ln2Gain[l*C:], Bias: p.ln2Bias[l*C:], C: C}
		j.mm[1] = nn.Matmul{Out: fcAct, Inp: ln2, Weight: p.fcWeight[l*C*4*C:], Bias: p.fcBias[l*4*C:], ReLU: true, C: C, OC: 4 * C}
		j.mm[2] = nn.Matmul{Out: resid3, Inp: fcAct, Weight: p.fcProjWeight[l*4*C*C:], Bias: p.fcProjBias[l*C:], Residual: resid2, C: 4 * C, OC: C}
		j.chain.Add(&j.mm[0])
		j.chain.Add(&j.ln[0])
		j.chain.Add(&j.mm[1])
		j.chain.Add(&j.mm[2])
		cost := C*C + 8*C + 8*C*C
		if !last {
			cost += m.chainAttentionInputs(a, l+1, resid3[:rows*C])
		} else {
			cost += m.chainHead(a, resid3, rows, targets)
		}
		m.runChain(a, rows, cost, l+1, transpose)
	}
	a.weightsTReady = transpose
}

// chainAttentionInputs adds layer l's ln1 = layernorm(in) and qkv =
// ln1·qkvWeight to the chain, and the store of the keys and values into
// the cache, and returns their cost per row.
func (m *Model) chainAttentionInputs(a *activations, l int, in []float64) int {
	C, p, j := m.cfg.EmbedDim, m.p, &a.jobs
	ln1, qkv := a.layer(a.ln1, l, C), a.layer(a.qkv, l, 3*C)
	j.ln[1] = nn.LayerNorm{Out: ln1, Mean: a.layer(a.ln1Mean, l, 1), Rstd: a.layer(a.ln1Rstd, l, 1), Inp: in, Weight: p.ln1Gain[l*C:], Bias: p.ln1Bias[l*C:], C: C}
	j.mm[3] = nn.Matmul{Out: qkv, Inp: ln1, Weight: p.qkvWeight[l*C*3*C:], C: C, OC: 3 * C}
	j.chain.Add(&j.ln[1])
	j.chain.Add(&j.mm[3])
	if j.store.kv != nil {
		j.store.l, j.store.qkv = l, qkv
		j.chain.Add(&j.store)
	}
	return 8*C + 3*C*C
}

// chainHead adds lnf = layernorm(in), logits = lnf·head + bias (lnf·wteᵀ
// when tied) and, with targets, the loss rows to the chain, and returns
// their cost per row.
func (m *Model) chainHead(a *activations, in []float64, rows int, targets []int) int {
	c, p, j := m.cfg, m.p, &a.jobs
	C, V := c.EmbedDim, c.VocabSize
	j.ln[1] = nn.LayerNorm{Out: a.lnf, Mean: a.lnfMean, Rstd: a.lnfRstd, Inp: in, Weight: p.lnfGain, Bias: p.lnfBias, C: C}
	j.chain.Add(&j.ln[1])
	if c.TiedHead {
		j.mmT = nn.MatmulT{Out: a.logits, Inp: a.lnf, Weight: p.tokenEmbedding, C: C, OC: V}
		j.chain.Add(&j.mmT)
	} else {
		j.mm[3] = nn.Matmul{Out: a.logits, Inp: a.lnf, Weight: p.headWeight, Bias: p.headBias, C: C, OC: V}
		j.chain.Add(&j.mm[3])
	}
	cost := 8*C + C*V
	if targets != nil {
		j.ce = nn.CrossEntropy{Losses: a.losses, DLogits: a.dlogits, Logits: a.logits, Targets: targets, N: rows, V: V}
		j.chain.Add(&j.ce)
		cost += 4 * V
	}
	return cost
}

// addAttention adds layer l's attention over the sequences' query rows
// (with outOnly, only those whose logits are wanted) to the section.
func (m *Model) addAttention(a *activations, kv *kvCache, l int, seqs []rowSeq, outOnly bool) {
	c, j := m.cfg, &a.jobs
	C, NH, T := c.EmbedDim, c.Heads, c.BlockSize
	if a.keep {
		T = a.T // training: the batch's (B, NH, T, T) weights, as backward reads them
	}
	C3 := 3 * C
	qkv, out, att := a.layer(a.qkv, l, C3), a.layer(a.attnOut, l, C), a.layer(a.att, l, NH*T)
	cost := 0
	for i := range seqs {
		s := &seqs[i]
		// The first query position and the row its output goes to: in
		// the last layer of a pass that wants fewer logits than rows, the
		// rows of logits.
		q0, row := s.t0, s.row
		if outOnly {
			q0, row = s.out0, s.outRow
		}
		qRow := s.row + q0 - s.t0 // the first query's row of qkv
		keys := qkv[s.row*C3:]    // training: the batch's own rows are its cache
		if kv != nil {
			keys = kv.rows(l, s.slot, 0, s.t1)
		}
		j.aseqs[i] = nn.AttentionSeq{Q: qkv[qRow*C3:], KV: keys, Out: out[row*C:], Att: att[row*NH*T:], T0: q0, T1: s.t1}
		cost += (s.t1 - q0) * s.t1 * C / NH
	}
	j.attn = nn.Attention{Seqs: j.aseqs, C: C, NH: NH, LdAtt: T}
	j.sec.Add(&j.attn, len(seqs)*NH, 1, cost/max(len(seqs)*NH, 1))
}

// captureAttention copies layer l's attention weights of the last
// position of every sequence that asked for them (rowSeq.att): a few
// hundred values per sequence, and nothing when none asked.
func (m *Model) captureAttention(a *activations, l int, seqs []rowSeq, outOnly bool) {
	c := m.cfg
	NH, T := c.Heads, c.BlockSize
	if a.keep {
		T = a.T
	}
	att := a.layer(a.att, l, NH*T)
	for i := range seqs {
		s := &seqs[i]
		if s.att == nil {
			continue
		}
		q0, row := s.t0, s.row
		if outOnly {
			q0, row = s.out0, s.outRow
		}
		nq, t := s.t1-q0, s.t1-1
		for h := range NH {
			src := att[row*NH*T+(h*nq+t-q0)*T:][:t+1]
			copy(s.att[(l*NH+h)*c.BlockSize:][:t+1], src)
		}
	}
}

// runChain runs the chain over n rows as one parallel section, beside
// section s's weight transposes when transpose is set.
func (m *Model) runChain(a *activations, n, cost, s int, transpose bool) {
	j := &a.jobs
	j.sec.Reset()
	j.sec.Add(&j.chain, n, 4, cost)
	if transpose {
		addTranspose(&j.sec, &a.transposes[s])
	}
	j.sec.Run()
}

// kvStore copies the queries, keys and values of a pass's rows into their
// sequences' cache slots: a chain step over rows.
type kvStore struct {
	kv   *kvCache
	seqs []rowSeq
	qkv  []float64 // (N, 3C) this layer's rows
	l    int
	C3   int
}

// Run stores rows [lo, hi).
func (j *kvStore) Run(lo, hi int) {
	for i := range j.seqs {
		s := &j.seqs[i]
		r0, r1 := max(lo, s.row), min(hi, s.row+s.t1-s.t0)
		if r0 < r1 {
			t0 := s.t0 + r0 - s.row
			copy(j.kv.rows(j.l, s.slot, t0, t0+r1-r0), j.qkv[r0*j.C3:r1*j.C3])
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

// Run gathers sequences [lo, hi).
func (j *gatherJob) Run(lo, hi int) {
	C := j.C
	for _, s := range j.seqs[lo:hi] {
		from := s.row + s.out0 - s.t0
		n := s.t1 - s.out0
		copy(j.dst[s.outRow*C:(s.outRow+n)*C], j.src[from*C:(from+n)*C])
	}
}

// forwardBatch runs a training-shaped pass: B sequences of T tokens (idx,
// row-major), every position's logits, with targets each row's loss.
func (m *Model) forwardBatch(a *activations, idx, targets []int, transpose bool) {
	T := a.T
	for b := range a.seqs {
		a.seqs[b] = rowSeq{slot: b, ids: idx[b*T : (b+1)*T], t0: 0, t1: T, out0: 0}
	}
	m.forward(a, nil, a.seqs, targets, transpose)
}

// Logits runs the model on B sequences of T tokens (idx holds B·T ids,
// row-major) and returns the (B, T, V) logits. T may be at most BlockSize.
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
	if B < 1 || T < 1 || T > m.cfg.BlockSize {
		return fmt.Errorf("batch shape (%d, %d): need B >= 1 and 1 <= T <= block size %d", B, T, m.cfg.BlockSize)
	}
	if len(idx) != B*T {
		return fmt.Errorf("batch shape (%d, %d) needs %d input ids, got %d", B, T, B*T, len(idx))
	}
	if err := m.checkTokens(idx, "inputs"); err != nil {
		return err
	}
	if targets != nil {
		if len(targets) != B*T {
			return fmt.Errorf("batch shape (%d, %d) needs %d targets, got %d", B, T, B*T, len(targets))
		}
		if err := m.checkTokens(targets, "targets"); err != nil {
			return err
		}
	}
	return nil
}
