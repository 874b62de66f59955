// layernorm_eps_test.go tests LayerNorm's ε by a LayerNorm of tiny rows computed by hand.

package nn

import (
	"math"
	"testing"
)

// TestLayerNormEpsilon checks LayerNorm on rows worked out by hand with
// the lessons' ε = 1e-5 (rstd = 1/√(var + ε), the variance over C), on
// every kernel path. The first row, [-a, a] with a = 2^-8, has mean 0
// and variance a² = 2^-16 ≈ 1.5e-5, of the order of ε itself, so its
// normalised values ±a/√(a² + 1e-5) ≈ ±0.777 move by percents when ε
// moves (1e-6 gives ±0.969, 0 gives ±1): the test fails for ε alone,
// with the value the lessons' ε gives. The second row, [1, 2, 3, 4]
// (mean 5/2, variance 5/4), pins the ordinary scale, where ε shifts
// the output by 4e-6 relatively. Weight 3 and bias -1 are applied after.
func TestLayerNormEpsilon(t *testing.T) {
	const eps = 1e-5 // the lessons' LayerNorm ε
	a := math.Ldexp(1, -8)
	cases := []struct {
		row        []float64
		mean, vari float64
	}{
		{[]float64{-a, a}, 0, a * a},
		{[]float64{1, 2, 3, 4}, 2.5, 1.25},
	}
	forEachPath(t, func(t *testing.T) {
		for _, tc := range cases {
			C := len(tc.row)
			w, b := make([]float64, C), make([]float64, C)
			for i := range w {
				w[i], b[i] = 3, -1
			}
			out, mean, rstd := nanSlice(C), nanSlice(1), nanSlice(1)
			j := LayerNorm{Out: out, Inp: tc.row, Mean: mean, Rstd: rstd, Weight: w, Bias: b, C: C}
			j.Run(0, 1)
			wantRstd := 1 / math.Sqrt(tc.vari+eps)
			if mean[0] != tc.mean || math.Abs(rstd[0]-wantRstd) > 1e-14*wantRstd {
				t.Fatalf("row %v: mean %v, rstd %v; want %v and 1/√(%v + %v) = %v", tc.row, mean[0], rstd[0], tc.mean, tc.vari, eps, wantRstd)
			}
			for i, x := range tc.row {
				want := 3*(x-tc.mean)/math.Sqrt(tc.vari+eps) - 1
				if math.Abs(out[i]-want) > 1e-13*math.Abs(want) {
					t.Errorf("row %v: out[%d] = %.17g, want 3·(%v - %v)/√(%v + %v) - 1 = %.17g", tc.row, i, out[i], x, tc.mean, tc.vari, eps, want)
				}
			}
		}
	})
}
