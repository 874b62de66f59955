package minigpt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// forEachKernelPath runs fn once for every kernel implementation this
// machine can execute: always the portable Go kernels, and the assembly
// when the CPU supports it. The package runs on that path meanwhile
// (setKernelPath), so fn may call k.nn and k.nt or any layer code.
func forEachKernelPath(t *testing.T, fn func(t *testing.T, k kernelImpl)) {
	t.Helper()
	for _, k := range kernelImpls() {
		t.Run(k.name, func(t *testing.T) {
			defer setKernelPath(k.name)()
			fn(t, k)
		})
	}
}

// naiveNN is gemmNN's definition written out directly, one output at a
// time: a k-ascending chain of fused multiply-adds from the value in c.
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

// naiveNT is gemmNT's definition written out directly: element k of the
// dot product goes to lane k%8, lanes start at +0, then the fixed tree
// ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)) and one add into c.
func naiveNT(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s [8]float64
			for k := 0; k < K; k++ {
				s[k%8] = math.FMA(a[i*lda+k], b[j*ldb+k], s[k%8])
			}
			t0, t1, t2, t3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
			c[i*ldc+j] += (t0 + t2) + (t1 + t3)
		}
	}
}

// gemmCase is one kernel call with its operands; run copies c so that the
// case can be replayed on every path.
type gemmCase struct {
	nt              bool
	M, N, K         int
	ldc, ai, ak, ld int // ai is lda for gemmNT; ld is ldb
	a, b, c         []float64
}

func (g *gemmCase) String() string {
	if g.nt {
		return fmt.Sprintf("NT M=%d N=%d K=%d ldc=%d lda=%d ldb=%d", g.M, g.N, g.K, g.ldc, g.ai, g.ld)
	}
	return fmt.Sprintf("NN M=%d N=%d K=%d ldc=%d ai=%d ak=%d ldb=%d", g.M, g.N, g.K, g.ldc, g.ai, g.ak, g.ld)
}

// guardLen is the number of guard elements placed before and after each
// operand by run; guardBits is their value, a NaN no kernel computes.
const (
	guardLen  = 16
	guardBits = 0x7ff8dead0000beef
)

// guarded returns a copy of x inside guard zones: the result's x part is
// g[guardLen:guardLen+len(x)], and the slice handed to a kernel keeps the
// trailing zone within its capacity, so a store past the logical end
// lands in it instead of in unrelated memory.
func guarded(x []float64) []float64 {
	g := make([]float64, len(x)+2*guardLen)
	for i := range g {
		g[i] = math.Float64frombits(guardBits)
	}
	copy(g[guardLen:], x)
	return g
}

// checkGuards reports the first guard element of g that is not intact.
func checkGuards(g []float64, n int) (int, bool) {
	for i, v := range g {
		if (i < guardLen || i >= guardLen+n) && math.Float64bits(v) != guardBits {
			return i - guardLen, false
		}
	}
	return 0, true
}

// run applies the kernel pair nn/nt to a fresh copy of c and returns it.
// Every operand sits between guard zones: run panics if a kernel writes
// before or after C's elements (values past the logical end must be
// untouched) or writes to A or B at all (the kernels only read them).
func (g *gemmCase) run(nn func([]float64, int, []float64, int, int, []float64, int, int, int, int),
	nt func([]float64, int, []float64, int, []float64, int, int, int, int)) []float64 {
	if g.M <= 0 || g.N <= 0 {
		return append([]float64(nil), g.c...) // gemmNN and gemmNT return before any implementation runs
	}
	cg, ag, bg := guarded(g.c), guarded(g.a), guarded(g.b)
	nc, na, nb := len(g.c), len(g.a), len(g.b)
	c, a, b := cg[guardLen:guardLen+nc], ag[guardLen:guardLen+na], bg[guardLen:guardLen+nb]
	if g.nt {
		nt(c, g.ldc, a, g.ai, b, g.ld, g.M, g.N, g.K)
	} else {
		nn(c, g.ldc, a, g.ai, g.ak, b, g.ld, g.M, g.N, g.K)
	}
	if i, ok := checkGuards(cg, nc); !ok {
		panic(fmt.Sprintf("%v: the kernel wrote c[%d], outside c[0:%d]", g, i, nc))
	}
	for _, op := range []struct {
		name      string
		g, before []float64
	}{{"a", ag, g.a}, {"b", bg, g.b}} {
		if i, ok := checkGuards(op.g, len(op.before)); !ok {
			panic(fmt.Sprintf("%v: the kernel wrote %s[%d], outside the operand", g, op.name, i))
		}
		if i, ok := sameBits(op.g[guardLen:guardLen+len(op.before)], op.before); !ok {
			panic(fmt.Sprintf("%v: the kernel changed its input %s[%d]", g, op.name, i))
		}
	}
	return c
}

// span is the length a strided operand needs: 1 + the largest index used,
// counting an empty dimension as one (the reference kernels slice rows of
// length K even when K is 0).
func span(n0, s0, n1, s1 int) int {
	return (max(n0, 1)-1)*s0 + (max(n1, 1)-1)*s1 + 1
}

// randomValue draws values over many binades, with exact zeros of both
// signs now and then, so that rounding differences cannot hide.
func randomValue(rng *rand.Rand) float64 {
	switch rng.IntN(16) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	}
	return math.Ldexp(rng.NormFloat64(), rng.IntN(40)-20)
}

func randomSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = randomValue(rng)
	}
	return s
}

