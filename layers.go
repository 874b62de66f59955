package minigpt

import (
	"math"

	"example.org/minigpt/internal/kernels"
)

// The layers of the model as forward/backward pairs over flat row-major
// slices, llm.c style: outputs first, then inputs, then sizes. N is a
// number of rows (positions), C a width. Backward functions accumulate
// into their gradient outputs (+=); zeroing is the caller's explicit step.
// Every product that feeds a sum is either a math.FMA or explicitly
// rounded with float64(), so that no compiler may fuse it differently on
// another architecture.

// layerNormEps is the seed's LayerNorm epsilon.
const layerNormEps = 1e-5

// encoderForward: out[b,t] = wte[idx[b,t]] + wpe[t] for t in [t0, t1).
// Rows are spread over the workers.
func encoderForward(out []float64, idx []int, wte, wpe []float64, B, T, t0, t1, C int) {
	job := encoderJob{out: out, idx: idx, wte: wte, wpe: wpe, T: T, t0: t0, t1: t1, C: C}
	rows := B * (t1 - t0)
	if p := pool.acquire(rows, 1, C); p > 1 {
		pool.enc = job
		pool.dispatch(p, rows, 1, &pool.enc)
		return
	}
	job.forwardRows(0, rows)
}

// encoderJob is the encoder forward over a range of rows (b, t), t in
// [t0, t1), counted from 0, or its backward over a range of columns.
type encoderJob struct {
	backward         bool
	setWte, setWpe   bool // backward: dwte's (dwpe's) columns start from +0, every row
	out, wte, wpe    []float64
	dwte, dwpe, dout []float64
	idx              []int
	B, T, t0, t1, C  int
	n0, n1           int // backward: the rows to add, [n0, n1) of the B·T
}

func (j *encoderJob) run(lo, hi int) {
	if j.backward {
		j.backwardColumns(lo, hi)
	} else {
		j.forwardRows(lo, hi)
	}
}

func (j *encoderJob) forwardRows(lo, hi int) {
	C, nt := j.C, j.t1-j.t0
	for r := lo; r < hi; r++ {
		t := j.t0 + r%nt
		n := (r/nt)*j.T + t
		o := j.out[n*C : n*C+C]
		e := j.wte[j.idx[n]*C : j.idx[n]*C+C]
		p := j.wpe[t*C : t*C+C]
		for i := range o {
			o[i] = e[i] + p[i]
		}
	}
}

func (j *encoderJob) backwardColumns(lo, hi int) {
	C := j.C
	if j.setWte {
		for r := 0; r < len(j.dwte)/C; r++ {
			clear(j.dwte[r*C+lo : r*C+hi])
		}
	}
	if j.setWpe {
		for r := 0; r < len(j.dwpe)/C; r++ {
			clear(j.dwpe[r*C+lo : r*C+hi])
		}
	}
	for n := j.n0; n < j.n1; n++ {
		t := n % j.T
		d := j.dout[n*C+lo : n*C+hi]
		de := j.dwte[j.idx[n]*C+lo : j.idx[n]*C+hi]
		dp := j.dwpe[t*C+lo : t*C+hi]
		for i, v := range d {
			de[i] += v
			dp[i] += v
		}
	}
}

// layernormForward: out = (inp - mean)·rstd·weight + bias per row, with
// rstd = 1/sqrt(var + eps); mean and rstd are kept for the backward pass.
// Rows are independent and spread over the workers.
func layernormForward(out, mean, rstd, inp, weight, bias []float64, N, C int) {
	job := layernormJob{out: out, mean: mean, rstd: rstd, inp: inp, weight: weight[:C], bias: bias[:C], C: C}
	if p := pool.acquire(N, 1, 4*C); p > 1 {
		pool.ln = job
		pool.dispatch(p, N, 1, &pool.ln)
		return
	}
	job.forwardRows(0, N)
}

