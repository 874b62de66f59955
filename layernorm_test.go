package minigpt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLayerNormPaths checks LayerNorm forward and backward on every kernel
// path against the portable Go loops, to the bit, at widths that are and
// are not multiples of the AVX2 loops' 4 and 16 and the AVX-512 loops'
// 8 and 32 columns, with guard
// zones around every output (the column blocks must stop at their
// range, the row loops at C).
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
		defer setKernelPath(path)()
		g := func(x []float64) []float64 { y := guarded(make([]float64, len(x))); copy(y[guardLen:], x); return y }
		out, mean, rstd := g(make([]float64, N*C)), g(make([]float64, N)), g(make([]float64, N))
		dinp, dw, db := g(dinp0), g(dw0), g(db0)
		in := func(y []float64, n int) []float64 { return y[guardLen : guardLen+n] }
		layernormForward(in(out, N*C), in(mean, N), in(rstd, N), inp, w, b, N, C)
		layernormBackward(in(dinp, N*C), in(dw, C), in(db, C), dout, inp, w, in(mean, N), in(rstd, N), N, C)
		for _, z := range []struct {
			y []float64
			n int
		}{{out, N * C}, {mean, N}, {rstd, N}, {dinp, N * C}, {dw, C}, {db, C}} {
			if i, ok := checkGuards(z.y, z.n); !ok {
				t.Errorf("%s, N %d, C %d: wrote element %d of a buffer of %d", path, N, C, i, z.n)
				return result{}, false
			}
		}
		return result{in(out, N*C), in(mean, N), in(rstd, N), in(dinp, N*C), in(dw, C), in(db, C)}, true
	}
	for _, C := range []int{1, 2, 3, 4, 5, 8, 13, 17, 20, 32, 36, 44, 64, 77, 128} {
		for _, N := range []int{1, 3, 4, 9} {
			inp, w, b, dout := fill(N*C, 6), fill(C, 2), fill(C, 1), fill(N*C, 1)
			dinp0, dw0, db0 := fill(N*C, 1), fill(C, 1), fill(C, 1) // gradients accumulate
			want, ok := run("go", N, C, inp, w, b, dout, dinp0, dw0, db0)
			if !ok {
				return
			}
			for _, k := range kernelImpls() {
				got, ok := run(k.name, N, C, inp, w, b, dout, dinp0, dw0, db0)
				if !ok {
					return
				}
				for _, c := range []struct {
					name      string
					got, want []float64
				}{{"out", got.out, want.out}, {"mean", got.mean, want.mean}, {"rstd", got.rstd, want.rstd}, {"dinp", got.dinp, want.dinp}, {"dweight", got.dw, want.dw}, {"dbias", got.db, want.db}} {
					if i, ok := sameBits(c.got, c.want); !ok {
						t.Fatalf("%s, N %d, C %d: %s[%d] = %v, the Go loops give %v", k.name, N, C, c.name, i, c.got[i], c.want[i])
					}
				}
			}
		}
	}
}

