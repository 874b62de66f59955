package nn

// This file holds causal multi-head self-attention, forward (for any rows
// of any sequences against their cached keys and values) and backward
// (for whole sequences).

import (
	"math"

	"example.org/minigpt/internal/kernels"
)

// attnRows is the number of query rows attention handles together: their
// scores are one GemmNTSet call and their weighted sums of values share one
// product over the keys all of them see, so the kernels run the rows'
// chains side by side instead of one short row at a time (eight rows:
// two of GemmNT's four-row blocks, two softmax blocks of four).
// attnBackRows is the same for the backward pass, whose four rows' sums
// run in four scalar chains side by side.
const (
	attnRows     = 8
	attnBackRows = 4
)

// AttentionSeq is one sequence of an Attention pass: the query rows of
// its positions [T0, T1), computed against the keys and values of its
// positions [0, T1) (those before T0 cached by earlier passes: the KV
// cache).
type AttentionSeq struct {
	Q   []float64 // row t-T0 (3C apart) holds position t's query in its first C columns
	KV  []float64 // row s (3C apart) holds position s's query, key and value
	Out []float64 // row t-T0 (C apart): position t's output, heads side by side
	Att []float64 // (NH, T1-T0, LdAtt) the attention weights, lower triangle
	// Last, if not nil, receives the last position's (T1-1's) weights
	// over positions [0, T1), head h's at Last[h*LdLast:]: the trace's.
	Last []float64
	T0   int
	T1   int
}

// Attention is causal multi-head self-attention for the query rows of
// several sequences, each against its own keys and values:
//
//	att[h,t,s] = softmax_s≤t(q[t,h]·k[s,h] / sqrt(hs))
//	out[t,h]   = Σ_s≤t att[h,t,s]·v[s,h]
//
// The lower triangle of each row of att is written, and the entries just
// above the diagonal that a block of rows computes along are left zero.
// Every score is one Dot and every output a chain over s ascending from
// +0, so a row's bits depend neither on which rows are computed with it
// nor on where its block starts. A job over (sequence, head) pairs:
// item i is sequence i/NH, head i%NH.
type Attention struct {
	Seqs   []AttentionSeq
	C, NH  int
	LdAtt  int // row stride of the attention weights, at least every T1
	LdLast int // a head's stride in the sequences' Last
}

// Size is the items ((sequence, head) pairs), grain and an item's mean
// cost: a query row's products with the keys it sees.
func (j *Attention) Size() (items, grain, cost int) {
	for _, s := range j.Seqs {
		cost += (s.T1 - s.T0) * s.T1 * j.C / j.NH
	}
	items = len(j.Seqs) * j.NH
	return items, 1, cost / max(items, 1)
}

// Run computes items [lo, hi).
func (j *Attention) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.head(&j.Seqs[i/j.NH], i%j.NH)
	}
}

func (j *Attention) head(q *AttentionSeq, h int) {
	C, NH, ld := j.C, j.NH, j.LdAtt
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	keys := q.KV[C+h*hs:]     // k[s, h] at s*C3
	values := q.KV[2*C+h*hs:] // v[s, h] at s*C3
	nq := q.T1 - q.T0
	att := q.Att[h*nq*ld:]
	for t0 := q.T0; t0 < q.T1; t0 += attnRows {
		t1 := min(t0+attnRows, q.T1)
		n, r0 := t1-t0, t0-q.T0 // the block's rows, and its first row's index
		// Scores of rows [t0, t1) against keys [0, t1): every output is
		// its own Dot. The few entries above the diagonal that the block
		// computes along are zeroed again below.
		kernels.GemmNTSet(att[r0*ld:], ld, q.Q[r0*C3+h*hs:], C3, keys, C3, n, t1, hs)
		// The block's softmaxes (on AVX-512 four side by side).
		kernels.SoftmaxScaledRows(att[r0*ld:], ld, n, t0+1, scale)
		for t := t0; t < t1; t++ {
			clear(att[(t-q.T0)*ld+t+1 : (t-q.T0)*ld+t1])
		}
		// out[t] = Σ_s≤t att[t,s]·v[s], each a chain over s ascending:
		// the keys [0, t0] every row of the block sees in one product,
		// then each row's chain goes on over its own (t0, t]: the lower
		// triangle of the block's scores, one GemmNNTri call.
		out := q.Out[r0*C+h*hs:]
		kernels.GemmNNSet(out, C, nil, att[r0*ld:], ld, 1, values, C3, n, hs, t0+1, kernels.EpiNone, nil)
		kernels.GemmNNTri(out, C, att[r0*ld+t0:], ld, 1, values[t0*C3:], C3, n, hs, false)
	}
	if q.Last != nil {
		copy(q.Last[h*j.LdLast:][:q.T1], att[(nq-1)*ld:][:q.T1])
	}
}