// randomGemmCase draws a shape (M, N, K < 41, zero sizes included, every
// K%8) and a stride pattern: plain, transposed A, broadcast rows or steps
// (ai=0, ak=0, ldb=0), padded leading dimensions and ldc=0 for one row.
func randomGemmCase(rng *rand.Rand, nt bool) *gemmCase {
	g := &gemmCase{nt: nt, M: rng.IntN(41), N: rng.IntN(41), K: rng.IntN(41)}
	if rng.IntN(8) == 0 {
		g.M = 1
	}
	pad := func() int {
		if rng.IntN(2) == 0 {
			return 0
		}
		return rng.IntN(5)
	}
	g.ldc = g.N + pad()
	if g.M == 1 && rng.IntN(3) == 0 {
		g.ldc = 0
	}
	var na, nb int
	if nt {
		g.ai, g.ld = g.K+pad(), g.K+pad()
		na, nb = span(g.M, g.ai, g.K, 1), span(g.N, g.ld, g.K, 1)
	} else {
		switch rng.IntN(5) {
		case 0, 1: // A row-major
			g.ai, g.ak = g.K+pad(), 1
		case 2: // A transposed
			g.ai, g.ak = 1, g.M+pad()
		case 3: // one row of A for every row of C
			g.ai, g.ak = 0, 1
		case 4: // one column of A for every step
			g.ai, g.ak = 1, 0
		}
		g.ld = g.N + pad()
		if rng.IntN(6) == 0 {
			g.ld = 0
		}
		na, nb = span(g.M, g.ai, g.K, g.ak), span(g.K, g.ld, g.N, 1)
	}
	g.a, g.b = randomSlice(rng, na), randomSlice(rng, nb)
	g.c = randomSlice(rng, span(g.M, g.ldc, g.N, 1))
	return g
}

// sameBits reports whether x and y are identical to the bit (any NaN
// equals any NaN: payloads are not part of the contract).
func sameBits(x, y []float64) (int, bool) {
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
			return i, false
		}
	}
	return -1, len(x) == len(y)
}

func TestGemmGoMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n++ {
		g := randomGemmCase(rng, n%2 == 1)
		want := g.run(naiveNN, naiveNT)
		got := g.run(gemmNNGo, gemmNTGo)
		if i, ok := sameBits(got, want); !ok {
			t.Fatalf("%v: c[%d] = %v, definition gives %v", g, i, got[i], want[i])
		}
	}
}

func TestGemmPathsBitIdentical(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(3, 4))
		for n := 0; n < 4000; n++ {
			g := randomGemmCase(rng, n%2 == 1)
			want := g.run(gemmNNGo, gemmNTGo)
			got := g.run(k.nn, k.nt)
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("%v: c[%d] = %v, portable kernel gives %v", g, i, got[i], want[i])
			}
		}
	})
}

// TestGemmTrainingShapes checks the paths on the model's real shapes,
// large enough to exercise every blocking level.
func TestGemmTrainingShapes(t *testing.T) {
	shapes := gemmShapes
	if testing.Short() {
		shapes = shapes[:3]
	}
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, s := range shapes {
			g := s.newCase(rng)
			want := g.run(gemmNNGo, gemmNTGo)
			got := g.run(k.nn, k.nt)
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("%s: c[%d] = %v, portable kernel gives %v", s.name, i, got[i], want[i])
			}
		}
	})
}

// TestGemmNegativeZeroLanes pins a corner of gemmNT's ragged tail: a lane
// that rounded to -0 must stay -0 when no element of the tail reaches it
// (adding a masked +0·+0 would turn it into +0).
func TestGemmNegativeZeroLanes(t *testing.T) {
	tiny := math.SmallestNonzeroFloat64
	forEachKernelPath(t, func(t *testing.T, kp kernelImpl) {
		for _, K := range []int{9, 13, 15, 17} {
			// Every product is -tiny², which rounds to -0, so every lane
			// is -0 and (with c = -0) so is the result.
			a := make([]float64, K)
			b := make([]float64, K)
			for k := range a {
				a[k], b[k] = -tiny, tiny
			}
			want := []float64{math.Copysign(0, -1)}
			naiveNT(want, 0, a, K, b, K, 1, 1, K)
			got := []float64{math.Copysign(0, -1)}
			kp.nt(got, 0, a, K, b, K, 1, 1, K)
			if math.Float64bits(got[0]) != math.Float64bits(want[0]) {
				t.Errorf("K=%d: got %v (sign %v), want %v (sign %v)", K, got[0], math.Signbit(got[0]), want[0], math.Signbit(want[0]))
			}
		}
	})
}

func FuzzGemm(f *testing.F) {
	f.Add(uint64(1), uint8(4), uint8(24), uint8(13), uint8(0))
	f.Add(uint64(2), uint8(7), uint8(33), uint8(64), uint8(1))
	f.Add(uint64(3), uint8(1), uint8(17), uint8(9), uint8(2))
	f.Add(uint64(4), uint8(40), uint8(3), uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, m, n, k, mode uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(mode)))
		g := randomGemmCase(rng, mode&1 == 1)
		// The fuzzer steers the shape; the stride pattern comes from seed.
		g2 := *g
		g2.M, g2.N, g2.K = int(m%80), int(n%80), int(k%80)
		g = resizeCase(rng, &g2)
		want := g.run(gemmNNGo, gemmNTGo)
		for _, kp := range kernelImpls() {
			got := g.run(kp.nn, kp.nt)
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("%s %v: c[%d] = %v, portable kernel gives %v", kp.name, g, i, got[i], want[i])
			}
		}
	})
}

// resizeCase redraws the operands of g for its (possibly changed) shape,
// keeping the stride pattern.
func resizeCase(rng *rand.Rand, g *gemmCase) *gemmCase {
	var na, nb int
	if g.ldc != 0 || g.M != 1 {
		g.ldc = g.N + max(g.ldc-g.N, 0)%5
	}
	if g.nt {
		g.ai, g.ld = g.K+max(g.ai-g.K, 0)%5, g.K+max(g.ld-g.K, 0)%5
		na, nb = span(g.M, g.ai, g.K, 1), span(g.N, g.ld, g.K, 1)
	} else {
		switch {
		case g.ai == 0 || g.ak == 0:
		case g.ak == 1:
			g.ai = g.K + 1
		default:
			g.ai, g.ak = 1, g.M+1
		}
		if g.ld != 0 {
			g.ld = g.N + 2
		}
		na, nb = span(g.M, g.ai, g.K, g.ak), span(g.K, g.ld, g.N, 1)
	}
	g.a, g.b = randomSlice(rng, na), randomSlice(rng, nb)
	g.c = randomSlice(rng, span(g.M, g.ldc, g.N, 1))
	return g
}