// layernormBackward undoes out = xhat·weight + bias, xhat = (inp-mean)·rstd:
//
//	dinp += rstd·(dxhat - mean(dxhat) - xhat·mean(dxhat·xhat)), dxhat = dout·weight
//	dweight += Σ_n dout·xhat, dbias += Σ_n dout
//
// dinp is spread over the workers by rows; dweight and dbias, sums over
// rows, by columns, each column summed in row order.
func layernormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd []float64, N, C int) {
	job := layernormJob{dinp: dinp, dweight: dweight[:C], dbias: dbias[:C], dout: dout, inp: inp, weight: weight[:C], mean: mean, rstd: rstd, N: N, C: C}
	if p := pool.acquire(N, 1, 8*C); p > 1 {
		job.phase = lnBackwardRows
		pool.ln = job
		pool.dispatch(p, N, 1, &pool.ln)
	} else {
		job.backwardRows(0, N)
	}
	if p := pool.acquire(C, 4, 3*N); p > 1 {
		job.phase = lnBackwardColumns
		pool.ln = job
		pool.dispatch(p, C, 4, &pool.ln)
	} else {
		job.backwardColumns(0, C)
	}
}

const (
	lnForward = iota
	lnBackwardRows
	lnBackwardColumns
)

// layernormJob is one LayerNorm pass over a range of rows or columns.
type layernormJob struct {
	phase                      int
	out, mean, rstd, inp       []float64
	weight, bias               []float64
	dinp, dweight, dbias, dout []float64
	N, C                       int
	// In backward, with set, the outputs are set instead of accumulated
	// into: the rows of dinp start as those of start (+0 when start is
	// nil), the columns of dweight and dbias from +0. The same bits as
	// copying (clearing) them beforehand.
	set   bool
	start []float64
}

func (j *layernormJob) run(lo, hi int) {
	switch j.phase {
	case lnForward:
		j.forwardRows(lo, hi)
	case lnBackwardRows:
		j.backwardRows(lo, hi)
	default:
		j.backwardColumns(lo, hi)
	}
}

// lnRows is the number of rows LayerNorm's row loops hand to the kernels
// at a time: their statistics (or row sums) and then their normalised
// rows (input gradients), while the rows are in L1. The kernels keep
// every row's chains in order, so the block changes no bit.
const lnRows = 8

// forwardRows normalises rows [lo, hi).
func (j *layernormJob) forwardRows(lo, hi int) {
	C := j.C
	for n := lo; n < hi; n += lnRows {
		e := min(n+lnRows, hi)
		kernels.LayerNormStats(j.mean[n:e], j.rstd[n:e], j.inp[n*C:e*C], e-n, C, layerNormEps)
		kernels.LayerNormApply(j.out[n*C:e*C], j.inp[n*C:e*C], j.weight, j.bias, j.mean[n:e], j.rstd[n:e], e-n, C)
	}
}

// backwardRows adds the input gradients of rows [lo, hi): to dinp's
// rows, or, when the job sets dinp from start, to start's rows (the bits
// of copying them first).
func (j *layernormJob) backwardRows(lo, hi int) {
	C := j.C
	if j.set && j.start == nil {
		clear(j.dinp[lo*C : hi*C])
	} // with start, each row starts from it instead of a copy
	var s1, s2 [lnRows]float64 // sums of dxhat, of dxhat·xhat
	for n := lo; n < hi; n += lnRows {
		e := min(n+lnRows, hi)
		inp, dout, di := j.inp[n*C:e*C], j.dout[n*C:e*C], j.dinp[n*C:e*C]
		src := di
		if j.set && j.start != nil {
			src = j.start[n*C : e*C]
		}
		kernels.LayerNormRowSums(s1[:e-n], s2[:e-n], inp, dout, j.weight, j.mean[n:e], j.rstd[n:e], e-n, C)
		kernels.LayerNormInputGrad(di, src, inp, dout, j.weight, j.mean[n:e], j.rstd[n:e], s1[:e-n], s2[:e-n], e-n, C)
	}
}

func (j *layernormJob) backwardColumns(lo, hi int) {
	if j.set {
		clear(j.dweight[lo:hi])
		clear(j.dbias[lo:hi])
	}
	kernels.LayerNormParamGrads(j.dweight[lo:hi], j.dbias[lo:hi], j.dout[lo:], j.inp[lo:], j.mean, j.rstd, j.N, hi-lo, j.C)
}

// matmulForward: out (N, OC) = inp (N, C) · weight (C, OC) + bias (OC);
// bias may be nil. Each output is a chain from the bias over the C inputs.
// The workers set their own rows of out to the bias before the product.
func matmulForward(out, inp, weight, bias []float64, N, C, OC int) {
	if bias != nil {
		bias = bias[:OC]
	}
	gemmNNParallelInit(out, OC, bias, inp, C, 1, weight, OC, N, OC, C)
}