// AttentionBackward undoes Attention over whole sequences (rows [0, T)
// of each of B sequences, queries, keys and values in QKV):
//
//	datt[t,s] = dout[t]·v[s];  dv[s] = Σ_t≥s att[t,s]·dout[t]
//	dpre[t,s] = att[t,s]·(datt[t,s] - Σ_s' att[t,s']·datt[t,s']) / sqrt(hs)
//	dq[t] = Σ_s≤t dpre[t,s]·k[s];  dk[s] = Σ_t≥s dpre[t,s]·q[t]
//
// every sum with one order (t ascending for the keys' and values'
// gradients). It sets its head's columns of dqkv. DAtt is scratch of
// Att's shape. A job over (sequence, head) pairs.
type AttentionBackward struct {
	DQKV        []float64 // (B, T, 3C)
	DAtt        []float64 // (B, NH, T, T) scratch
	DOut        []float64 // (B, T, C)
	QKV         []float64 // (B, T, 3C)
	Att         []float64 // (B, NH, T, T)
	B, T, C, NH int
}

// Size is the items ((sequence, head) pairs), grain and an item's cost.
func (j *AttentionBackward) Size() (items, grain, cost int) {
	return j.B * j.NH, 1, 2 * j.T * j.T * (j.C / j.NH)
}

// Run computes items [lo, hi).
func (j *AttentionBackward) Run(lo, hi int) {
	for bh := lo; bh < hi; bh++ {
		j.head(bh/j.NH, bh%j.NH)
	}
}

func (j *AttentionBackward) head(b, h int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	base := b * T * C3
	keys, values := j.QKV[base+C+h*hs:], j.QKV[base+2*C+h*hs:]
	queries := j.QKV[base+h*hs:]
	dkeys, dvalues := j.DQKV[base+C+h*hs:], j.DQKV[base+2*C+h*hs:]
	attBase := (b*NH + h) * T * T
	att, datt := j.Att[attBase:attBase+T*T], j.DAtt[attBase:attBase+T*T]
	dout := j.DOut[b*T*C+h*hs:]
	dq := j.DQKV[base+h*hs:]
	// This head's columns of k and v start from +0 in every row (its q
	// columns are set by their first product below).
	for t := 0; t < T; t++ {
		row := j.DQKV[base+t*C3:]
		clear(row[C+h*hs : C+h*hs+hs])
		clear(row[2*C+h*hs : 2*C+h*hs+hs])
	}
	// attnBackRows rows at a time: datt, then dpre in its place, then dq.
	// Each of these outputs belongs to its row t alone, and every sum
	// keeps its order (as in Attention).
	for t0 := 0; t0 < T; t0 += attnBackRows {
		t1 := min(t0+attnBackRows, T)
		n := t1 - t0
		kernels.GemmNTSet(datt[t0*T:], T, dout[t0*C:], C, values, C3, n, t1, hs) // datt = dout·vᵀ
		// sum[t] = Σ_s≤t att[t,s]·datt[t,s], a chain over s ascending
		// from +0 for each row: the block's chains side by side over the
		// keys [0, t0] all its rows see (four independent chains instead
		// of one latency-bound chain at a time), then each row's on over
		// its own keys (t0, t].
		var sums [attnBackRows]float64
		if n == attnBackRows {
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
			sums = [attnBackRows]float64{s0, s1, s2, s3}
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
		// dq[t] = dpre[t]·k: keys [0, t0] for the block, then each row's own.
		kernels.GemmNNSet(dq[t0*C3:], C3, nil, datt[t0*T:], T, 1, keys, C3, n, hs, t0+1, kernels.EpiNone, nil)
		kernels.GemmNNTri(dq[t0*C3:], C3, datt[t0*T+t0:], T, 1, keys[t0*C3:], C3, n, hs, false)
	}
	// dv[s] = Σ_t≥s att[t,s]·dout[t] and dk[s] = Σ_t≥s dpre[t,s]·q[t],
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
// that is C += Aᵀ·B over the lower triangle of A (rows t >= s of column
// s), each output a chain over t ascending. Rows of C go in blocks of
// four: the block's ragged start (t below the block's last row) in one
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