// gemmShape is one kernel call of training, named after its layer.
type gemmShape struct {
	name    string
	nt      bool
	trans   bool // gemmNN with A transposed (weight gradients)
	M, N, K int
}

// gemmShapes are the calls of one training step: first the default model
// (B=32, T=32: 1024 rows, C=64, vocabulary 24), then nanoGPT's "baby"
// configuration (B=12, T=64: 768 rows, C=128). The layers' input
// gradients are gemmNN over the transposed weights (inputGradJob); the
// head's (dinp_head) and the tied head's logits are gemmNT.
var gemmShapes = []gemmShape{
	{name: "qkv", M: 1024, N: 192, K: 64},
	{name: "fc", M: 1024, N: 256, K: 64},
	{name: "fcproj", M: 1024, N: 64, K: 256},
	{name: "dW_qkv", trans: true, M: 64, N: 192, K: 1024},
	{name: "dW_fc", trans: true, M: 64, N: 256, K: 1024},
	{name: "dinp_fc", M: 1024, N: 64, K: 256},     // dout·fcᵀ over the transposed weight
	{name: "dinp_fcproj", M: 1024, N: 256, K: 64}, // dout·fcProjᵀ likewise
	{name: "dinp_head", nt: true, M: 1024, N: 64, K: 24},
	{name: "logits", nt: true, M: 1024, N: 24, K: 64},
	{name: "dlnf", M: 1024, N: 64, K: 24},
	{name: "baby_qkv", M: 768, N: 384, K: 128},
	{name: "baby_fc", M: 768, N: 512, K: 128},
	{name: "baby_dW_fc", trans: true, M: 128, N: 512, K: 768},
	{name: "baby_dinp_fc", M: 768, N: 128, K: 512},
}

func (s gemmShape) newCase(rng *rand.Rand) *gemmCase {
	g := &gemmCase{nt: s.nt, M: s.M, N: s.N, K: s.K, ldc: s.N}
	switch {
	case s.nt: // dinp (M, N) += dout (M, K) · weight (N, K)ᵀ
		g.ai, g.ld = s.K, s.K
		g.a, g.b = randomSlice(rng, s.M*s.K), randomSlice(rng, s.N*s.K)
	case s.trans: // dweight (M, N) += inp (K, M)ᵀ · dout (K, N)
		g.ai, g.ak, g.ld = 1, s.M, s.N
		g.a, g.b = randomSlice(rng, s.K*s.M), randomSlice(rng, s.K*s.N)
	default: // out (M, N) += inp (M, K) · weight (K, N)
		g.ai, g.ak, g.ld = s.K, 1, s.N
		g.a, g.b = randomSlice(rng, s.M*s.K), randomSlice(rng, s.K*s.N)
	}
	g.c = randomSlice(rng, s.M*s.N)
	return g
}