// inputGradJob is the input gradient of out = inp·weight (+ bias) over
// rows [lo, hi): dinp = dout·weightᵀ, overwritten, then, when relu is
// not nil, masked by reluBackward(dinp, relu), where relu holds the
// ReLU's input or, the same mask, its output. It is the input half of a
// matrix product's backward, for a row-wise chain.
//
// With weightT (weightᵀ, OC rows of C, made by transposeJob) each output
// is gemmNN's chain: from +0, one fused multiply-add per o in ascending
// order, dinp[n][i] = fma(dout[n][o], weight[i][o], ·). That is the
// forward products' order, and it keeps the matrix kernels' register
// tiles full where Dot's lanes would have to be reduced after only
// OC/8 steps (at the seed config, OC = 64 for half of these products:
// gemmNT reached 62% of one core's peak there, gemmNN 80-85%). Without
// weightT (the head) it is GemmNTSet, Dot's order. With weightT the
// mask is GemmNNSet's epilogue, which the AVX-512 kernels apply as they
// store dinp, saving a second pass over it.
type inputGradJob struct {
	dinp, dout, weight, weightT, relu []float64
	C, OC                             int
}

func (j *inputGradJob) run(lo, hi int) {
	d := j.dinp[lo*j.C : hi*j.C]
	var mask []float64
	if j.relu != nil {
		mask = j.relu[lo*j.C : hi*j.C]
	}
	if j.weightT != nil {
		epi := kernels.EpiNone
		if mask != nil {
			epi = kernels.EpiMask
		}
		kernels.GemmNNSet(d, j.C, nil, j.dout[lo*j.OC:], j.OC, 1, j.weightT, j.C, hi-lo, j.C, j.OC, epi, mask)
		return
	}
	kernels.GemmNTSet(d, j.C, j.dout[lo*j.OC:], j.OC, j.weight, j.OC, hi-lo, j.C, j.OC)
	if mask != nil {
		kernels.ReLUMask(d, mask)
	}
}

// transposeJob writes, for each of its matrices, dst = srcᵀ (src of R
// rows of W: dst[o*R+i] = src[i*W+o]), over the rows of the dsts laid
// end to end. Every weight matrix of the layers is transposed once per
// training step, for inputGradJob (see activations.weightsT); no sum is
// involved.
type transposeJob struct {
	parts []transposePart
}

type transposePart struct {
	dst, src []float64
	R, W     int
}

// rows is the number of items: the rows of all the dsts.
func (j *transposeJob) rows() int {
	n := 0
	for _, p := range j.parts {
		n += p.W
	}
	return n
}

// add adds the transposes to a plan as one task (none without parts),
// costed at transposeCost per element.
func (j *transposeJob) add(pl *plan) {
	rows, elems := j.rows(), 0
	for _, p := range j.parts {
		elems += p.R * p.W
	}
	if rows > 0 {
		pl.add(j, rows, 8, transposeCost*elems/rows)
	}
}

func (j *transposeJob) run(lo, hi int) {
	first := 0 // the item of the part's dst row 0
	for _, p := range j.parts {
		o0, o1 := max(lo-first, 0), min(hi-first, p.W)
		first += p.W
		if o0 < o1 {
			kernels.Transpose(p.dst, p.src, p.R, p.W, o0, o1)
		}
	}
}

// columnSumJob adds to sum[o], for o in a range of columns, the rows'
// column o in row order: sum[o] += rows[0*W+o] + rows[1*W+o] + ...
type columnSumJob struct {
	sum, rows []float64
	N, W      int
	set       bool // the sums start from +0 instead of sum's values
}

func (j *columnSumJob) run(lo, hi int) {
	s := j.sum[lo:hi]
	if j.set {
		clear(s)
	}
	for n := 0; n < j.N; n++ {
		row := j.rows[n*j.W+lo : n*j.W+hi]
		// Row by row, every column's chain advances by one add.
		kernels.Add(s, s, row)
	}
}

// reluForward: out = max(inp, 0).
func reluForward(out, inp []float64) {
	elementwise(elementwiseJob{op: opRelu, out: out[:len(inp)], a: inp})
}

// reluBackward undoes out = max(inp, 0) in place: d *= (inp > 0), with
// +0 where inp <= 0. The mask is applied to the bits, without a branch,
// because the sign of inp is random and mispredicted branches cost more
// than the rest of this loop.
func reluBackward(d, inp []float64) {
	elementwise(elementwiseJob{op: opReluBackward, out: d, a: inp[:len(d)]})
}