// TestLayerNormVectorLoops checks LayerNorm's assembly loops directly
// against the Go loops they replace (layers.go), to the bit: the row
// normalisation and the input-gradient row at every length of
// vectorLengths, and the weight and bias column sums over random column
// ranges (the blocks of 16 and 4, or 32 and 8, and what they leave to
// the Go loop), every operand at every alignment, with special values.
func TestLayerNormVectorLoops(t *testing.T) {
	forEachVectorPath(t, func(t *testing.T, path string) {
		narrow := map[string]int{"avx2": 4, "avx512": 8}[path]
		rng := rand.New(rand.NewPCG(45, 46))
		off := func() int { return rng.IntN(4) }
		scalar := func(every int) float64 {
			if every > 0 && rng.IntN(every) == 0 {
				return vectorSpecials[rng.IntN(len(vectorSpecials))]
			}
			return randomValue(rng)
		}
		for _, n := range vectorLengths {
			for rep, every := range []int{0, 6, 2} {
				what := func(op string) string { return fmt.Sprintf("%s n=%d rep %d", op, n, rep) }
				x, w, b := vectorValues(rng, n, every), vectorValues(rng, n, every), vectorValues(rng, n, every)
				mu, r := scalar(every*4), math.Abs(scalar(every*4))
				want := make([]float64, n)
				for i, xi := range x {
					want[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
				}
				ox, ow, ob := newVecOperand(x, off()), newVecOperand(w, off()), newVecOperand(b, off())
				out := newVecOperand(vectorValues(rng, n, 0), off())
				if !lnNormalizeBlocks(out.s(), ox.s(), ow.s(), ob.s(), mu, r) {
					t.Fatalf("%s: the %s path declined", what("normalize"), path)
				}
				for _, o := range []*vecOperand{ox, ow, ob} {
					o.check(t, what("normalize"), false)
				}
				out.check(t, what("normalize"), true)
				if i, ok := sameBits(out.s(), want); !ok {
					t.Fatalf("%s: o[%d] = %v, Go gives %v (x %v, w %v, b %v, mu %v, r %v)", what("normalize"), i, out.s()[i], want[i], x[i], w[i], b[i], mu, r)
				}

				d, di := vectorValues(rng, n, every), vectorValues(rng, n, every)
				m1, m2 := scalar(every*4), scalar(every*4)
				copy(want, di)
				for i, xi := range x {
					xhat := float64((xi - mu) * r)
					dxhat := float64(w[i] * d[i])
					want[i] += float64(r * (dxhat - m1 - float64(xhat*m2)))
				}
				od, odi := newVecOperand(d, off()), newVecOperand(di, off())
				if !lnBackwardRowBlocks(odi.s(), ox.s(), od.s(), ow.s(), mu, r, m1, m2) {
					t.Fatalf("%s: the %s path declined", what("backward row"), path)
				}
				for _, o := range []*vecOperand{ox, ow, od} {
					o.check(t, what("backward row"), false)
				}
				odi.check(t, what("backward row"), true)
				if i, ok := sameBits(odi.s(), want); !ok {
					t.Fatalf("%s: di[%d] = %v, Go gives %v", what("backward row"), i, odi.s()[i], want[i])
				}

				// Column sums: n is the width C, over N rows, for the
				// columns [lo, hi) of one parallel chunk.
				C := max(n, 1)
				N := 1 + rng.IntN(5)
				lo := rng.IntN(C + 1)
				hi := lo + rng.IntN(C-lo+1)
				dout, inp := vectorValues(rng, N*C, every), vectorValues(rng, N*C, every)
				mean, rstd := vectorValues(rng, N, every*4), vectorValues(rng, N, every*4)
				dw, db := vectorValues(rng, C, every), vectorValues(rng, C, every)
				wantW, wantB := append([]float64(nil), dw...), append([]float64(nil), db...)
				wantEnd := lo + (hi-lo)/narrow*narrow
				for i := lo; i < wantEnd; i++ {
					for row := 0; row < N; row++ {
						g := dout[row*C+i]
						wantW[i] = math.FMA(g, float64((inp[row*C+i]-mean[row])*rstd[row]), wantW[i])
						wantB[i] += g
					}
				}
				odo, oin, ome, ors := newVecOperand(dout, off()), newVecOperand(inp, off()), newVecOperand(mean, off()), newVecOperand(rstd, off())
				odw, odb := newVecOperand(dw, off()), newVecOperand(db, off())
				end := lnColumnsBlocks(odw.s(), odb.s(), odo.s(), oin.s(), ome.s(), ors.s(), N, C, lo, hi)
				cols := what(fmt.Sprintf("columns [%d,%d) of %d, %d rows", lo, hi, C, N))
				if end != wantEnd {
					t.Fatalf("%s: left the Go loop columns from %d, want %d", cols, end, wantEnd)
				}
				for _, o := range []*vecOperand{odo, oin, ome, ors} {
					o.check(t, cols, false)
				}
				odw.check(t, cols, true)
				odb.check(t, cols, true)
				if i, ok := sameBits(odw.s(), wantW); !ok {
					t.Fatalf("%s: dweight[%d] = %v, Go gives %v (was %v)", cols, i, odw.s()[i], wantW[i], dw[i])
				}
				if i, ok := sameBits(odb.s(), wantB); !ok {
					t.Fatalf("%s: dbias[%d] = %v, Go gives %v (was %v)", cols, i, odb.s()[i], wantB[i], db[i])
				}
			}
		}
	})
}