// BenchmarkGemm times every kernel path on every training shape, single
// threaded, and reports GFLOP/s (2·M·N·K flops per call).
func BenchmarkGemm(b *testing.B) {
	for _, k := range kernelImpls() {
		for _, s := range gemmShapes {
			b.Run(k.name+"/"+s.name, func(b *testing.B) {
				g := s.newCase(rand.New(rand.NewPCG(7, 8)))
				c := g.c
				b.ReportAllocs()
				for b.Loop() {
					if g.nt {
						k.nt(c, g.ldc, g.a, g.ai, g.b, g.ld, g.M, g.N, g.K)
					} else {
						k.nn(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
					}
				}
				flops := 2 * float64(g.M) * float64(g.N) * float64(g.K)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkPeakFMA measures this machine's double-precision peak on one
// core: a loop of independent fused multiply-adds per instruction set
// the CPU has (kernels_peak_amd64.s). Every GFLOP/s figure of the other
// benchmarks and of the README is stated as a share of this number, not
// of a clock speed looked up somewhere.
func BenchmarkPeakFMA(b *testing.B) {
	if len(peakImpls()) == 0 {
		b.Skip("no assembly peak loop on this platform")
	}
	for _, p := range peakImpls() {
		b.Run(p.name, func(b *testing.B) {
			const rounds = 1 << 16
			for b.Loop() {
				p.run(rounds)
			}
			b.ReportMetric(float64(p.flops)*rounds*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// elementwiseValues draws values with the cases the elementwise loops
// treat apart: zeros of both signs, NaN and infinities among ordinary ones.
func elementwiseValues(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		switch rng.IntN(10) {
		case 0:
			s[i] = math.Copysign(0, -1)
		case 1:
			s[i] = 0
		case 2:
			s[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)]
		default:
			s[i] = randomValue(rng)
		}
	}
	return s
}

// TestElementwisePaths checks ReLU, its backward mask, the residual add
// and the Adam update on every kernel path against their Go loops, to
// the bit, for every length modulo 4 and 8 (the AVX2 and AVX-512 tails), with guard
// zones after the outputs.
func TestElementwisePaths(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(11, 12))
		for n := 0; n < 2000; n++ {
			size := rng.IntN(41)
			a, b := elementwiseValues(rng, size), elementwiseValues(rng, size)

			want := make([]float64, size)
			for i, v := range a {
				want[i] = max(v, 0)
			}
			got := guarded(elementwiseValues(rng, size))
			out := got[guardLen : guardLen+size]
			(&elementwiseJob{op: opRelu, out: out, a: a}).run(0, size)
			if i, ok := sameBits(out, want); !ok {
				t.Fatalf("relu(%v) = %v, want %v", a[i], out[i], want[i])
			}
			for i, v := range a {
				want[i] = v + b[i]
			}
			(&elementwiseJob{op: opResidual, out: out, a: a, b: b}).run(0, size)
			if i, ok := sameBits(out, want); !ok {
				t.Fatalf("%v + %v = %v, want %v", a[i], b[i], out[i], want[i])
			}
			copy(out, b)
			for i := range want {
				want[i] = b[i]
				if !(a[i] > 0) {
					want[i] = 0
				}
			}
			reluMask(out, a)
			if i, ok := sameBits(out, want); !ok {
				t.Fatalf("mask of %v by %v = %v, want %v", b[i], a[i], out[i], want[i])
			}
			if i, ok := checkGuards(got, size); !ok {
				t.Fatalf("length %d: guard %d overwritten", size, i)
			}

			// Adam: moments and parameters from ordinary values.
			p, g := randomSlice(rng, size), randomSlice(rng, size)
			m, v := randomSlice(rng, size), randomSlice(rng, size)
			for i := range v {
				v[i] = math.Abs(v[i])
			}
			// 1-b1 at run time, as adamJob computes it (a constant 1 - 0.9
			// would be the exact 0.1, not the rounded difference).
			beta1, beta2 := 0.9, 0.999
			kc := [9]float64{beta1, 1 - beta1, beta2, 1 - beta2, 1 - powInt(beta1, 3), 1 - powInt(beta2, 3), 3e-3, 1e-8, []float64{1, 0.9997}[rng.IntN(2)]}
			wp, wm, wv := append([]float64(nil), p...), append([]float64(nil), m...), append([]float64(nil), v...)
			for i := range wp {
				b1, b2, c1, c2, lr, eps, shrink := kc[0], kc[2], kc[4], kc[5], kc[6], kc[7], kc[8]
				wm[i] = float64(b1*wm[i]) + float64((1-b1)*g[i])
				wv[i] = float64(b2*wv[i]) + float64((1-b2)*float64(g[i]*g[i]))
				mh, vh := wm[i]/c1, wv[i]/c2
				pp := wp[i]
				if shrink != 1 {
					pp = float64(pp * shrink)
				}
				wp[i] = pp - float64(lr*mh)/(math.Sqrt(vh)+eps)
			}
			if !adamBlocks(p, g, m, v, &kc) {
				continue // the Go loop in adamJob is the definition itself
			}
			for _, c := range []struct {
				name      string
				got, want []float64
			}{{"params", p, wp}, {"m", m, wm}, {"v", v, wv}} {
				if i, ok := sameBits(c.got, c.want); !ok {
					t.Fatalf("adam %s[%d] = %v, want %v", c.name, i, c.got[i], c.want[i])
				}
			}
		}
	})
}

// TestGemmInitModes checks gemmNNInitBlocks, the assembly kernels (AVX-512
// and AVX2) started from a bias row or from +0 instead of from C, against
// setting C first and running the portable kernel, to the bit, on every
// kernel path that has them. C's old values in the block are NaN (the
// kernels must not read them), the padding between rows of C and guard
// zones around it must stay untouched, and besides random shapes every
// column tail of the 12/8/4/masked and 16/4/masked blocks meets row
// counts that go to the six-, four- and one-row kernels in every mix
// (6, 6+4+1, 6+6+1, 6+4+4), with K across the nnKBlock boundary (later
// blocks of k continue from C) and A's row 0 all -0 now and then (a
// chain from +0 gives +0 there, one from -0 would stay -0). A quarter of the cases each ask for the ReLU, the
// residual add or both after the product (epi), which the AVX-512
// kernels fuse into their stores and must give the bits of the layers
// run after; the bias then holds -0 and NaN now and then.
func TestGemmInitModes(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		if ok, _ := gemmNNInitBlocks(make([]float64, 1), 1, nil, []float64{1}, 1, 1, []float64{1}, 1, 1, 1, 1, 0, nil); !ok {
			if k.name != "go" {
				t.Fatalf("the %s kernels do not start chains from a bias", k.name)
			}
			t.Skip("the Go path sets C first (gemmNNJob)")
		}
		rng := rand.New(rand.NewPCG(13, 14))
		var cases []*gemmCase
		for n := 0; n < 3000; n++ {
			g := randomGemmCase(rng, false)
			if g.M == 0 || g.N == 0 || g.K == 0 || g.ldc < g.N {
				continue
			}
			cases = append(cases, g)
		}
		Ns := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 23, 24, 27, 28, 31, 32, 33, 36, 67}
		for _, M := range []int{1, 3, 4, 5, 6, 8, 9, 11, 13, 14} {
			for _, N := range Ns {
				for _, K := range []int{1, 9, 128, 129, 300} {
					ldc := N + rng.IntN(2)*3
					cases = append(cases, &gemmCase{M: M, N: N, K: K, ldc: ldc, ai: K, ak: 1, ld: N,
						a: randomSlice(rng, M*K), b: randomSlice(rng, K*N), c: randomSlice(rng, (M-1)*ldc+N)})
				}
			}
		}
		for n, g := range cases {
			var bias []float64
			if n%3 != 0 {
				bias = randomSlice(rng, g.N)
			}
			if n%5 == 0 {
				for kk := 0; kk < g.K; kk++ {
					g.a[kk*g.ak] = math.Copysign(0, -1)
				}
				if bias != nil {
					// Row 0 stays at the bias: -0 and NaN for the ReLU.
					bias[rng.IntN(g.N)] = math.Copysign(0, -1)
					bias[rng.IntN(g.N)] = math.NaN()
				}
			}
			old := append([]float64(nil), g.c...)
			for i := 0; i < g.M; i++ {
				for j := 0; j < g.N; j++ {
					old[i*g.ldc+j] = math.NaN()
				}
			}
			want := append([]float64(nil), old...)
			for i := 0; i < g.M; i++ {
				row := want[i*g.ldc : i*g.ldc+g.N]
				if bias != nil {
					copy(row, bias)
				} else {
					clear(row)
				}
			}
			gemmNNGo(want, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
			// The layer after the product, fused into the stores on
			// AVX-512: ReLU as reluForward (Go's max: NaN stays, -0
			// becomes +0), then c = res + c as residualForward.
			epi := []int{0, epiRelu, epiResidual, epiRelu | epiResidual}[n%4]
			res := randomSlice(rng, len(old))
			apply := func(c []float64) {
				for i := 0; i < g.M; i++ {
					row, r := c[i*g.ldc:i*g.ldc+g.N], res[i*g.ldc:i*g.ldc+g.N]
					if epi&epiRelu != 0 {
						reluForward(row, row)
					}
					if epi&epiResidual != 0 {
						residualForward(row, r, row)
					}
				}
			}
			for i := 0; i < g.M; i++ {
				row := want[i*g.ldc : i*g.ldc+g.N]
				for j := range row {
					if epi&epiRelu != 0 {
						row[j] = max(row[j], 0)
					}
					if epi&epiResidual != 0 {
						row[j] = res[i*g.ldc+j] + row[j]
					}
				}
			}
			gc := guarded(old)
			c := gc[guardLen : guardLen+len(old)]
			ok, fused := gemmNNInitBlocks(c, g.ldc, bias, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K, epi, res)
			if !ok {
				t.Fatalf("%v: gemmNNInitBlocks declined", g)
			}
			if want := epi != 0 && k.name == "avx512"; fused != want {
				t.Fatalf("%v: epi %d fused %v, want %v", g, epi, fused, want)
			}
			if !fused {
				apply(c)
			}
			if i, ok := sameBits(c, want); !ok {
				t.Fatalf("%v bias %v epi %d: c[%d] = %v, want %v", g, bias != nil, epi, i, c[i], want[i])
			}
			if i, ok := checkGuards(gc, len(old)); !ok {
				t.Fatalf("%v: wrote c[%d]", g, i)
			}
		}
	})
}

// TestGemmNTSetPaths checks gemmNTSet against its definition (C's block
// cleared, then gemmNT) to the bit on every kernel path, with C's old
// values NaN (the AVX-512 and AVX2 kernels must not read them), a -0 dot
// product (which +0 + -0 turns into +0), guard zones around C, and C's
// stride wider than N (the entries between rows must stay as they were).
func TestGemmNTSetPaths(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(21, 22))
		shapes := [][3]int{{1, 1, 0}, {1, 1, 1}, {1, 3, 5}, {3, 7, 9}, {4, 4, 8}, {5, 9, 17}, {8, 13, 64}, {9, 12, 33}}
		// Every column tail of the AVX2 (blocks of 3 and 1 for two rows,
		// 4 and 1 for one) and AVX-512 (4 and 1) kernels, with every
		// row remainder and K's ragged tails.
		for _, M := range []int{1, 2, 3, 4, 5, 6, 7} {
			for _, N := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} {
				for _, K := range []int{0, 1, 7, 8, 11, 16, 21} {
					shapes = append(shapes, [3]int{M, N, K})
				}
			}
		}
		for _, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			for _, extra := range []int{0, 3} {
				ldc := N + extra
				a, b := make([]float64, M*K), make([]float64, N*K)
				for i := range a {
					a[i] = rng.Float64() - 0.5
				}
				for i := range b {
					b[i] = rng.Float64() - 0.5
				}
				if K > 0 {
					// Row 0 times column 0 is -0 once K >= 8: each
					// product underflows to -0, so every lane's chain
					// (FMA from +0) is -0, and so is dot8's sum. (With
					// exact -0 products a lane would stay +0, since
					// -0 + +0 = +0, and so would lanes K < 8 leaves
					// empty.) The +0 start must turn it into +0.
					for kk := 0; kk < K; kk++ {
						a[kk] = -1e-200
						b[kk] = 1e-200
					}
					if K >= 8 {
						z := []float64{math.Copysign(0, -1)}
						gemmNTGo(z, 1, a, K, b, K, 1, 1, K)
						if !math.Signbit(z[0]) || z[0] != 0 {
							t.Fatalf("K=%d: the test's dot product is %v, not -0", K, z[0])
						}
					}
				}
				size := (M-1)*ldc + N
				want, gbuf, got := ntSetCase(a, b, M, N, K, ldc)
				gemmNTSet(got, ldc, a, K, b, K, M, N, K)
				if i, ok := checkGuards(gbuf, size); !ok {
					t.Fatalf("%d×%d×%d, ldc %d: wrote c[%d]", M, N, K, ldc, i)
				}
				if i, ok := sameBits(got, want); !ok {
					t.Fatalf("%d×%d×%d, ldc %d: c[%d] = %v, cleared and gemmNT give %v", M, N, K, ldc, i, got[i], want[i])
				}
				if K > 0 && math.Signbit(got[0]) {
					t.Fatalf("%d×%d×%d: a -0 dot product stayed -0, clearing C first gives +0", M, N, K)
				}
			}
		}
	})
}