// residualForward: out = a + b.
func residualForward(out, a, b []float64) {
	elementwise(elementwiseJob{op: opResidual, out: out, a: a[:len(out)], b: b[:len(out)]})
}

const (
	opRelu = iota
	opReluBackward
	opResidual
	opScale
)

// scaleParallel sets x[i] *= s for every i, spread over the workers: the
// gradient slab that clipping scales is megabytes, which one core sweeps
// at a fraction of the memory bandwidth two reach.
func scaleParallel(x []float64, s float64) {
	elementwise(elementwiseJob{op: opScale, out: x, s: s})
}

// elementwiseJob is one of the elementwise layers above over a range of
// indices; every element is independent.
type elementwiseJob struct {
	op        int
	out, a, b []float64
	s         float64 // opScale's factor
}

// elementwise runs job over all of job.out, spread over the workers.
func elementwise(job elementwiseJob) {
	n := len(job.out)
	if p := pool.acquire(n, 512, 1); p > 1 {
		pool.elem = job
		pool.dispatch(p, n, 512, &pool.elem)
		return
	}
	job.run(0, n)
}

func (j *elementwiseJob) run(lo, hi int) {
	if j.op == opScale {
		kernels.Scale(j.out[lo:hi], j.s)
		return
	}
	out, a := j.out[lo:hi], j.a[lo:hi]
	switch j.op {
	case opRelu:
		kernels.ReLU(out, a)
	case opReluBackward:
		kernels.ReLUMask(out, a)
	default:
		kernels.Add(out, a, j.b[lo:hi])
	}
}

// attentionForward is causal multi-head self-attention for rows t in
// [t0, t1) of each of the B sequences (rows before t0 must already hold
// their keys and values: that is the KV cache).
//
//	att[b,h,t,s] = softmax_s≤t(q[b,t,h]·k[b,s,h] / sqrt(hs))
//	out[b,t,h]   = Σ_s≤t att[b,h,t,s]·v[b,s,h]
//
// qkv is (B, T, 3C) with q, k, v side by side; att is (B, NH, T, T): its
// lower triangle is written, and the entries just above the diagonal that
// a block of rows computes along are left zero; out is (B, T, C), heads
// side by side.
func attentionForward(out, att, qkv []float64, B, T, t0, t1, C, NH int) {
	p := pool.acquire(B*NH, 1, (t1-t0)*t1*C/NH)
	job := attentionJob{out: out, att: att, qkv: qkv, T: T, t0: t0, t1: t1, C: C, NH: NH}
	if p <= 1 {
		job.run(0, B*NH)
		return
	}
	pool.attn = job
	pool.dispatch(p, B*NH, 1, &pool.attn)
}

// attentionBackward undoes attentionForward (rows [0, T)):
//
//	datt[t,s] = dout[t]·v[s];  dv[s] += att[t,s]·dout[t]
//	dpre[t,s] = att[t,s]·(datt[t,s] - Σ_s' att[t,s']·datt[t,s']) / sqrt(hs)
//	dq[t] += Σ_s dpre[t,s]·k[s];  dk[s] += dpre[t,s]·q[t]
//
// with t ascending in the outer loop, so every accumulation has one order.
// datt is (B, NH, T, T) scratch.
func attentionBackward(dqkv, datt, dout, qkv, att []float64, B, T, C, NH int) {
	p := pool.acquire(B*NH, 1, 2*T*T*C/NH)
	job := attentionJob{backward: true, out: dout, att: att, qkv: qkv, dqkv: dqkv, datt: datt, T: T, t0: 0, t1: T, C: C, NH: NH}
	if p <= 1 {
		job.run(0, B*NH)
		return
	}
	pool.attn = job
	pool.dispatch(p, B*NH, 1, &pool.attn)
}

// attentionJob runs attention forward or backward for (batch, head) pairs
// bh in [lo, hi).
type attentionJob struct {
	backward         bool
	set              bool      // backward: each head sets its part of dqkv instead of adding to it
	out, att, qkv    []float64 // out is dout when backward
	dqkv, datt       []float64
	T, t0, t1, C, NH int
}

func (j *attentionJob) run(lo, hi int) {
	for bh := lo; bh < hi; bh++ {
		if j.backward {
			j.backwardHead(bh/j.NH, bh%j.NH)
		} else {
			j.forwardHead(bh/j.NH, bh%j.NH)
		}
	}
}

