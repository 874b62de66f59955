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
// 8 and 32 columns, at row counts that leave every kind of remainder to
// the row-statistics blocks of 8 and 4 rows, with guard zones around
// every output (the column blocks must stop at their range, the row
// loops at C and at the last row).
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
	for _, C := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 20, 32, 33, 36, 44, 63, 64, 65, 77, 128} {
		for _, N := range []int{1, 3, 4, 7, 9, 12, 17} {
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

				// The input gradient adds to di itself (src = di) or, in
				// every other case, starts from a separate row src.
				d, di := vectorValues(rng, n, every), vectorValues(rng, n, every)
				m1, m2 := scalar(every*4), scalar(every*4)
				start := di
				if rep%2 == 1 {
					start = vectorValues(rng, n, every)
				}
				copy(want, start)
				for i, xi := range x {
					xhat := float64((xi - mu) * r)
					dxhat := float64(w[i] * d[i])
					want[i] += float64(r * (dxhat - m1 - float64(xhat*m2)))
				}
				od, odi := newVecOperand(d, off()), newVecOperand(di, off())
				src, osrc := odi.s(), (*vecOperand)(nil)
				if rep%2 == 1 {
					osrc = newVecOperand(start, off())
					src = osrc.s()
				}
				if !lnBackwardRowBlocks(odi.s(), src, ox.s(), od.s(), ow.s(), mu, r, m1, m2) {
					t.Fatalf("%s: the %s path declined", what("backward row"), path)
				}
				for _, o := range []*vecOperand{ox, ow, od, osrc} {
					if o != nil {
						o.check(t, what("backward row"), false)
					}
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

// lnStatsWidths are the row widths the row-statistics loops are tested
// at: every width up to 20 (every tail of the AVX2 loops' 4 and the
// AVX-512 loops' 8 columns, and one or two blocks before it), and a
// block count's worth of columns with each kind of tail.
var lnStatsWidths = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 31, 32, 33, 63, 64, 65, 128}

// TestLayerNormRowStats checks the row-statistics loops (lnStatsBlock,
// lnRowSumsBlock) against the Go loops of forwardRows and backwardRows
// they replace, to the bit, row by row: every width of lnStatsWidths,
// 1 to 17 rows (so every remainder of the 8- and 4-row blocks is left
// over), walked as forwardRows walks them, every operand at every
// alignment between guard zones, with special values (NaN, ±Inf, ±0,
// subnormals, huge values whose squares overflow) in the rows, the
// weights and the statistics. Each call must cover the rows its path
// promises (8 on AVX-512 while 8 remain, then 4) and write nothing past
// them.
func TestLayerNormRowStats(t *testing.T) {
	forEachVectorPath(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(51, 52))
		off := func() int { return rng.IntN(4) }
		const unset = -7.25 // the value of every output a block must not write
		for _, C := range lnStatsWidths {
			for N := 1; N <= 17; N++ {
				for rep, every := range []int{0, 9, 3} {
					what := fmt.Sprintf("C %d, N %d, rep %d", C, N, rep)
					inp, dout, w := vectorValues(rng, N*C, every), vectorValues(rng, N*C, every), vectorValues(rng, C, every)
					if rep == 1 {
						// Specials without the huge ones, so that more rows
						// with zeros and subnormals keep a finite variance.
						for i := range inp {
							if !math.IsNaN(inp[i]) && !math.IsInf(inp[i], 0) && math.Abs(inp[i]) > 1e10 {
								inp[i] = 1e10
							}
						}
					}
					// The Go loops' statistics, one row at a time.
					wantMean, wantRstd := make([]float64, N), make([]float64, N)
					for n := range N {
						x := inp[n*C : n*C+C]
						s := 0.0
						for _, v := range x {
							s += v
						}
						mu := s / float64(C)
						v := 0.0
						for _, xi := range x {
							d := xi - mu
							v = math.FMA(d, d, v)
						}
						wantMean[n], wantRstd[n] = mu, 1/math.Sqrt(v/float64(C)+layerNormEps)
					}
					oin := newVecOperand(inp, off())
					omean, orstd := newVecOperand(filled(N, unset), off()), newVecOperand(filled(N, unset), off())
					done := lnStatsWalk(t, path, what, N, func(n int) int {
						return lnStatsBlock(omean.s()[n:], orstd.s()[n:], oin.s()[n*C:], C)
					})
					oin.check(t, what, false)
					omean.check(t, what, true)
					orstd.check(t, what, true)
					for _, c := range []struct {
						name      string
						got, want []float64
					}{{"mean", omean.s(), wantMean}, {"rstd", orstd.s(), wantRstd}} {
						if i, ok := sameBits(c.got[:done], c.want[:done]); !ok {
							t.Fatalf("%s: %s[%d] = %v, the Go loop gives %v (row %v)", what, c.name, i, c.got[i], c.want[i], inp[i*C:i*C+C])
						}
						for i := done; i < N; i++ {
							if c.got[i] != unset {
								t.Fatalf("%s: %s[%d] written, past the %d rows done", what, c.name, i, done)
							}
						}
					}

					// Backward, from statistics with specials of their own
					// now and then.
					mean, rstd := append([]float64(nil), wantMean...), append([]float64(nil), wantRstd...)
					for n := range N {
						if every > 0 && rng.IntN(every) == 0 {
							mean[n] = vectorSpecials[rng.IntN(len(vectorSpecials))]
						}
						if every > 0 && rng.IntN(every) == 0 {
							rstd[n] = vectorSpecials[rng.IntN(len(vectorSpecials))]
						}
					}
					wantA, wantB := make([]float64, N), make([]float64, N)
					for n := range N {
						x, d := inp[n*C:n*C+C], dout[n*C:n*C+C]
						mu, r := mean[n], rstd[n]
						s1, s2 := 0.0, 0.0
						for i, xi := range x {
							xhat := float64((xi - mu) * r)
							dxhat := float64(w[i] * d[i])
							s1 += dxhat
							s2 = math.FMA(dxhat, xhat, s2)
						}
						wantA[n], wantB[n] = s1, s2
					}
					odout, ow := newVecOperand(dout, off()), newVecOperand(w, off())
					omean, orstd = newVecOperand(mean, off()), newVecOperand(rstd, off())
					gotA, gotB := filled(N, unset), filled(N, unset)
					lnStatsWalk(t, path, what+" backward", N, func(n int) int {
						a, b := (*[8]float64)(filled(8, unset)), (*[8]float64)(filled(8, unset))
						k := lnRowSumsBlock(a, b, oin.s()[n*C:], odout.s()[n*C:], ow.s(), omean.s()[n:], orstd.s()[n:], C)
						for i := k; i < 8; i++ {
							if a[i] != unset || b[i] != unset {
								t.Fatalf("%s backward: rows from %d: wrote sum %d of a block of %d", what, n, i, k)
							}
						}
						copy(gotA[n:n+k], a[:k])
						copy(gotB[n:n+k], b[:k])
						return k
					})
					for _, o := range []*vecOperand{oin, odout, ow, omean, orstd} {
						o.check(t, what+" backward", false)
					}
					for _, c := range []struct {
						name      string
						got, want []float64
					}{{"Σ dxhat", gotA, wantA}, {"Σ dxhat·xhat", gotB, wantB}} {
						if i, ok := sameBits(c.got[:done], c.want[:done]); !ok {
							t.Fatalf("%s backward: %s of row %d = %v, the Go loop gives %v", what, c.name, i, c.got[i], c.want[i])
						}
					}
				}
			}
		}
	})
}