// ntSetCase prepares a gemmNTSet check: C's block (M rows of N, ldc
// apart) full of NaN, which a kernel that sets C must never read, inside
// guard zones (gbuf; got is the block), and want, the definition's
// answer: C cleared, then the portable gemmNT.
func ntSetCase(a, b []float64, M, N, K, ldc int) (want, gbuf, got []float64) {
	size := (M-1)*ldc + N
	want = make([]float64, size)
	for i := range want {
		want[i] = math.NaN()
	}
	gbuf = guarded(make([]float64, size))
	got = gbuf[guardLen : guardLen+size]
	copy(got, want)
	clearRows(want, ldc, M, N)
	gemmNTGo(want, ldc, a, K, b, K, M, N, K)
	return want, gbuf, got
}

// TestGemmNNSetMask checks the ReLU's backward mask after a gemmNN
// from +0 (gemmNNSetMask, and gemmNNInitBlocks with epiMask, which the
// AVX-512 kernels fuse into their stores) against its definition, to the
// bit, on every kernel path: C's block cleared (or set to the bias),
// the portable gemmNN, then reluMask's Go loop, where an output stays if
// its mask is > 0 and becomes +0 otherwise. The shapes reach every store
// site of both AVX-512 kernels: blocks of 32 and 8 columns and the
// masked tail of 1-7 (N), six- and four-row blocks and the one-row
// kernel (M), and K across nnKBlock, where a mask stored after the
// first block of k would zero chains that later blocks continue. The masks hold
// positives, +0, -0, negatives, ±Inf, subnormals and NaN; the products a
// NaN row (kept or zeroed) and a -0 (a kept -0 stays -0). C's old
// values in the block are NaN (never read); its padding and the guard
// zones around it must stay untouched.
func TestGemmNNSetMask(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		one := []float64{1}
		if _, fused := gemmNNInitBlocks(make([]float64, 1), 1, nil, one, 1, 1, one, 1, 1, 1, 1, epiMask, one); fused != (k.name == "avx512") {
			t.Fatalf("epiMask fused %v on the %s path", fused, k.name)
		}
		rng := rand.New(rand.NewPCG(25, 26))
		specials := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), -1, 5e-324, -5e-324}
		n := 0
		for _, M := range []int{1, 3, 4, 5, 6, 8, 9, 11, 14} {
			for _, N := range []int{1, 5, 7, 8, 9, 15, 16, 31, 32, 33, 40, 47, 64, 71} {
				for _, K := range []int{1, 9, 128, 129, 300} {
					n++
					ldc := N + rng.IntN(2)*3
					size := (M-1)*ldc + N
					a, b := randomSlice(rng, M*K), randomSlice(rng, K*N)
					// Output (0, 0) is -0: every product underflows to
					// -0 in the FMA's rounding, so the chain from +0
					// goes to -0 and stays there.
					for kk := 0; kk < K; kk++ {
						a[kk], b[kk*N] = -1e-200, 1e-200
					}
					if M > 1 {
						a[K] = math.NaN() // row 1 is all NaN
					}
					mask := randomSlice(rng, size)
					for i := range mask {
						if rng.IntN(3) == 0 {
							mask[i] = specials[rng.IntN(len(specials))]
						}
					}
					if n%2 == 0 {
						mask[0] = 1 // keep the -0
					}
					var bias []float64
					if n%3 == 0 {
						bias = randomSlice(rng, N)
					}

					old := randomSlice(rng, size)
					for i := 0; i < M; i++ {
						for j := 0; j < N; j++ {
							old[i*ldc+j] = math.NaN()
						}
					}
					want := append([]float64(nil), old...)
					for i := 0; i < M; i++ {
						if bias != nil {
							copy(want[i*ldc:i*ldc+N], bias)
						} else {
							clear(want[i*ldc : i*ldc+N])
						}
					}
					gemmNNGo(want, ldc, a, K, 1, b, N, M, N, K)
					for i := 0; i < M; i++ {
						for j := 0; j < N; j++ {
							if !(mask[i*ldc+j] > 0) {
								want[i*ldc+j] = 0
							}
						}
					}
					if bias == nil && math.Float64bits(want[0]) != math.Float64bits(math.Copysign(0, -1)) && mask[0] > 0 {
						t.Fatalf("%d×%d×%d: the test's output (0, 0) is %v, not -0", M, N, K, want[0])
					}

					check := func(name string, call func(c []float64) bool) {
						t.Helper()
						gc := guarded(old)
						c := gc[guardLen : guardLen+size]
						if !call(c) {
							return
						}
						if i, ok := checkGuards(gc, size); !ok {
							t.Fatalf("%s %d×%d×%d, ldc %d: wrote c[%d]", name, M, N, K, ldc, i)
						}
						if i, ok := sameBits(c, want); !ok {
							t.Fatalf("%s %d×%d×%d, ldc %d, bias %v: c[%d] = %v (mask %v), want %v", name, M, N, K, ldc, bias != nil, i, c[i], mask[i], want[i])
						}
					}
					check("gemmNNInitBlocks", func(c []float64) bool {
						ok, fused := gemmNNInitBlocks(c, ldc, bias, a, K, 1, b, N, M, N, K, epiMask, mask)
						if ok && !fused {
							for i := 0; i < M; i++ {
								reluMask(c[i*ldc:i*ldc+N], mask[i*ldc:])
							}
						}
						return ok
					})
					if bias == nil {
						check("gemmNNSetMask", func(c []float64) bool {
							gemmNNSetMask(c, ldc, a, K, 1, b, N, M, N, K, mask)
							return true
						})
					}
				}
			}
		}
	})
}

