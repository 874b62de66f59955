package minigpt

// This file holds gradient clipping: the global norm, in its fixed orders,
// and the scaling.

import (
	"math"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/par"
)

// clipper is clipGradients' scratch: the blocks' sums of quickSumSquares
// and the jobs that spread the work, kept so that a step allocates
// nothing.
type clipper struct {
	parts []float64
	sq    sumSquaresJob
	scale scaleJob
}

// newClipper returns the scratch for a slab of n parameters.
func newClipper(n int) clipper {
	return clipper{parts: make([]float64, n/sumSquaresBlock+1)}
}

// clipGradients scales grads so that their global L2 norm is at most clip
// (0: no clipping) and returns the norm before scaling and whether it
// scaled. A norm equal to clip is left alone, as in PyTorch's
// clip_grad_norm_ (which scales by clip/norm only above 1). A non-finite
// norm is returned unclipped for the caller to refuse.
//
// The norm that scales is the serial chain of kernels.SumSquares, one fused
// multiply-add after another in slab order: the weights' bits depend on
// it. That chain is bound by the adder's latency (about 1 ms for the
// baby config, with the other cores idle), and most steps do not need
// it: with clipping off, the norm only has to be finite, and below the
// clip only has to be below it. So a parallel sum in fixed blocks
// (quickSumSquares, its own order, the same at any GOMAXPROCS) answers
// first; the serial chain runs only when that sum is not comfortably
// finite or not comfortably below clip², where the two sums could
// disagree. Both add the same n non-negative terms (fused squares), in
// different orders, so each is within a factor (1 ± n·2⁻⁵³) of the
// exact sum; the margin below is four times that (and covers clip²'s
// own rounding). When the quick sum
// answers, the norm returned is its square root, which may differ from
// the serial chain's in the last bits; nothing but the finiteness check
// reads it then. cl holds the scratch for the blocks' sums and the jobs
// that spread the work over the workers; nil does it all on the calling
// goroutine.
func clipGradients(grads []float64, clip float64, cl *clipper) (norm float64, clipped bool) {
	if margin := 4 * float64(len(grads)) * 0x1p-53; margin < 0x1p-10 {
		q := quickSumSquares(grads, cl)
		if q < math.MaxFloat64/4 && (clip <= 0 || q <= clip*clip*(1-margin)) {
			return math.Sqrt(q), false
		}
	}
	norm = math.Sqrt(kernels.SumSquares(grads))
	if math.IsNaN(norm) || math.IsInf(norm, 0) || clip <= 0 || !(norm > clip) {
		return norm, false
	}
	s := clip / norm
	if cl == nil {
		kernels.Scale(grads, s)
		return norm, true
	}
	// The slab is megabytes, which one core sweeps at a fraction of the
	// memory bandwidth two reach.
	cl.scale = scaleJob{x: grads, s: s}
	par.For(&cl.scale, len(grads), 512, 1)
	return norm, true
}

// sumSquaresBlock is the number of elements quickSumSquares sums as one
// block: a fixed size, so that the blocks, and the sum, do not depend on
// how many workers there are.
const sumSquaresBlock = 8192

// quickSumSquares is Σ x² in its own fixed order: blocks of
// sumSquaresBlock elements, each as eight interleaved chains (element i
// to chain i mod 8) added pairwise, the blocks' sums then added in
// order. With cl (whose parts hold the blocks' sums, at least one per
// block), the blocks are spread over the workers.
func quickSumSquares(xs []float64, cl *clipper) float64 {
	n := (len(xs) + sumSquaresBlock - 1) / sumSquaresBlock
	if cl == nil || len(cl.parts) < n {
		s := 0.0
		for b := range n {
			s += kernels.SumSquares8(xs[b*sumSquaresBlock : min((b+1)*sumSquaresBlock, len(xs))])
		}
		return s
	}
	cl.sq = sumSquaresJob{xs: xs, parts: cl.parts[:n]}
	par.For(&cl.sq, n, 1, sumSquaresBlock)
	s := 0.0
	for _, v := range cl.parts[:n] {
		s += v
	}
	return s
}

// sumSquaresJob sums the squares of blocks [lo, hi) of xs into parts.
type sumSquaresJob struct {
	xs, parts []float64
}

func (j *sumSquaresJob) Run(lo, hi int) {
	for b := lo; b < hi; b++ {
		j.parts[b] = kernels.SumSquares8(j.xs[b*sumSquaresBlock : min((b+1)*sumSquaresBlock, len(j.xs))])
	}
}

// scaleJob sets x[i] *= s over a range of indices.
type scaleJob struct {
	x []float64
	s float64
}

func (j *scaleJob) Run(lo, hi int) { kernels.Scale(j.x[lo:hi], j.s) }