// attnRows is the number of query rows attention handles together: their
// scores are one gemmNT call and their weighted sums of values share one
// gemmNN call over the keys all of them see, so the kernels run four
// rows' chains side by side instead of one short row at a time.
const attnRows = 4

func (j *attentionJob) forwardHead(b, h int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	base := b * T * C3              // row 0 of sequence b in qkv
	keys := j.qkv[base+C+h*hs:]     // k[b, s, h] at s*C3
	values := j.qkv[base+2*C+h*hs:] // v[b, s, h] at s*C3
	att := j.att[(b*NH+h)*T*T:]
	for t0 := j.t0; t0 < j.t1; t0 += attnRows {
		t1 := min(t0+attnRows, j.t1)
		n := t1 - t0
		// Scores of rows [t0, t1) against keys [0, t1): every output is
		// its own Dot, the same bits as one row at a time. The few
		// entries above the diagonal that the block computes along are
		// zeroed again below.
		kernels.GemmNTSet(att[t0*T:], T, j.qkv[base+t0*C3+h*hs:], C3, keys, C3, n, t1, hs)
		// The block's softmaxes (on AVX-512 four side by side). Same
		// bits as one row at a time.
		kernels.SoftmaxScaledRows(att[t0*T:], T, n, t0+1, scale)
		for t := t0; t < t1; t++ {
			clear(att[t*T+t+1 : t*T+t1])
		}
		// out[t] = Σ_s≤t att[t,s]·v[s], each a chain over s ascending:
		// the keys [0, t0] every row of the block sees in one four-row
		// call, then each row's chain goes on over its own (t0, t].
		// Row t0+r's own keys are t0+1..t0+r: the lower triangle of
		// the block's scores, one GemmNNTri call.
		kernels.GemmNNSet(j.out[(b*T+t0)*C+h*hs:], C, nil, att[t0*T:], T, 1, values, C3, n, hs, t0+1, kernels.EpiNone, nil)
		kernels.GemmNNTri(j.out[(b*T+t0)*C+h*hs:], C, att[t0*T+t0:], T, 1, values[t0*C3:], C3, n, hs, false)
	}
}

func (j *attentionJob) backwardHead(b, h int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	base := b * T * C3
	keys, values := j.qkv[base+C+h*hs:], j.qkv[base+2*C+h*hs:]
	queries := j.qkv[base+h*hs:]
	dkeys, dvalues := j.dqkv[base+C+h*hs:], j.dqkv[base+2*C+h*hs:]
	attBase := (b*NH + h) * T * T
	att, datt := j.att[attBase:attBase+T*T], j.datt[attBase:attBase+T*T]
	dout := j.out[b*T*C+h*hs:]
	dq := j.dqkv[base+h*hs:]
	if j.set {
		// This head's columns of k and v, every row: the same bits as
		// clearing all of dqkv first. (Its q columns are set by their
		// first product below.)
		for t := 0; t < T; t++ {
			row := j.dqkv[base+t*C3:]
			clear(row[C+h*hs : C+h*hs+hs])
			clear(row[2*C+h*hs : 2*C+h*hs+hs])
		}
	}
	// attnRows rows at a time: datt, then dpre in its place, then dq.
	// Each of these outputs belongs to its row t alone, and every sum
	// keeps its order (as in forwardHead).
	for t0 := 0; t0 < T; t0 += attnRows {
		t1 := min(t0+attnRows, T)
		n := t1 - t0
		kernels.GemmNTSet(datt[t0*T:], T, dout[t0*C:], C, values, C3, n, t1, hs) // datt = dout·vᵀ
		// sum[t] = Σ_s≤t att[t,s]·datt[t,s], a chain over s ascending
		// from +0 for each row: the block's chains side by side over
		// the keys [0, t0] all its rows see (four independent chains
		// instead of one latency-bound chain at a time), then each
		// row's on over its own keys (t0, t]. Every chain keeps its
		// order, so the bits are those of one row at a time.
		var sums [attnRows]float64
		if n == attnRows {
			p0, d0 := att[t0*T:t0*T+t0+1], datt[t0*T:t0*T+t0+1]
			p1, d1 := att[(t0+1)*T:][:len(p0)], datt[(t0+1)*T:][:len(p0)]
			p2, d2 := att[(t0+2)*T:][:len(p0)], datt[(t0+2)*T:][:len(p0)]
			p3, d3 := att[(t0+3)*T:][:len(p0)], datt[(t0+3)*T:][:len(p0)]
			var s0, s1, s2, s3 float64
			for s := range p0 {
				s0 = math.FMA(p0[s], d0[s], s0)
				s1 = math.FMA(p1[s], d1[s], s1)
				s2 = math.FMA(p2[s], d2[s], s2)
				s3 = math.FMA(p3[s], d3[s], s3)
			}
			sums = [attnRows]float64{s0, s1, s2, s3}
		} else {
			for r := range n {
				p, dp := att[(t0+r)*T:][:t0+1], datt[(t0+r)*T:][:t0+1]
				for s, ps := range p {
					sums[r] = math.FMA(ps, dp[s], sums[r])
				}
			}
		}
		for t := t0; t < t1; t++ {
			p := att[t*T : t*T+t+1]
			dp := datt[t*T : t*T+t+1]
			sum := sums[t-t0]
			for s := t0 + 1; s <= t; s++ {
				sum = math.FMA(p[s], dp[s], sum)
			}
			kernels.SoftmaxBackward(dp, p, sum, scale)
			clear(datt[t*T+t+1 : t*T+t1])
		}
		// dq[t] += dpre[t]·k: keys [0, t0] for the block, then each row's own.
		if j.set {
			kernels.GemmNNSet(dq[t0*C3:], C3, nil, datt[t0*T:], T, 1, keys, C3, n, hs, t0+1, kernels.EpiNone, nil)
		} else {
			kernels.GemmNN(dq[t0*C3:], C3, datt[t0*T:], T, 1, keys, C3, n, hs, t0+1)
		}
		kernels.GemmNNTri(dq[t0*C3:], C3, datt[t0*T+t0:], T, 1, keys[t0*C3:], C3, n, hs, false)
	}
	// dv[s] += Σ_t≥s att[t,s]·dout[t] and dk[s] += Σ_t≥s dpre[t,s]·q[t],
	// each a chain over t ascending from s: the transposed products, with
	// the chains kept in registers instead of swept through memory once
	// per t.
	transposedCausalNN(dvalues, C3, att, T, dout, C, T, hs)
	transposedCausalNN(dkeys, C3, datt, T, queries, C3, T, hs)
}