// TestGemmShortOperandPanics gives every kernel path an operand one
// element shorter than its shape needs: each must panic with an index
// error, as the Go loops' indexing would, instead of letting the
// assembly read or write past the slice.
func TestGemmShortOperandPanics(t *testing.T) {
	const M, N, K = 5, 9, 7
	full := func(n int) []float64 { return make([]float64, n) }
	for _, k := range kernelImpls() {
		for _, tc := range []struct {
			name string
			call func()
		}{
			{"nn short c", func() { k.nn(full(M*N-1), N, full(M*K), K, 1, full(K*N), N, M, N, K) }},
			{"nn short a", func() { k.nn(full(M*N), N, full(M*K-1), K, 1, full(K*N), N, M, N, K) }},
			{"nn short b", func() { k.nn(full(M*N), N, full(M*K), K, 1, full(K*N-1), N, M, N, K) }},
			{"nt short c", func() { k.nt(full(M*N-1), N, full(M*K), K, full(N*K), K, M, N, K) }},
			{"nt short a", func() { k.nt(full(M*N), N, full(M*K-1), K, full(N*K), K, M, N, K) }},
			{"nt short b", func() { k.nt(full(M*N), N, full(M*K), K, full(N*K-1), K, M, N, K) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s, %s: no panic", k.name, tc.name)
					}
				}()
				tc.call()
			}()
		}
	}
}

// vectorLengths are the lengths every vector loop is tested at: empty,
// shorter than a register, every remainder modulo the AVX2 loops' 4 and
// the AVX-512 loops' 8 lanes, and several blocks with each kind of tail.
var vectorLengths = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39, 40, 63, 64, 65, 100}

// forEachVectorPath runs fn on every assembly path this machine can run
// (AVX2, AVX-512), with the kernel level switched to it. The *Blocks
// functions do nothing on the Go path, whose loops are the reference.
func forEachVectorPath(t *testing.T, fn func(t *testing.T, path string)) {
	t.Helper()
	for _, k := range kernelImpls() {
		if k.name == "go" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			defer setKernelPath(k.name)()
			fn(t, k.name)
		})
	}
}

// vecOperand is one operand of a vector loop: its values sit at element
// off (0-3, so that every alignment of a 32-byte register occurs) of a
// buffer of guard values, so a load or store past either end reads or
// overwrites a guard instead of unrelated memory.
type vecOperand struct {
	buf    []float64
	off, n int
	orig   []float64
}

