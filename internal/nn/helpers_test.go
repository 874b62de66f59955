package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// forEachPath runs fn once per kernel path this machine has (the Go
// twins included), restoring the path after.
func forEachPath(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, path := range kernels.Impls() {
		t.Run(path, func(t *testing.T) {
			t.Cleanup(kernels.SetPath(path))
			fn(t)
		})
	}
}

// nanSlice is n NaNs: an output that must be set everywhere.
func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// fill returns n values uniform in [-scale/2, scale/2).
func fill(rng *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = (rng.Float64() - 0.5) * scale
	}
	return x
}

// randomSlice returns n values of mixed magnitudes, with zeros of both
// signs among them.
func randomSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		switch rng.IntN(16) {
		case 0:
			s[i] = 0
		case 1:
			s[i] = math.Copysign(0, -1)
		default:
			s[i] = math.Ldexp(rng.NormFloat64(), rng.IntN(40)-20)
		}
	}
	return s
}

// naiveNN is kernels.GemmNN's definition written out directly, one output
// at a time: a k-ascending chain of fused multiply-adds from the value in
// c.
func naiveNN(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			x := c[i*ldc+j]
			for k := 0; k < K; k++ {
				x = math.FMA(a[i*ai+k*ak], b[k*ldb+j], x)
			}
			c[i*ldc+j] = x
		}
	}
}

// runInRanges runs job over [0, n) in ranges of step items.
func runInRanges(job interface{ Run(lo, hi int) }, n, step int) {
	for lo := 0; lo < n; lo += step {
		job.Run(lo, min(lo+step, n))
	}
}