// lnStatsWalk walks N rows as forwardRows and backwardRows do, calling
// block(n) for the rows from n until it declines, checks that each call
// took the rows the path promises (8 while 8 remain on AVX-512, then 4
// while 4 remain) and returns the number of rows done.
func lnStatsWalk(t *testing.T, path, what string, N int, block func(n int) int) int {
	t.Helper()
	n := 0
	for n < N {
		want := 0
		switch {
		case path == "avx512" && N-n >= 8:
			want = 8
		case N-n >= 4:
			want = 4
		}
		k := block(n)
		if k != want {
			t.Fatalf("%s: the block from row %d of %d did %d rows, want %d", what, n, N, k, want)
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n
}

func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// BenchmarkLayerNormRows times forwardRows and backwardRows alone, on one
// goroutine, at the seed config's shape (256 rows of 64) and the baby
// config's (768 rows of 128), on every kernel path in one run, so the
// row-statistics loops are timed as ratios to the Go loops.
func BenchmarkLayerNormRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(53, 54))
	fill := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.Float64() - 0.4
		}
		return x
	}
	for _, shape := range []struct{ N, C int }{{256, 64}, {768, 128}} {
		N, C := shape.N, shape.C
		j := layernormJob{
			out: make([]float64, N*C), mean: make([]float64, N), rstd: make([]float64, N),
			inp: fill(N * C), weight: fill(C), bias: fill(C),
			dinp: make([]float64, N*C), dout: fill(N * C), N: N, C: C,
		}
		for _, k := range kernelImpls() {
			restore := setKernelPath(k.name)
			j.forwardRows(0, N)
			b.Run(fmt.Sprintf("C=%d/%s/forward", C, k.name), func(b *testing.B) {
				for b.Loop() {
					j.forwardRows(0, N)
				}
			})
			b.Run(fmt.Sprintf("C=%d/%s/backward", C, k.name), func(b *testing.B) {
				for b.Loop() {
					j.backwardRows(0, N)
				}
			})
			restore()
		}
	}
}