func newVecOperand(x []float64, off int) *vecOperand {
	buf := make([]float64, off+len(x)+2*guardLen)
	for i := range buf {
		buf[i] = math.Float64frombits(guardBits)
	}
	copy(buf[guardLen+off:], x)
	return &vecOperand{buf: buf, off: off, n: len(x), orig: append([]float64(nil), x...)}
}

// s is the operand as the kernel sees it; its capacity runs into the
// trailing guards.
func (o *vecOperand) s() []float64 { return o.buf[guardLen+o.off : guardLen+o.off+o.n] }

// check fails t unless every guard is intact and, for an input
// (output false), every element is as it was.
func (o *vecOperand) check(t *testing.T, what string, output bool) {
	t.Helper()
	for i, v := range o.buf {
		j := i - guardLen - o.off
		if (j < 0 || j >= o.n) && math.Float64bits(v) != guardBits {
			t.Fatalf("%s: wrote element %d outside its %d", what, j, o.n)
		}
	}
	if !output {
		if i, ok := sameBits(o.s(), o.orig); !ok {
			t.Fatalf("%s: changed input element %d from %v to %v", what, i, o.orig[i], o.s()[i])
		}
	}
}

// vectorSpecials are the values that IEEE arithmetic treats apart:
// NaN, infinities, zeros of both signs, subnormals, and the largest and
// smallest normal magnitudes.
var vectorSpecials = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
	5e-324, -5e-324, 1.5e-310, -2.2e-308, math.MaxFloat64, -math.MaxFloat64, 1e300, -1e-300, 2.2250738585072014e-308}

// vectorValues draws n values, about one in every `every` a special
// (none when every is 0), the rest ordinary over many binades.
func vectorValues(rng *rand.Rand, n, every int) []float64 {
	s := make([]float64, n)
	for i := range s {
		if every > 0 && rng.IntN(every) == 0 {
			s[i] = vectorSpecials[rng.IntN(len(vectorSpecials))]
		} else {
			s[i] = randomValue(rng)
		}
	}
	return s
}

// TestElementwiseVectorLoops checks each assembly loop of the
// elementwise layers, attention backward's softmax step and Adam
// directly against the Go loop it replaces, to the bit, at every length
// of vectorLengths, at every alignment of each operand, with special
// values, and in place where the model calls it in place; the loops
// must write only their outputs' elements.
func TestElementwiseVectorLoops(t *testing.T) {
	forEachVectorPath(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(41, 42))
		off := func() int { return rng.IntN(4) }
		for _, n := range vectorLengths {
			for rep, every := range []int{0, 3, 1, 8} {
				a, b := vectorValues(rng, n, every), vectorValues(rng, n, every)
				what := func(op string) string { return fmt.Sprintf("%s n=%d rep %d", op, n, rep) }

				want := make([]float64, n)
				for i, v := range a {
					want[i] = max(v, 0)
				}
				in, out := newVecOperand(a, off()), newVecOperand(vectorValues(rng, n, every), off())
				if !reluBlocks(out.s(), in.s()) {
					t.Fatalf("%s: the %s path declined", what("relu"), path)
				}
				in.check(t, what("relu"), false)
				out.check(t, what("relu"), true)
				if i, ok := sameBits(out.s(), want); !ok {
					t.Fatalf("%s: max(%v, 0) = %v, Go gives %v", what("relu"), a[i], out.s()[i], want[i])
				}

				for i := range want {
					want[i] = a[i] + b[i]
				}
				ina, inb := newVecOperand(a, off()), newVecOperand(b, off())
				out = newVecOperand(make([]float64, n), off())
				if !addBlocks(out.s(), ina.s(), inb.s()) {
					t.Fatalf("%s: the %s path declined", what("add"), path)
				}
				ina.check(t, what("add"), false)
				inb.check(t, what("add"), false)
				out.check(t, what("add"), true)
				if i, ok := sameBits(out.s(), want); !ok {
					t.Fatalf("%s: %v + %v = %v, Go gives %v", what("add"), a[i], b[i], out.s()[i], want[i])
				}
				// In place, as the column sums call it (s += row).
				out = newVecOperand(a, off())
				addBlocks(out.s(), out.s(), inb.s())
				out.check(t, what("add in place"), true)
				if i, ok := sameBits(out.s(), want); !ok {
					t.Fatalf("%s: %v + %v = %v, Go gives %v", what("add in place"), a[i], b[i], out.s()[i], want[i])
				}

				for i := range want {
					var keep uint64
					if a[i] > 0 {
						keep = ^uint64(0)
					}
					want[i] = math.Float64frombits(math.Float64bits(b[i]) & keep)
				}
				in, out = newVecOperand(a, off()), newVecOperand(b, off())
				if !reluMaskBlocks(out.s(), in.s()) {
					t.Fatalf("%s: the %s path declined", what("relu mask"), path)
				}
				in.check(t, what("relu mask"), false)
				out.check(t, what("relu mask"), true)
				if i, ok := sameBits(out.s(), want); !ok {
					t.Fatalf("%s: mask of %v by %v = %v, Go gives %v", what("relu mask"), b[i], a[i], out.s()[i], want[i])
				}

				// Attention backward's softmax step, dp = (p·(dp − sum))·scale:
				// AVX-512 only, the AVX2 path declines (the Go loop runs).
				sum, scale := vectorValues(rng, 1, every/2)[0], vectorValues(rng, 1, every/2)[0]
				for i := range want {
					want[i] = float64(float64(a[i]*(b[i]-sum)) * scale)
				}
				in, out = newVecOperand(a, off()), newVecOperand(b, off())
				if ok := softmaxBackwardBlocks(out.s(), in.s(), sum, scale); ok != (path == "avx512") {
					t.Fatalf("%s: the %s path answered %v", what("softmax backward"), path, ok)
				} else if ok {
					in.check(t, what("softmax backward"), false)
					out.check(t, what("softmax backward"), true)
					if i, ok := sameBits(out.s(), want); !ok {
						t.Fatalf("%s: (%v·(%v − %v))·%v = %v, Go gives %v", what("softmax backward"), a[i], b[i], sum, scale, out.s()[i], want[i])
					}
				}

				// Adam, with 1-b1 and 1-b2 rounded at run time as adamJob
				// computes them; v is mostly non-negative, as Adam keeps it.
				g, m, v := vectorValues(rng, n, every), vectorValues(rng, n, every), vectorValues(rng, n, every)
				for i := range v {
					if rng.IntN(8) != 0 {
						v[i] = math.Abs(v[i])
					}
				}
				b1, b2, lr, eps := 0.9, 0.95, 3e-3, 1e-8
				step := 1 + rng.IntN(50)
				shrink := []float64{1, 1 - lr*0.1}[rng.IntN(2)]
				c1, c2 := 1-powInt(b1, step), 1-powInt(b2, step)
				kc := [9]float64{b1, 1 - b1, b2, 1 - b2, c1, c2, lr, eps, shrink}
				wp, wm, wv := append([]float64(nil), a...), append([]float64(nil), m...), append([]float64(nil), v...)
				for i := range wp {
					wm[i] = float64(b1*wm[i]) + float64((1-b1)*g[i])
					wv[i] = float64(b2*wv[i]) + float64((1-b2)*float64(g[i]*g[i]))
					mh, vh := wm[i]/c1, wv[i]/c2
					p := wp[i]
					if shrink != 1 {
						p = float64(p * shrink)
					}
					wp[i] = p - float64(lr*mh)/(math.Sqrt(vh)+eps)
				}
				op, og, om, ov := newVecOperand(a, off()), newVecOperand(g, off()), newVecOperand(m, off()), newVecOperand(v, off())
				if !adamBlocks(op.s(), og.s(), om.s(), ov.s(), &kc) {
					t.Fatalf("%s: the %s path declined", what("adam"), path)
				}
				og.check(t, what("adam grads"), false)
				for _, c := range []struct {
					name      string
					o         *vecOperand
					want, was []float64
				}{{"params", op, wp, a}, {"m", om, wm, m}, {"v", ov, wv, v}} {
					c.o.check(t, what("adam "+c.name), true)
					if i, ok := sameBits(c.o.s(), c.want); !ok {
						t.Fatalf("%s: %s[%d] = %v, Go gives %v (from %v, grad %v)", what("adam"), c.name, i, c.o.s()[i], c.want[i], c.was[i], g[i])
					}
				}
			}
		}
	})
}

