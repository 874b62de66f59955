package nn

// This file holds the matrix product layer whole: its forward (with the
// ReLU and the residual add that follow it, applied as the product's
// epilogue), its input gradient, its weight gradient, its bias gradient,
// and the weight transposes the input gradients read.

import "example.org/minigpt/internal/kernels"

// Matmul is out = inp·weight + bias over rows, then, with ReLU, out =
// max(out, 0), then, with Residual, out = residual + out: one layer of the
// model and what follows it, while the rows are in cache (the AVX-512
// kernels apply both as they store out). Every output is a chain from the
// bias (+0 without one) over the C inputs in order. A job over rows.
type Matmul struct {
	Out      []float64 // (N, OC)
	Inp      []float64 // (N, C)
	Weight   []float64 // (C, OC)
	Bias     []float64 // (OC), or nil
	Residual []float64 // (N, OC), or nil
	ReLU     bool
	C, OC    int
}

// RowCost is a row's multiply-adds.
func (j *Matmul) RowCost() int { return j.C * j.OC }

// Run computes rows [lo, hi) of out.
func (j *Matmul) Run(lo, hi int) {
	C, OC := j.C, j.OC
	epi, aux := kernels.EpiNone, []float64(nil)
	if j.ReLU {
		epi |= kernels.EpiReLU
	}
	if j.Residual != nil {
		epi, aux = epi|kernels.EpiResidual, j.Residual[lo*OC:]
	}
	bias := j.Bias
	if bias != nil {
		bias = bias[:OC]
	}
	kernels.GemmNNSet(j.Out[lo*OC:], OC, bias, j.Inp[lo*C:], C, 1, j.Weight, OC, hi-lo, OC, C, epi, aux)
}

// MatmulT is out = inp·weightᵀ over rows, for a weight stored (OC, C): the
// tied head, whose weight is the token embedding. Every output is the
// kernels' Dot of an input row and a weight row. A job over rows.
type MatmulT struct {
	Out    []float64 // (N, OC)
	Inp    []float64 // (N, C)
	Weight []float64 // (OC, C)
	C, OC  int
}

// RowCost is a row's multiply-adds.
func (j *MatmulT) RowCost() int { return j.C * j.OC }

// Run computes rows [lo, hi) of out.
func (j *MatmulT) Run(lo, hi int) {
	kernels.GemmNTSet(j.Out[lo*j.OC:], j.OC, j.Inp[lo*j.C:], j.C, j.Weight, j.C, hi-lo, j.OC, j.C)
}

// MatmulInputGrad is the input gradient of out = inp·weight (+ bias):
//
//	dinp = dout·weightᵀ
//
// then, with ReLU set, masked where the ReLU before the product was
// inactive (ReLU holds that ReLU's output, or its input: the same mask),
// the ReLU's backward. With WeightT (weightᵀ, made by Transpose) every
// output is the forward products' chain, from +0 over o ascending, and
// the mask is the product's epilogue; without it (the head) every output
// is the kernels' Dot of a row of dout and a row of weight, and no mask
// applies. A job over rows.
type MatmulInputGrad struct {
	DInp    []float64 // (N, C)
	DOut    []float64 // (N, OC)
	WeightT []float64 // (OC, C), or nil
	Weight  []float64 // (C, OC), read when WeightT is nil
	ReLU    []float64 // (N, C), or nil
	C, OC   int
}

// RowCost is a row's multiply-adds.
func (j *MatmulInputGrad) RowCost() int { return j.C * j.OC }

// Run writes rows [lo, hi) of dinp.
func (j *MatmulInputGrad) Run(lo, hi int) {
	C, OC := j.C, j.OC
	d := j.DInp[lo*C : hi*C]
	if j.WeightT == nil {
		kernels.GemmNTSet(d, C, j.DOut[lo*OC:], OC, j.Weight, OC, hi-lo, C, OC)
		return
	}
	epi, mask := kernels.EpiNone, []float64(nil)
	if j.ReLU != nil {
		epi, mask = kernels.EpiMask, j.ReLU[lo*C:hi*C]
	}
	kernels.GemmNNSet(d, C, nil, j.DOut[lo*OC:], OC, 1, j.WeightT, C, hi-lo, C, OC, epi, mask)
}

// weightGradRows is how many rows of dweight MatmulWeightGrad makes from
// one transposed copy of inp's columns: 96 rows of a batch of 1024 are a
// 768 KB copy, which stays in L2 while the product reads it.
const weightGradRows = 96

// weightGradCopyCols is the narrowest dweight for which the transposed
// copy pays: the product reads each copied column about OC/32 times, so
// below this width the copy costs more than the strided reads it saves.
const weightGradCopyCols = 128

// MatmulWeightGrad is the weight gradient of out = inp·weight:
//
//	dweight = inpᵀ·dout
//
// every output a chain over the N rows in order, from +0 (or, for a
// later part of the rows, continuing what dweight holds: a chain split
// over rows keeps its bits, as the kernels' own blocks of k do). A sum
// over rows (par.Sum) whose items are blocks of 4 rows of dweight, all OC
// columns each. A range of items
// goes in groups of up to weightGradRows rows: the group's columns of inp
// are first transposed into a scratch buffer, so that the product reads
// A along its rows (inp's columns lie C apart in memory, each step of a
// transposed read a cache line of its own on another page, which no
// prefetcher follows); a dweight narrower than weightGradCopyCols, or
// kernels that pack A themselves (kernels.StridedAFast), read inp
// through its strides instead. Where the blocks and groups fall, and
// whether a group is copied, moves no bit.
type MatmulWeightGrad struct {
	DWeight  []float64 // (C, OC)
	Inp      []float64 // (N, C)
	DOut     []float64 // (N, OC)
	N, C, OC int
}

