// layernorm_test.go tests LayerNorm's kernels by hand and against their definitions on every path.

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// TestLayerNormHandComputed checks the LayerNorm kernels on rows worked
// out by hand, with ε chosen so that every value is exact: the row
// [1, 2] (repeated to any even width C) has mean 3/2 and variance 1/4,
// so with ε = 3/4 rstd is 1/√1 = 1; with weight 2 and bias 1 the
// normalised row is [0, 2]. With dout [1, 3] (dxhat [2, 6]) the row sums
// are Σ dxhat = 4C and Σ dxhat·xhat = C, so m1 = 4 and m2 = 1, and the
// input gradient is rstd·(dxhat - m1 - xhat·m2) = [-3/2, 3/2]; one row's
// weight and bias gradients are dout·xhat = [-1/2, 3/2] and dout.
// ε outside the root, a variance over C-1, or the wrong sign or mean in
// the backward step each change these values. Every path, widths and row
// counts across the vector blocks and tails.
func TestLayerNormHandComputed(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		for _, C := range []int{2, 4, 6, 8, 16, 34, 66} {
			for _, N := range []int{1, 3, 4, 8, 13} {
				rep := func(x ...float64) []float64 {
					s := make([]float64, N*C)
					for i := range s {
						s[i] = x[i%len(x)]
					}
					return s
				}
				inp, dout := rep(1, 2), rep(1, 3)
				mean, rstd := make([]float64, N), make([]float64, N)
				LayerNormStats(mean, rstd, inp, N, C, 0.75)
				for n := range N {
					if mean[n] != 1.5 || rstd[n] != 1 {
						t.Fatalf("C %d, N %d: row %d mean, rstd = %v, %v; want 1.5, 1", C, N, n, mean[n], rstd[n])
					}
				}
				out := make([]float64, N*C)
				LayerNormApply(out, inp, filled(C, 2), filled(C, 1), mean, rstd, N, C)
				if i, ok := testutil.SameBits(out, rep(0, 2)); !ok {
					t.Fatalf("C %d, N %d: out[%d] = %v, want %v", C, N, i, out[i], rep(0, 2)[i])
				}
				s1, s2 := make([]float64, N), make([]float64, N)
				LayerNormRowSums(s1, s2, inp, dout, filled(C, 2), mean, rstd, N, C)
				for n := range N {
					if s1[n] != float64(4*C) || s2[n] != float64(C) {
						t.Fatalf("C %d, N %d: row %d sums %v, %v; want %d, %d", C, N, n, s1[n], s2[n], 4*C, C)
					}
				}
				dinp := rep(10, 20)
				LayerNormInputGrad(dinp, dinp, inp, dout, filled(C, 2), mean, rstd, s1, s2, N, C)
				if i, ok := testutil.SameBits(dinp, rep(8.5, 21.5)); !ok {
					t.Fatalf("C %d, N %d: dinp[%d] = %v, want %v", C, N, i, dinp[i], rep(8.5, 21.5)[i])
				}
				dw, db := make([]float64, C), make([]float64, C)
				LayerNormParamGrads(dw, db, dout, inp, mean, rstd, N, C, C)
				for i := range C {
					w, b := float64(N)*[]float64{-0.5, 1.5}[i%2], float64(N)*[]float64{1, 3}[i%2]
					if dw[i] != w || db[i] != b {
						t.Fatalf("C %d, N %d: column %d gradients %v, %v; want %v, %v", C, N, i, dw[i], db[i], w, b)
					}
				}
			}
		}
	})
}

// lnStatsWidths are the row widths the LayerNorm kernels are tested at:
// every width up to 20 (every tail of the AVX2 loops' 4 and the AVX-512
// loops' 8 columns, and one or two blocks before it), and a block
// count's worth of columns with each kind of tail.
var lnStatsWidths = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 31, 32, 33, 63, 64, 65, 128}

// lnRowBlocks is the number of rows the row-statistics hooks of path do
// of N: blocks of 8 on AVX-512 while 8 are left, then blocks of 4.
func lnRowBlocks(path string, N int) int {
	switch path {
	case "avx512":
		return N/8*8 + N%8/4*4
	case "avx2":
		return N / 4 * 4
	}
	return 0
}