// BenchmarkNonGemmLoops times the loops behind the *Blocks functions on
// every kernel path at the baby config's shapes (768 rows of width 128,
// MLP width 512, one causal head's 64 softmax rows of lengths 1-64),
// through the functions the model calls, so that the Go path runs the
// scalar loops; run with GOMAXPROCS=1 to time one core.
func BenchmarkNonGemmLoops(b *testing.B) {
	const N, C, T = 768, 128, 64
	rng := rand.New(rand.NewPCG(47, 48))
	fill := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.Float64() - 0.4
		}
		return x
	}
	model, err := NewModel(babyConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	params, grads := append([]float64(nil), model.Params()...), fill(len(model.Params()))
	att := fill(T * T)
	inp, w, bias, dout := fill(N*C), fill(C), fill(C), fill(N*C)
	out, mean, rstd, dinp, dw, db := make([]float64, N*C), make([]float64, N), make([]float64, N), make([]float64, N*C), make([]float64, C), make([]float64, C)
	h, dh, res := fill(N*4*C), fill(N*4*C), make([]float64, N*C)
	opt, err := NewAdam(DefaultAdamConfig(), model)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range kernelImpls() {
		restore := setKernelPath(k.name)
		for _, op := range []struct {
			name string
			run  func()
		}{
			{"softmax", func() {
				for t := 0; t < T; t++ {
					softmax(att[t*T:t*T+t+1], att[t*T:t*T+t+1])
				}
			}},
			{"layernorm", func() {
				layernormForward(out, mean, rstd, inp, w, bias, N, C)
				layernormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C)
			}},
			{"relu", func() {
				reluForward(h, h)
				reluBackward(dh, h)
			}},
			{"residual", func() { residualForward(res, inp, dout) }},
			{"adam", func() { opt.Update(params, grads, 1e-3) }},
		} {
			b.Run(k.name+"/"+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					op.run()
				}
			})
		}
		restore()
	}
}

// TestGemmNNSmallPaths: the attention's direct route to the kernels
// (gemmNNSmall) gives gemmNN's bits on every path, for one to four rows,
// K up to and past one k block (where it hands over to gemmNN), row-major
// and transposed A, chains from C or (set) from +0 over C's NaN, and
// writes nothing outside C's rows.
func TestGemmNNSmallPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		for n := 0; n < 2000; n++ {
			M, N := 1+rng.IntN(4), 1+rng.IntN(40)
			K := 1 + rng.IntN(136) // past the amd64 drivers' k block (128)
			g := &gemmCase{M: M, N: N, K: K}
			if rng.IntN(2) == 0 {
				g.ai, g.ak = K+rng.IntN(3), 1
			} else {
				g.ai, g.ak = 1, M+rng.IntN(3)
			}
			g.ldc, g.ld = N+rng.IntN(3), N+rng.IntN(3)
			g.a = randomSlice(rng, span(M, g.ai, K, g.ak))
			g.b = randomSlice(rng, span(K, g.ld, N, 1))
			g.c = randomSlice(rng, span(M, g.ldc, N, 1))
			want := g.run(gemmNNGo, gemmNTGo)
			gc := guarded(g.c)
			c := gc[guardLen : guardLen+len(g.c)]
			set := rng.IntN(2) == 0
			if set {
				want = append([]float64(nil), g.c...)
				clearRows(want, g.ldc, M, N)
				gemmNNGo(want, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, M, N, K)
				for i := 0; i < M; i++ {
					for j := 0; j < N; j++ {
						c[i*g.ldc+j] = math.NaN() // a set product must not read C
					}
				}
			}
			gemmNNSmall(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, M, N, K, set)
			if i, ok := sameBits(c, want); !ok {
				t.Fatalf("%v: c[%d] = %v, gemmNNGo gives %v", g, i, c[i], want[i])
			}
			if i, ok := checkGuards(gc, len(g.c)); !ok {
				t.Fatalf("%v: wrote c[%d]", g, i)
			}
		}
	})
}