// Size is the items, grain and an item's multiply-adds.
func (j *MatmulWeightGrad) Size() (items, grain, cost int) {
	items = (j.C + 3) / 4
	return items, 1, j.N * j.OC * j.C / items
}

// SumRows is the rows, the values they hold and the outputs.
func (j *MatmulWeightGrad) SumRows() (rows, rowValues, outValues int) {
	return j.N, j.N * (j.C + j.OC), j.C * j.OC
}

// Run computes items [lo, hi) over every row.
func (j *MatmulWeightGrad) Run(lo, hi int) { j.RunRows(lo, hi, 0, j.N, true) }

// RunRows computes items [lo, hi) over rows [n0, n1), from +0 when first.
func (j *MatmulWeightGrad) RunRows(lo, hi, n0, n1 int, first bool) {
	part := *j
	part.Inp, part.DOut, part.N = j.Inp[n0*j.C:], j.DOut[n0*j.OC:], n1-n0
	part.run(lo, hi, !first)
}

func (j *MatmulWeightGrad) run(lo, hi int, add bool) {
	N, C, OC := j.N, j.C, j.OC
	r0, r1 := 4*lo, min(4*hi, C)
	if N <= 0 {
		if !add {
			clear(j.DWeight[r0*OC : r1*OC])
		}
		return
	}
	if OC < weightGradCopyCols || kernels.StridedAFast() {
		// dweight's rows r0..r1 are inp's columns: A = inpᵀ through strides.
		j.product(j.DWeight[r0*OC:], j.Inp[r0:], 1, C, r1-r0, add)
		return
	}
	// The size a group can take, whatever this range's: a pool buffer
	// then never has to grow after the first step.
	buf := scratch.get(weightGradRows * N)
	defer scratch.put(buf)
	for g0 := r0; g0 < r1; g0 += weightGradRows {
		g1 := min(g0+weightGradRows, r1)
		// dweight's rows g0..g1 are inp's columns: A = their transpose.
		at := (*buf)[:(g1-g0)*N]
		kernels.Transpose(at, j.Inp[g0:], N, C, 0, g1-g0)
		j.product(j.DWeight[g0*OC:], at, N, 1, g1-g0, add)
	}
}

// product makes rows rows of dweight from c on: A's element (i, k) is
// a[i*rowStride+k*kStride], a chain over the N values of k, continuing c
// with add.
func (j *MatmulWeightGrad) product(c, a []float64, rowStride, kStride, rows int, add bool) {
	if add {
		kernels.GemmNN(c, j.OC, a, rowStride, kStride, j.DOut, j.OC, rows, j.OC, j.N)
	} else {
		kernels.GemmNNSet(c, j.OC, nil, a, rowStride, kStride, j.DOut, j.OC, rows, j.OC, j.N, kernels.EpiNone, nil)
	}
}

// ColumnSum is a bias gradient: sum[o] = Σ_n rows[n][o] over the N rows
// in order, from +0. A sum over rows (par.Sum) whose items are columns.
type ColumnSum struct {
	Sum  []float64 // (W)
	Rows []float64 // (N, W)
	N, W int
}

// Size is the items, grain and an item's additions.
func (j *ColumnSum) Size() (items, grain, cost int) { return j.W, 8, j.N }

// SumRows is the rows, the values they hold and the outputs.
func (j *ColumnSum) SumRows() (rows, rowValues, outValues int) { return j.N, j.N * j.W, j.W }

// Run sums columns [lo, hi) over every row.
func (j *ColumnSum) Run(lo, hi int) { j.RunRows(lo, hi, 0, j.N, true) }

// RunRows sums columns [lo, hi) over rows [n0, n1), from +0 when first.
func (j *ColumnSum) RunRows(lo, hi, n0, n1 int, first bool) {
	s := j.Sum[lo:hi]
	if first {
		clear(s)
	}
	for n := n0; n < n1; n++ {
		// Row by row, every column's chain advances by one add.
		kernels.Add(s, s, j.Rows[n*j.W+lo:n*j.W+hi])
	}
}

// Transpose writes, for each of its parts, dst = srcᵀ (src of R rows of
// W: dst[o*R+i] = src[i*W+o]), over the rows of the parts' dsts laid end
// to end: the transposed weights MatmulInputGrad reads. No sum is
// involved. A job over those rows.
type Transpose struct {
	Parts []TransposePart
}

// TransposePart is one matrix of a Transpose.
type TransposePart struct {
	Dst, Src []float64 // (W, R), (R, W)
	R, W     int
}

// transposeCost is a transposed element's cost in multiply-adds: a load
// and a store that miss the cache in turn take about as long as 32 of
// the kernels' multiply-adds.
const transposeCost = 32

// Size is the items (rows of the dsts), grain and a row's cost.
func (j *Transpose) Size() (items, grain, cost int) {
	rows := j.Rows()
	return rows, 8, transposeCost * j.Elems() / max(rows, 1)
}

// Rows is the number of items: the rows of all the dsts.
func (j *Transpose) Rows() int {
	n := 0
	for _, p := range j.Parts {
		n += p.W
	}
	return n
}

// Elems is the number of elements transposed.
func (j *Transpose) Elems() int {
	n := 0
	for _, p := range j.Parts {
		n += p.R * p.W
	}
	return n
}

// Run writes dst rows [lo, hi) of the parts laid end to end.
func (j *Transpose) Run(lo, hi int) {
	first := 0 // the item of the part's dst row 0
	for _, p := range j.Parts {
		o0, o1 := max(lo-first, 0), min(hi-first, p.W)
		first += p.W
		if o0 < o1 {
			kernels.Transpose(p.Dst, p.Src, p.R, p.W, o0, o1)
		}
	}
}