// TestLayerNormPaths checks every LayerNorm kernel on every path against
// its definition restated one row (or column) at a time, to the bit:
// every width of lnStatsWidths, 1 to 17 rows (so every remainder of the
// 8- and 4-row blocks is left over), every operand at every alignment
// between guard zones, with special values (NaN, ±Inf, ±0, subnormals,
// huge values whose squares overflow) in the rows, the weights and the
// statistics; the input gradient both added to dinp and started from a
// separate src; the parameter gradients over a random range of columns,
// as one parallel chunk takes them. On the assembly paths each hook must
// take the rows (columns) its blocks promise.
func TestLayerNormPaths(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(51, 52))
		off := func() int { return rng.IntN(4) }
		const eps = 1e-5
		for _, C := range lnStatsWidths {
			for N := 1; N <= 17; N++ {
				for rep, every := range []int{0, 9, 3} {
					what := fmt.Sprintf("C %d, N %d, rep %d", C, N, rep)
					inp, dout := vectorValues(rng, N*C, every), vectorValues(rng, N*C, every)
					w, b := vectorValues(rng, C, every), vectorValues(rng, C, every)
					if rep == 1 {
						// Specials without the huge ones, so that more rows
						// with zeros and subnormals keep a finite variance.
						for i := range inp {
							if !math.IsNaN(inp[i]) && !math.IsInf(inp[i], 0) && math.Abs(inp[i]) > 1e10 {
								inp[i] = 1e10
							}
						}
					}
					// The statistics, one row at a time.
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
						wantMean[n], wantRstd[n] = mu, 1/math.Sqrt(v/float64(C)+eps)
					}
					oin := newVecOperand(inp, off())
					omean, orstd := newVecOperand(make([]float64, N), off()), newVecOperand(make([]float64, N), off())
					LayerNormStats(omean.s(), orstd.s(), oin.s(), N, C, eps)
					oin.check(t, what, false)
					omean.check(t, what, true)
					orstd.check(t, what, true)
					for _, c := range []struct {
						name      string
						got, want []float64
					}{{"mean", omean.s(), wantMean}, {"rstd", orstd.s(), wantRstd}} {
						if i, ok := testutil.SameBits(c.got, c.want); !ok {
							t.Fatalf("%s: %s[%d] = %v, the definition gives %v (row %v)", what, c.name, i, c.got[i], c.want[i], inp[i*C:i*C+C])
						}
					}
					hookDid(t, path, what+" stats", lnStatsAsm(make([]float64, N), make([]float64, N), inp, N, C, eps), lnRowBlocks(path, N))

					// The statistics get specials of their own now and then.
					mean, rstd := append([]float64(nil), wantMean...), append([]float64(nil), wantRstd...)
					for n := range N {
						if every > 0 && rng.IntN(every) == 0 {
							mean[n] = vectorSpecials[rng.IntN(len(vectorSpecials))]
						}
						if every > 0 && rng.IntN(every) == 0 {
							rstd[n] = vectorSpecials[rng.IntN(len(vectorSpecials))]
						}
					}
					ow, ob := newVecOperand(w, off()), newVecOperand(b, off())
					omean, orstd = newVecOperand(mean, off()), newVecOperand(rstd, off())
					inputs := []*vecOperand{oin, ow, ob, omean, orstd}

					want := make([]float64, N*C)
					for n := range N {
						for i := range C {
							want[n*C+i] = math.FMA(float64((inp[n*C+i]-mean[n])*rstd[n]), w[i], b[i])
						}
					}
					out := newVecOperand(vectorValues(rng, N*C, 0), off())
					LayerNormApply(out.s(), oin.s(), ow.s(), ob.s(), omean.s(), orstd.s(), N, C)
					for _, o := range inputs {
						o.check(t, what+" apply", false)
					}
					out.check(t, what+" apply", true)
					if i, ok := testutil.SameBits(out.s(), want); !ok {
						t.Fatalf("%s apply: out[%d] = %v, the definition gives %v", what, i, out.s()[i], want[i])
					}
					hookDid(t, path, what+" apply", lnApplyAsm(make([]float64, N*C), inp, w, b, mean, rstd, N, C), map[string]int{"avx2": N, "avx512": N}[path])

					wantS1, wantS2 := make([]float64, N), make([]float64, N)
					for n := range N {
						for i := range C {
							xhat := float64((inp[n*C+i] - mean[n]) * rstd[n])
							dxhat := float64(w[i] * dout[n*C+i])
							wantS1[n] += dxhat
							wantS2[n] = math.FMA(dxhat, xhat, wantS2[n])
						}
					}
					odout := newVecOperand(dout, off())
					inputs = append(inputs, odout)
					os1, os2 := newVecOperand(make([]float64, N), off()), newVecOperand(make([]float64, N), off())
					LayerNormRowSums(os1.s(), os2.s(), oin.s(), odout.s(), ow.s(), omean.s(), orstd.s(), N, C)
					for _, o := range inputs {
						o.check(t, what+" row sums", false)
					}
					os1.check(t, what+" row sums", true)
					os2.check(t, what+" row sums", true)
					for _, c := range []struct {
						name      string
						got, want []float64
					}{{"Σ dxhat", os1.s(), wantS1}, {"Σ dxhat·xhat", os2.s(), wantS2}} {
						if i, ok := testutil.SameBits(c.got, c.want); !ok {
							t.Fatalf("%s: %s of row %d = %v, the definition gives %v", what, c.name, i, c.got[i], c.want[i])
						}
					}
					hookDid(t, path, what+" row sums", lnRowSumsAsm(make([]float64, N), make([]float64, N), inp, dout, w, mean, rstd, N, C), lnRowBlocks(path, N))

					// The input gradient from the row sums (specials
					// included), added to dinp itself (src = dinp) or, in
					// every other case, started from a separate src.
					s1, s2 := vectorValues(rng, N, every*4), vectorValues(rng, N, every*4)
					dinp := vectorValues(rng, N*C, every)
					start := dinp
					if rep%2 == 1 {
						start = vectorValues(rng, N*C, every)
					}
					for n := range N {
						m1, m2 := s1[n]/float64(C), s2[n]/float64(C)
						for i := range C {
							xhat := float64((inp[n*C+i] - mean[n]) * rstd[n])
							dxhat := float64(w[i] * dout[n*C+i])
							want[n*C+i] = start[n*C+i] + float64(rstd[n]*(dxhat-m1-float64(xhat*m2)))
						}
					}
					odi, os1, os2 := newVecOperand(dinp, off()), newVecOperand(s1, off()), newVecOperand(s2, off())
					src := odi.s()
					if rep%2 == 1 {
						osrc := newVecOperand(start, off())
						inputs = append(inputs, osrc)
						src = osrc.s()
					}
					LayerNormInputGrad(odi.s(), src, oin.s(), odout.s(), ow.s(), omean.s(), orstd.s(), os1.s(), os2.s(), N, C)
					for _, o := range append(inputs, os1, os2) {
						o.check(t, what+" input grad", false)
					}
					odi.check(t, what+" input grad", true)
					if i, ok := testutil.SameBits(odi.s(), want); !ok {
						t.Fatalf("%s input grad: dinp[%d] = %v, the definition gives %v", what, i, odi.s()[i], want[i])
					}
					hookDid(t, path, what+" input grad", lnInputGradAsm(make([]float64, N*C), start, inp, dout, w, mean, rstd, s1, s2, N, C), map[string]int{"avx2": N, "avx512": N}[path])

					// The parameter gradients of the columns [lo, hi).
					lo := rng.IntN(C + 1)
					hi := lo + rng.IntN(C-lo+1)
					dw, db := vectorValues(rng, C, every), vectorValues(rng, C, every)
					wantW, wantB := append([]float64(nil), dw...), append([]float64(nil), db...)
					for i := lo; i < hi; i++ {
						for n := range N {
							g := dout[n*C+i]
							wantW[i] = math.FMA(g, float64((inp[n*C+i]-mean[n])*rstd[n]), wantW[i])
							wantB[i] += g
						}
					}
					odw, odb := newVecOperand(dw, off()), newVecOperand(db, off())
					LayerNormParamGrads(odw.s()[lo:hi], odb.s()[lo:hi], odout.s()[lo:], oin.s()[lo:], omean.s(), orstd.s(), N, hi-lo, C)
					cols := fmt.Sprintf("%s columns [%d,%d)", what, lo, hi)
					for _, o := range []*vecOperand{oin, odout, omean, orstd} {
						o.check(t, cols, false)
					}
					odw.check(t, cols, true)
					odb.check(t, cols, true)
					if i, ok := testutil.SameBits(odw.s(), wantW); !ok {
						t.Fatalf("%s: dweight[%d] = %v, the definition gives %v (was %v)", cols, i, odw.s()[i], wantW[i], dw[i])
					}
					if i, ok := testutil.SameBits(odb.s(), wantB); !ok {
						t.Fatalf("%s: dbias[%d] = %v, the definition gives %v (was %v)", cols, i, odb.s()[i], wantB[i], db[i])
					}
					narrow := map[string]int{"avx2": 4, "avx512": 8}[path]
					if hi > lo {
						hookDid(t, path, cols, lnParamGradsAsm(make([]float64, hi-lo), make([]float64, hi-lo), dout[lo:], inp[lo:], mean, rstd, N, hi-lo, C), (hi-lo)/max(narrow, 1)*narrow)
					}
				}
			}
		}
	})
}
