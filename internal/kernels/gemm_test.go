// gemm_test.go tests GemmNN, GemmNT and Dot against their definitions on every path.

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// naiveNN is GemmNN's definition written out directly, one output at a
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

// naiveNT is GemmNT's definition written out directly: element k of the
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

// run applies nn or nt to a fresh copy of c and returns it.
// Every operand sits between guard zones: run panics if a kernel writes
// before or after C's elements (values past the logical end must be
// untouched) or writes to A or B at all (the kernels only read them).
func (g *gemmCase) run(nn func([]float64, int, []float64, int, int, []float64, int, int, int, int),
	nt func([]float64, int, []float64, int, []float64, int, int, int, int)) []float64 {
	if g.M <= 0 || g.N <= 0 {
		return append([]float64(nil), g.c...) // GemmNN and GemmNT return before any path runs
	}
	cg, ag, bg := testutil.Guarded(g.c), testutil.Guarded(g.a), testutil.Guarded(g.b)
	nc, na, nb := len(g.c), len(g.a), len(g.b)
	c, a, b := cg[testutil.GuardLen:testutil.GuardLen+nc], ag[testutil.GuardLen:testutil.GuardLen+na], bg[testutil.GuardLen:testutil.GuardLen+nb]
	if g.nt {
		nt(c, g.ldc, a, g.ai, b, g.ld, g.M, g.N, g.K)
	} else {
		nn(c, g.ldc, a, g.ai, g.ak, b, g.ld, g.M, g.N, g.K)
	}
	if i, ok := testutil.CheckGuards(cg, nc); !ok {
		panic(fmt.Sprintf("%v: the kernel wrote c[%d], outside c[0:%d]", g, i, nc))
	}
	for _, op := range []struct {
		name      string
		g, before []float64
	}{{"a", ag, g.a}, {"b", bg, g.b}} {
		if i, ok := testutil.CheckGuards(op.g, len(op.before)); !ok {
			panic(fmt.Sprintf("%v: the kernel wrote %s[%d], outside the operand", g, op.name, i))
		}
		if i, ok := testutil.SameBits(op.g[testutil.GuardLen:testutil.GuardLen+len(op.before)], op.before); !ok {
			panic(fmt.Sprintf("%v: the kernel changed its input %s[%d]", g, op.name, i))
		}
	}
	return c
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

// TestGemmGoMatchesDefinition checks the Go twins against the
// definitions (naiveNN, naiveNT), to the bit, on random shapes.
func TestGemmGoMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n++ {
		g := randomGemmCase(rng, n%2 == 1)
		want := g.run(naiveNN, naiveNT)
		got := g.run(gemmNNGo, gemmNTGo)
		if i, ok := testutil.SameBits(got, want); !ok {
			t.Fatalf("%v: c[%d] = %v, definition gives %v", g, i, got[i], want[i])
		}
	}
}

// TestGemmPathsBitIdentical runs GemmNN and GemmNT on every path
// against their definitions (naiveNN, naiveNT), to the bit, on random
// shapes and stride patterns, with guard zones around every operand.
func TestGemmPathsBitIdentical(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(3, 4))
		for n := 0; n < 4000; n++ {
			g := randomGemmCase(rng, n%2 == 1)
			want := g.run(naiveNN, naiveNT)
			got := g.run(GemmNN, GemmNT)
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("%v: c[%d] = %v, the definition gives %v", g, i, got[i], want[i])
			}
			if path == "go" {
				continue
			}
			hook := g.run(func(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
				rows := M
				if K <= 0 {
					rows = 0 // nothing to add: the Go twin's loops
				}
				hookDid(t, path, "gemmNNAsm "+g.String(), gemmNNAsm(c, ldc, a, ai, ak, b, ldb, M, N, K), rows)
			}, func(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
				hookDid(t, path, "gemmNTAsm "+g.String(), gemmNTAsm(c, ldc, a, lda, b, ldb, M, N, K), M)
			})
			if i, ok := testutil.SameBits(hook, want); !ok {
				t.Fatalf("%v: the hook alone gives c[%d] = %v, the definition %v", g, i, hook[i], want[i])
			}
		}
	})
}

// TestDotHandComputed pins Dot's fixed order with sums whose rounding
// shows it: 2^53 + 1 rounds back to 2^53 (ties to even), so adding two
// ones one at a time to 2^53 leaves 2^53, while Dot's tree adds lanes 1
// and 5 (or lane 1's chain over elements 1 and 9) to each other first
// and then gets 2^53 + 2 exactly. GemmNT, one Dot per output, must give
// the same on every path.
func TestDotHandComputed(t *testing.T) {
	const big = 1 << 53
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{big, 1, 0, 0, 0, 1, 0, 0}, big + 2},       // t1 = s1 + s5 = 2 before (t0+t2) + (t1+t3)
		{[]float64{big, 1, 0, 0, 0, 0, 0, 0, 0, 1}, big + 2}, // the tail continues lane 1: s1 = 1 + 1
		{[]float64{1, 0, 0, 0, big, 0, 0, 0, 1}, big + 2},    // s0 = 1 + 1 (elements 0 and 8), t0 = 2 + 2^53: exact
		{[]float64{-big, 0, 1, 0, big, 0, 1, 0}, 2},          // t0 = 0, t2 = 2
	} {
		ones := filled(len(tc.x), 1)
		if got := Dot(tc.x, ones); got != tc.want {
			t.Errorf("Dot(%v, ones) = %v, want %v", tc.x, got, tc.want)
		}
		forEachImpl(t, func(t *testing.T, path string) {
			c := []float64{0}
			GemmNT(c, 1, tc.x, len(tc.x), ones, len(tc.x), 1, 1, len(tc.x))
			if c[0] != tc.want {
				t.Errorf("GemmNT of %v and ones = %v, want %v", tc.x, c[0], tc.want)
			}
		})
	}
}

