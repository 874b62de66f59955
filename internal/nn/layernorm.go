package nn

// This file holds LayerNorm, forward and backward.

import "example.org/minigpt/internal/kernels"

// Eps is LayerNorm's epsilon, the lessons'.
const Eps = 1e-5

// lnRows is the number of rows LayerNorm hands to the kernels at a time:
// their statistics (or row sums) and then their normalised rows (input
// gradients), while the rows are in L1. The kernels keep every row's
// chains in order, so the block changes no bit.
const lnRows = 8

// LayerNorm is out = (inp - mean)·rstd·weight + bias per row, rstd =
// 1/sqrt(var + Eps); mean and rstd are kept for the backward pass. A job
// over rows.
type LayerNorm struct {
	Out, Inp     []float64 // (N, C)
	Mean, Rstd   []float64 // (N)
	Weight, Bias []float64 // (C)
	C            int
}

// RowCost is a row's cost in multiply-adds.
func (j *LayerNorm) RowCost() int { return 8 * j.C }

// Run normalises rows [lo, hi).
func (j *LayerNorm) Run(lo, hi int) {
	C := j.C
	for n := lo; n < hi; n += lnRows {
		e := min(n+lnRows, hi)
		kernels.LayerNormStats(j.Mean[n:e], j.Rstd[n:e], j.Inp[n*C:e*C], e-n, C, Eps)
		kernels.LayerNormApply(j.Out[n*C:e*C], j.Inp[n*C:e*C], j.Weight[:C], j.Bias[:C], j.Mean[n:e], j.Rstd[n:e], e-n, C)
	}
}

// LayerNormBackward is the input gradient of out = xhat·weight + bias,
// xhat = (inp - mean)·rstd, per row:
//
//	dinp = start + rstd·(dxhat - mean(dxhat) - xhat·mean(dxhat·xhat)),  dxhat = dout·weight
//
// with start +0 when Start is nil (else the residual stream's gradient
// that flows past the LayerNorm). A job over rows. Its weight and bias
// gradients, sums over rows, are LayerNormParamGrads.
type LayerNormBackward struct {
	DInp, Start []float64 // (N, C); Start may be nil
	DOut, Inp   []float64 // (N, C)
	Weight      []float64 // (C)
	Mean, Rstd  []float64 // (N)
	C           int
}

// RowCost is a row's cost in multiply-adds.
func (j *LayerNormBackward) RowCost() int { return 8 * j.C }

// Run writes the input gradients of rows [lo, hi).
func (j *LayerNormBackward) Run(lo, hi int) {
	C := j.C
	if j.Start == nil {
		clear(j.DInp[lo*C : hi*C])
	}
	var s1, s2 [lnRows]float64 // sums of dxhat, of dxhat·xhat
	for n := lo; n < hi; n += lnRows {
		e := min(n+lnRows, hi)
		inp, dout, di := j.Inp[n*C:e*C], j.DOut[n*C:e*C], j.DInp[n*C:e*C]
		src := di
		if j.Start != nil {
			src = j.Start[n*C : e*C]
		}
		kernels.LayerNormRowSums(s1[:e-n], s2[:e-n], inp, dout, j.Weight[:C], j.Mean[n:e], j.Rstd[n:e], e-n, C)
		kernels.LayerNormInputGrad(di, src, inp, dout, j.Weight[:C], j.Mean[n:e], j.Rstd[n:e], s1[:e-n], s2[:e-n], e-n, C)
	}
}

// LayerNormParamGrads is LayerNorm's weight and bias gradients over N
// rows, each column a chain in row order:
//
//	dweight[i] += Σ_n dout[n,i]·xhat[n,i];  dbias[i] += Σ_n dout[n,i]
//
// from +0. A sum over rows (par.Sum) whose items are columns.
type LayerNormParamGrads struct {
	DWeight, DBias []float64 // (C)
	DOut, Inp      []float64 // (N, C)
	Mean, Rstd     []float64 // (N)
	N, C           int
}

// Size is the items, grain and an item's cost.
func (j *LayerNormParamGrads) Size() (items, grain, cost int) { return j.C, 4, 3 * j.N }

// SumRows is the rows, the values they hold and the outputs.
func (j *LayerNormParamGrads) SumRows() (rows, rowValues, outValues int) {
	return j.N, j.N * (2*j.C + 2), 2 * j.C
}

// Run sums columns [lo, hi) over every row.
func (j *LayerNormParamGrads) Run(lo, hi int) { j.RunRows(lo, hi, 0, j.N, true) }

// RunRows sums columns [lo, hi) over rows [n0, n1), from +0 when first.
func (j *LayerNormParamGrads) RunRows(lo, hi, n0, n1 int, first bool) {
	if first {
		clear(j.DWeight[lo:hi])
		clear(j.DBias[lo:hi])
	}
	C := j.C
	kernels.LayerNormParamGrads(j.DWeight[lo:hi], j.DBias[lo:hi], j.DOut[n0*C+lo:], j.Inp[n0*C+lo:], j.Mean[n0:], j.Rstd[n0:], n1-n0, hi-lo, C)
}
