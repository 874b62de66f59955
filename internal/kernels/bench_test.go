// bench_test.go holds the kernels' benchmarks: the GEMMs per path and shape, the peak loops, the vector and LayerNorm loops.

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemm times every kernel path on every training shape and the
// full config's largest ones, single threaded, and reports GFLOP/s
// (2·M·N·K flops per call).
func BenchmarkGemm(b *testing.B) {
	b.Cleanup(SetPath(Path()))
	for _, path := range Impls() {
		restore := SetPath(path)
		for _, s := range append(gemmShapes[:len(gemmShapes):len(gemmShapes)], fullGemmShapes...) {
			b.Run(path+"/"+s.name, func(b *testing.B) {
				g := s.newCase(rand.New(rand.NewPCG(7, 8)))
				c := g.c
				b.ReportAllocs()
				for b.Loop() {
					if g.nt {
						GemmNT(c, g.ldc, g.a, g.ai, g.b, g.ld, g.M, g.N, g.K)
					} else {
						GemmNN(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
					}
				}
				flops := 2 * float64(g.M) * float64(g.N) * float64(g.K)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		restore()
	}
}

// BenchmarkPeakFMA measures this machine's double-precision peak on one
// core: a loop of independent fused multiply-adds per instruction set
// the CPU has (peak_amd64.s). Every GFLOP/s figure of the other
// benchmarks and of the README is stated as a share of this number, not
// of a clock speed looked up somewhere.
func BenchmarkPeakFMA(b *testing.B) {
	if len(Peaks()) == 0 {
		b.Skip("no assembly peak loop on this platform")
	}
	for _, p := range Peaks() {
		b.Run(p.Name, func(b *testing.B) {
			const rounds = 1 << 16
			for b.Loop() {
				p.Run(rounds)
			}
			b.ReportMetric(float64(p.Flops)*rounds*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// benchFill is n values in [-0.4, 0.6).
func benchFill(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.Float64() - 0.4
	}
	return x
}

// layerNormRows runs LayerNorm forward (fwd) or the backward rows over
// N rows of C as the model's layer does: blocks of eight rows, each
// block's statistics (row sums) and then its rows.
func layerNormRows(fwd bool, out, mean, rstd, inp, w, bias, dinp, dout []float64, N, C int) {
	var s1, s2 [8]float64
	for n := 0; n < N; n += 8 {
		e := min(n+8, N)
		x := inp[n*C : e*C]
		if fwd {
			LayerNormStats(mean[n:e], rstd[n:e], x, e-n, C, 1e-5)
			LayerNormApply(out[n*C:e*C], x, w, bias, mean[n:e], rstd[n:e], e-n, C)
			continue
		}
		d, di := dout[n*C:e*C], dinp[n*C:e*C]
		LayerNormRowSums(s1[:e-n], s2[:e-n], x, d, w, mean[n:e], rstd[n:e], e-n, C)
		LayerNormInputGrad(di, di, x, d, w, mean[n:e], rstd[n:e], s1[:e-n], s2[:e-n], e-n, C)
	}
}

// BenchmarkNonGemmLoops times the vector kernels on every path at the
// baby config's shapes (768 rows of width 128, MLP width 512, one causal
// head's 64 softmax rows of lengths 1-64, Adam over a slab of the baby
// model's 0.8M parameters), one core, so that the Go path times the Go
// twins.
func BenchmarkNonGemmLoops(b *testing.B) {
	const N, C, T, P = 768, 128, 64, 818241
	rng := rand.New(rand.NewPCG(47, 48))
	params, grads, m, v := benchFill(rng, P), benchFill(rng, P), make([]float64, P), make([]float64, P)
	att := benchFill(rng, T*T)
	inp, w, bias, dout := benchFill(rng, N*C), benchFill(rng, C), benchFill(rng, C), benchFill(rng, N*C)
	out, mean, rstd, dinp, dw, db := make([]float64, N*C), make([]float64, N), make([]float64, N), make([]float64, N*C), make([]float64, C), make([]float64, C)
	h, dh, res := benchFill(rng, N*4*C), benchFill(rng, N*4*C), make([]float64, N*C)
	k := AdamCoefficients{Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, LR: 1e-3, Eps: 1e-8, Shrink: 1}
	b.Cleanup(SetPath(Path()))
	for _, path := range Impls() {
		restore := SetPath(path)
		for _, op := range []struct {
			name string
			run  func()
		}{
			{"softmax", func() {
				for t := 0; t < T; t++ {
					Softmax(att[t*T:t*T+t+1], att[t*T:t*T+t+1])
				}
			}},
			{"layernorm", func() {
				layerNormRows(true, out, mean, rstd, inp, w, bias, nil, nil, N, C)
				layerNormRows(false, nil, mean, rstd, inp, w, nil, dinp, dout, N, C)
				LayerNormParamGrads(dw, db, dout, inp, mean, rstd, N, C, C)
			}},
			{"relu", func() {
				ReLU(h, h)
				ReLUMask(dh, h)
			}},
			{"residual", func() { Add(res, inp, dout) }},
			{"adam", func() { Adam(params, grads, m, v, k) }},
		} {
			b.Run(path+"/"+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					op.run()
				}
			})
		}
		restore()
	}
}

// BenchmarkLayerNormRows times LayerNorm's row kernels alone, forward
// (statistics and normalisation) and backward (row sums and input
// gradient), in blocks of eight rows as the model's layer runs them, at
// the seed config's shape (256 rows of 64) and the baby config's (768
// rows of 128), on every path in one run, so the row-statistics kernels
// are timed as ratios to the Go twins.
func BenchmarkLayerNormRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(53, 54))
	b.Cleanup(SetPath(Path()))
	for _, shape := range []struct{ N, C int }{{256, 64}, {768, 128}} {
		N, C := shape.N, shape.C
		out, mean, rstd := make([]float64, N*C), make([]float64, N), make([]float64, N)
		inp, w, bias := benchFill(rng, N*C), benchFill(rng, C), benchFill(rng, C)
		dinp, dout := make([]float64, N*C), benchFill(rng, N*C)
		for _, path := range Impls() {
			restore := SetPath(path)
			layerNormRows(true, out, mean, rstd, inp, w, bias, nil, nil, N, C)
			b.Run(fmt.Sprintf("C=%d/%s/forward", C, path), func(b *testing.B) {
				for b.Loop() {
					layerNormRows(true, out, mean, rstd, inp, w, bias, nil, nil, N, C)
				}
			})
			b.Run(fmt.Sprintf("C=%d/%s/backward", C, path), func(b *testing.B) {
				for b.Loop() {
					layerNormRows(false, nil, mean, rstd, inp, w, nil, dinp, dout, N, C)
				}
			})
			restore()
		}
	}
}