// TestGemmTrainingShapes checks the paths on the model's real shapes,
// large enough to exercise every blocking level.
func TestGemmTrainingShapes(t *testing.T) {
	shapes := gemmShapes
	if testing.Short() {
		shapes = shapes[:3]
	}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, s := range shapes {
			g := s.newCase(rng)
			want := g.run(gemmNNGo, gemmNTGo)
			got := g.run(GemmNN, GemmNT)
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("%s: c[%d] = %v, the Go twin gives %v", s.name, i, got[i], want[i])
			}
		}
	})
}

// TestGemmNegativeZeroLanes pins a corner of gemmNT's ragged tail: a lane
// that rounded to -0 must stay -0 when no element of the tail reaches it
// (adding a masked +0·+0 would turn it into +0).
func TestGemmNegativeZeroLanes(t *testing.T) {
	tiny := math.SmallestNonzeroFloat64
	forEachImpl(t, func(t *testing.T, path string) {
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
			GemmNT(got, 0, a, K, b, K, 1, 1, K)
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
		want := g.run(naiveNN, naiveNT)
		t.Cleanup(SetPath(Path())) // the path as it was, even if a case panics
		for _, path := range Impls() {
			restore := SetPath(path)
			got := g.run(GemmNN, GemmNT)
			restore()
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("%s %v: c[%d] = %v, the definition gives %v", path, g, i, got[i], want[i])
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

// fullGemmShapes are the full config's (width 384, batch 4 of block 256)
// largest products, for BenchmarkGemm only: the Go twin takes seconds on
// them, and TestGemmNNLargeBlocks covers their blocking already.
var fullGemmShapes = []gemmShape{
	{name: "full_qkv", M: 1024, N: 1152, K: 384},
	{name: "full_fc", M: 1024, N: 1536, K: 384},
	{name: "full_fcproj", M: 1024, N: 384, K: 1536},
	{name: "full_dW_fc", trans: true, M: 384, N: 1536, K: 1024},
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

// TestGemmShortOperandPanics gives every kernel path an operand one
// element shorter than its shape needs: each must panic with an index
// error, as the Go loops' indexing would, instead of letting the
// assembly read or write past the slice.
func TestGemmShortOperandPanics(t *testing.T) {
	const M, N, K = 5, 9, 7
	full := func(n int) []float64 { return make([]float64, n) }
	forEachImpl(t, func(t *testing.T, path string) {
		for _, tc := range []struct {
			name string
			call func()
		}{
			{"nn short c", func() { GemmNN(full(M*N-1), N, full(M*K), K, 1, full(K*N), N, M, N, K) }},
			{"nn short a", func() { GemmNN(full(M*N), N, full(M*K-1), K, 1, full(K*N), N, M, N, K) }},
			{"nn short b", func() { GemmNN(full(M*N), N, full(M*K), K, 1, full(K*N-1), N, M, N, K) }},
			{"nt short c", func() { GemmNT(full(M*N-1), N, full(M*K), K, full(N*K), K, M, N, K) }},
			{"nt short a", func() { GemmNT(full(M*N), N, full(M*K-1), K, full(N*K), K, M, N, K) }},
			{"nt short b", func() { GemmNT(full(M*N), N, full(M*K), K, full(N*K-1), K, M, N, K) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: no panic", tc.name)
					}
				}()
				tc.call()
			}()
		}
	})
}

// TestGemmNNSmallShapes: the attention's small products (the hooks'
// direct route to the kernels) give the definition's bits on every path,
// for one to four rows, K up to and past one k block (where the hooks
// block k), row-major and transposed A, chains from C (GemmNN) or from
// +0 over C's NaN (GemmNNSet), and write nothing outside C's rows.
func TestGemmNNSmallShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	forEachImpl(t, func(t *testing.T, path string) {
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
			want := g.run(naiveNN, naiveNT)
			gc := testutil.Guarded(g.c)
			c := gc[testutil.GuardLen : testutil.GuardLen+len(g.c)]
			set := rng.IntN(2) == 0
			if set {
				want = append([]float64(nil), g.c...)
				clearRows(want, g.ldc, M, N)
				naiveNN(want, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, M, N, K)
				for i := 0; i < M; i++ {
					for j := 0; j < N; j++ {
						c[i*g.ldc+j] = math.NaN() // a set product must not read C
					}
				}
			}
			if set {
				GemmNNSet(c, g.ldc, nil, g.a, g.ai, g.ak, g.b, g.ld, M, N, K, EpiNone, nil)
			} else {
				GemmNN(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, M, N, K)
			}
			if i, ok := testutil.SameBits(c, want); !ok {
				t.Fatalf("%v set %v: c[%d] = %v, the definition gives %v", g, set, i, c[i], want[i])
			}
			if i, ok := testutil.CheckGuards(gc, len(g.c)); !ok {
				t.Fatalf("%v: wrote c[%d]", g, i)
			}
		}
	})
}