// transposedCausalNN computes, for s < T and j < hs,
//
//	c[s*ldc+j] = fma(a[(T-1)*lda+s], b[(T-1)*ldb+j], ... fma(a[s*lda+s], b[s*ldb+j], c[s*ldc+j]))
//
// that is C += Aᵀ·B over the lower triangle of A (rows t >= s of column s),
// each output a chain over t ascending. Rows of C go in blocks of four:
// the block's ragged start (t below the block's last row) in one
// GemmNNTri call, then the rest of the chains together in one four-row
// call.
func transposedCausalNN(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, T, hs int) {
	const R = 4
	for s0 := 0; s0 < T; s0 += R {
		s1 := min(s0+R, T)
		// Row s0+r's chain starts at t = s0+r and runs to s1-2: the
		// upper triangle, a[(s0+k)*lda+s0+r] for keys k = r..n-2.
		kernels.GemmNNTri(c[s0*ldc:], ldc, a[s0*lda+s0:], 1, lda, b[s0*ldb:], ldb, s1-s0, hs, true)
		t := s1 - 1
		kernels.GemmNN(c[s0*ldc:], ldc, a[t*lda+s0:], 1, lda, b[t*ldb:], ldb, s1-s0, hs, T-t)
	}
}

// crossEntropyJob computes, for a range of rows, each row's loss
// -log softmax(logits)[target] and, in the same pass, dlogits =
// (softmax - onehot(target)) / N: the gradient of the mean loss over the
// N rows (activations.meanLoss sums the losses in row order after).
type crossEntropyJob struct {
	losses, dlogits, logits []float64
	targets                 []int
	N, V                    int
}

func (j *crossEntropyJob) run(lo, hi int) {
	losses, dlogits, logits, targets, N, V := j.losses, j.dlogits, j.logits, j.targets, j.N, j.V
	for n := lo; n < hi; n++ {
		l := logits[n*V : n*V+V]
		d := dlogits[n*V : n*V+V]
		maxv, sum := kernels.ExpShifted(d, l)
		tgt := targets[n]
		losses[n] = maxv + kernels.Log(sum) - l[tgt]
		for i := range d {
			d[i] /= sum
		}
		d[tgt]--
		for i := range d {
			d[i] /= float64(N)
		}
	}
}
