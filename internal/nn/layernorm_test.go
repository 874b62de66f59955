package nn

import (
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

// TestLayerNormPaths checks LayerNorm forward and backward on every kernel
// path against the portable Go loops, to the bit, at widths that are and
// are not multiples of the AVX2 loops' 4 and 16 and the AVX-512 loops'
// 8 and 32 columns, at row counts that leave every kind of remainder to
// the row-statistics blocks of 8 and 4 rows, with guard zones around
// every output (the column blocks must stop at their range, the row
// loops at C and at the last row). The input gradient starts from a
// given gradient (Start) and the weight and bias gradients continue
// given sums, so both ways of writing a gradient are checked.
func TestLayerNormPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	fill := func(n int, scale float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = (rng.Float64() - 0.3) * scale
		}
		return x
	}
	type result struct{ out, mean, rstd, dinp, dw, db []float64 }
	run := func(path string, N, C int, inp, w, b, dout, dinp0, dw0, db0 []float64) (result, bool) {
		defer kernels.SetPath(path)()
		g := func(x []float64) []float64 {
			y := testutil.Guarded(make([]float64, len(x)))
			copy(y[testutil.GuardLen:], x)
			return y
		}
		out, mean, rstd := g(make([]float64, N*C)), g(make([]float64, N)), g(make([]float64, N))
		dinp, dw, db := g(make([]float64, N*C)), g(dw0), g(db0)
		in := func(y []float64, n int) []float64 { return y[testutil.GuardLen : testutil.GuardLen+n] }
		f := LayerNorm{Out: in(out, N*C), Mean: in(mean, N), Rstd: in(rstd, N), Inp: inp, Weight: w, Bias: b, C: C}
		runInRanges(&f, N, 3)
		bw := LayerNormBackward{DInp: in(dinp, N*C), Start: dinp0, DOut: dout, Inp: inp, Weight: w, Mean: in(mean, N), Rstd: in(rstd, N), C: C}
		runInRanges(&bw, N, 2)
		pg := LayerNormParamGrads{DWeight: in(dw, C), DBias: in(db, C), DOut: dout, Inp: inp, Mean: in(mean, N), Rstd: in(rstd, N), N: N, C: C}
		runInRanges(&pg, C, 5)
		for _, z := range []struct {
			y []float64
			n int
		}{{out, N * C}, {mean, N}, {rstd, N}, {dinp, N * C}, {dw, C}, {db, C}} {
			if i, ok := testutil.CheckGuards(z.y, z.n); !ok {
				t.Errorf("%s, N %d, C %d: wrote element %d of a buffer of %d", path, N, C, i, z.n)
				return result{}, false
			}
		}
		return result{in(out, N*C), in(mean, N), in(rstd, N), in(dinp, N*C), in(dw, C), in(db, C)}, true
	}
	for _, C := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 20, 32, 33, 36, 44, 63, 64, 65, 77, 128} {
		for _, N := range []int{1, 3, 4, 7, 9, 12, 17} {
			inp, w, b, dout := fill(N*C, 6), fill(C, 2), fill(C, 1), fill(N*C, 1)
			dinp0, dw0, db0 := fill(N*C, 1), fill(C, 1), fill(C, 1) // the input gradient's start, the sums to continue
			want, ok := run("go", N, C, inp, w, b, dout, dinp0, dw0, db0)
			if !ok {
				return
			}
			for _, path := range kernels.Impls() {
				got, ok := run(path, N, C, inp, w, b, dout, dinp0, dw0, db0)
				if !ok {
					return
				}
				for _, c := range []struct {
					name      string
					got, want []float64
				}{{"out", got.out, want.out}, {"mean", got.mean, want.mean}, {"rstd", got.rstd, want.rstd}, {"dinp", got.dinp, want.dinp}, {"dweight", got.dw, want.dw}, {"dbias", got.db, want.db}} {
					if i, ok := testutil.SameBits(c.got, c.want); !ok {
						t.Fatalf("%s, N %d, C %d: %s[%d] = %v, the Go loops give %v", path, N, C, c.name, i, c.got[i], c.want[i])
					}
				}
			}
		}
	}
}
