// gemm_set_test.go tests the products that set C (GemmNNSet's modes and epilogues, GemmNTSet) and GemmNNTri.

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// TestGemmNNSetModes checks GemmNNSet (chains started from a bias row or
// from +0 instead of from C, then an epilogue) against its definition on
// every path, to the bit: C's rows set to the bias (or cleared), naiveNN,
// then the epilogue written out (ReLU as Go's max: NaN stays, -0 becomes
// +0; then c = res + c). On the assembly paths the hook alone must also
// give those bits, so that the entry point's Go twin cannot hide it. C's
// old values in the block are NaN (the kernels must not read them), the
// padding between rows of C and guard zones around it must stay
// untouched, and besides random shapes every column tail of the
// 12/8/4/masked and 16/4/masked blocks meets row counts that go to the
// six-, four- and one-row kernels in every mix (6, 6+4+1, 6+6+1, 6+4+4),
// with K across the nnKBlock boundary (later blocks of k continue from
// C) and A's row 0 all -0 now and then (a chain from +0 gives +0 there,
// one from -0 would stay -0). A quarter of the cases each ask for the
// ReLU, the residual add or both, which the AVX-512 kernels fuse into
// their stores; the bias then holds -0 and NaN now and then.
func TestGemmNNSetModes(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
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
			naiveNN(want, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
			epi := []Epilogue{EpiNone, EpiReLU, EpiResidual, EpiReLU | EpiResidual}[n%4]
			res := randomSlice(rng, len(old))
			for i := 0; i < g.M; i++ {
				row := want[i*g.ldc : i*g.ldc+g.N]
				for j := range row {
					if epi&EpiReLU != 0 {
						row[j] = max(row[j], 0)
					}
					if epi&EpiResidual != 0 {
						row[j] = res[i*g.ldc+j] + row[j]
					}
				}
			}
			for _, hookOnly := range []bool{false, true} {
				gc := testutil.Guarded(old)
				c := gc[testutil.GuardLen : testutil.GuardLen+len(old)]
				if hookOnly {
					if path == "go" {
						continue
					}
					hookDid(t, path, g.String(), gemmNNSetAsm(c, g.ldc, bias, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K, epi, res), g.M)
				} else {
					GemmNNSet(c, g.ldc, bias, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K, epi, res)
				}
				if i, ok := testutil.SameBits(c, want); !ok {
					t.Fatalf("%v bias %v epi %d hook %v: c[%d] = %v, want %v", g, bias != nil, epi, hookOnly, i, c[i], want[i])
				}
				if i, ok := testutil.CheckGuards(gc, len(old)); !ok {
					t.Fatalf("%v: wrote c[%d]", g, i)
				}
			}
		}
	})
}

// TestGemmNNSetRejectsBadEpilogue checks that GemmNNSet refuses, on every
// path, an epilogue that is not one of the epilogues or ReLU|Residual:
// the AVX-512 kernels read one operand for both the mask and the
// residual, so a combination with the mask would give a wrong result
// instead of an error.
func TestGemmNNSetRejectsBadEpilogue(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		one := []float64{1}
		for _, epi := range []Epilogue{EpiMask | EpiResidual, EpiMask | EpiReLU, 1, 2, 32} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("epilogue %d: no panic", epi)
					}
				}()
				GemmNNSet(make([]float64, 1), 1, nil, one, 1, 1, one, 1, 1, 1, 1, epi, one)
			}()
		}
	})
}

// TestGemmNTSetPaths checks GemmNTSet against its definition (C's block
// cleared, then naiveNT) to the bit on every path, with C's old
// values NaN (the AVX-512 and AVX2 kernels must not read them), a -0 dot
// product (which +0 + -0 turns into +0), guard zones around C, and C's
// stride wider than N (the entries between rows must stay as they were).
func TestGemmNTSetPaths(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
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
						naiveNT(z, 1, a, K, b, K, 1, 1, K)
						if !math.Signbit(z[0]) || z[0] != 0 {
							t.Fatalf("K=%d: the test's dot product is %v, not -0", K, z[0])
						}
					}
				}
				size := (M-1)*ldc + N
				want, gbuf, got := ntSetCase(a, b, M, N, K, ldc)
				GemmNTSet(got, ldc, a, K, b, K, M, N, K)
				if i, ok := testutil.CheckGuards(gbuf, size); !ok {
					t.Fatalf("%d×%d×%d, ldc %d: wrote c[%d]", M, N, K, ldc, i)
				}
				if i, ok := testutil.SameBits(got, want); !ok {
					t.Fatalf("%d×%d×%d, ldc %d: c[%d] = %v, cleared and naiveNT give %v", M, N, K, ldc, i, got[i], want[i])
				}
				if K > 0 && math.Signbit(got[0]) {
					t.Fatalf("%d×%d×%d: a -0 dot product stayed -0, clearing C first gives +0", M, N, K)
				}
			}
		}
	})
}

// ntSetCase prepares a GemmNTSet check: C's block (M rows of N, ldc
// apart) full of NaN, which a kernel that sets C must never read, inside
// guard zones (gbuf; got is the block), and want, the definition's
// answer: C cleared, then naiveNT.
func ntSetCase(a, b []float64, M, N, K, ldc int) (want, gbuf, got []float64) {
	size := (M-1)*ldc + N
	want = make([]float64, size)
	for i := range want {
		want[i] = math.NaN()
	}
	gbuf = testutil.Guarded(make([]float64, size))
	got = gbuf[testutil.GuardLen : testutil.GuardLen+size]
	copy(got, want)
	clearRows(want, ldc, M, N)
	naiveNT(want, ldc, a, K, b, K, M, N, K)
	return want, gbuf, got
}

// TestGemmNNSetMask checks the ReLU's backward mask after a product
// from +0 or the bias (GemmNNSet with EpiMask, which the AVX-512 kernels
// fuse into their stores) against its definition, to the bit, on every
// path (and the hook alone on the assembly paths): C's block cleared
// (or set to the bias), naiveNN, then the mask, where an output stays
// if its mask is > 0 and becomes +0 otherwise. The shapes reach every
// store site of both AVX-512 kernels: blocks of 32 and 8 columns and the
// masked tail of 1-7 (N), six- and four-row blocks and the one-row
// kernel (M), and K across nnKBlock, where a mask stored after the first
// block of k would zero chains that later blocks continue. The masks
// hold positives, +0, -0, negatives, ±Inf, subnormals and NaN; the
// products a NaN row (kept or zeroed) and a -0 (a kept -0 stays -0).
// C's old values in the block are NaN (never read); its padding and the
// guard zones around it must stay untouched.
func TestGemmNNSetMask(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
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
					naiveNN(want, ldc, a, K, 1, b, N, M, N, K)
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
						gc := testutil.Guarded(old)
						c := gc[testutil.GuardLen : testutil.GuardLen+size]
						if !call(c) {
							return
						}
						if i, ok := testutil.CheckGuards(gc, size); !ok {
							t.Fatalf("%s %d×%d×%d, ldc %d: wrote c[%d]", name, M, N, K, ldc, i)
						}
						if i, ok := testutil.SameBits(c, want); !ok {
							t.Fatalf("%s %d×%d×%d, ldc %d, bias %v: c[%d] = %v (mask %v), want %v", name, M, N, K, ldc, bias != nil, i, c[i], mask[i], want[i])
						}
					}
					check("GemmNNSet", func(c []float64) bool {
						GemmNNSet(c, ldc, bias, a, K, 1, b, N, M, N, K, EpiMask, mask)
						return true
					})
					check("gemmNNSetAsm", func(c []float64) bool {
						if path == "go" {
							return false
						}
						hookDid(t, path, "gemmNNSetAsm", gemmNNSetAsm(c, ldc, bias, a, K, 1, b, N, M, N, K, EpiMask, mask), M)
						return true
					})
				}
			}
		}
	})
}

// triRowsGo is GemmNNTri's definition as the attention code ran it
// before the kernel: one naiveNN call per row, over that row's keys of
// the block (lower: 1..r; upper: r..n-2).
func triRowsGo(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) {
	for r := 0; r < n; r++ {
		lo, cnt := 1, r
		if upper {
			lo, cnt = r, n-1-r
		}
		if cnt > 0 {
			naiveNN(c[r*ldc:], ldc, a[r*ai+lo*ak:], 0, ak, b[lo*ldb:], ldb, 1, N, cnt)
		}
	}
}

// TestGemmNNTriPaths checks GemmNNTri on every path against the per-row
// loop of naiveNN calls, to the bit (and the hook alone on the assembly
// paths): both triangles,
// blocks of 1-4 rows, widths 1-40 (every column tail of the AVX-512 and
// AVX2 blocks), row and key strides of both layouts the attention uses
// (a row-major block of scores, and its transpose), inputs with ±0,
// NaN and ±Inf, and guard zones around C (and between its rows) that
// must come back unchanged. The operand slices end exactly at the last
// element the shape addresses.
func TestGemmNNTriPaths(t *testing.T) {
	const guard = 24
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(7, 8))
		special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1)}
		value := func(specials bool) float64 {
			if specials && rng.IntN(12) == 0 {
				return special[rng.IntN(len(special))]
			}
			return (rng.Float64() - 0.5) * 4
		}
		fill := func(n int, specials bool) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = value(specials)
			}
			return x
		}
		for _, upper := range []bool{false, true} {
			for n := 1; n <= 4; n++ {
				for N := 1; N <= 40; N++ {
					for trial := 0; trial < 4; trial++ {
						specials := trial >= 2
						ldc, ldb := N+rng.IntN(3), N+rng.IntN(3)
						lda := n + rng.IntN(5)
						ai, ak := lda, 1 // the scores' rows (forward, dq)
						if trial%2 == 1 {
							ai, ak = 1, lda // their columns (transposedCausalNN)
						}
						m := n - 1
						if upper {
							m = n - 2
						}
						cLen, aLen, bLen := 1, 1, 1
						if m >= 0 {
							cLen, aLen, bLen = m*ldc+N, m*ai+m*ak+1, m*ldb+N
						}
						buf := fill(guard+cLen+guard, specials)
						a, b := fill(aLen, specials), fill(bLen+guard, specials)[:bLen]
						want := append([]float64(nil), buf...)
						triRowsGo(want[guard:guard+cLen], ldc, a, ai, ak, b, ldb, n, N, upper)
						hook := append([]float64(nil), buf...)
						GemmNNTri(buf[guard:guard+cLen:guard+cLen], ldc, a, ai, ak, b, ldb, n, N, upper)
						if i, ok := testutil.SameBits(buf, want); !ok {
							t.Fatalf("upper %v n %d N %d ldc %d ai %d ak %d ldb %d: c[%d] = %v, per-row loop %v (guard %d)",
								upper, n, N, ldc, ai, ak, ldb, i-guard, buf[i], want[i], guard)
						}
						if n >= 2 && path != "go" {
							hookDid(t, path, "gemmNNTriAsm", gemmNNTriAsm(hook[guard:guard+cLen:guard+cLen], ldc, a, ai, ak, b, ldb, n, N, upper), n)
							if i, ok := testutil.SameBits(hook, want); !ok {
								t.Fatalf("hook, upper %v n %d N %d: c[%d] = %v, per-row loop %v", upper, n, N, i-guard, hook[i], want[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestGemmNNLargeBlocks checks the products big enough for the amd64
// drivers to cut them into row and column blocks (nnMBlock, nnNBlock)
// and blocks of k: GemmNN, and GemmNNSet with a bias or +0 and every
// epilogue (ReLU, residual, both, the ReLU's mask), on every path,
// against the definition written out (naiveNN, then the epilogue), to
// the bit, with row-major and transposed A, C's stride wider than N and
// guard zones around C. Shapes straddle the block sizes: rows just
// past one and two row blocks, 6·k ± 1, columns past one and several
// column blocks that are not multiples of 32.
func TestGemmNNLargeBlocks(t *testing.T) {
	shapes := [][3]int{{241, 385, 129}, {487, 777, 60}, {250, 1536, 17}, {1024, 70, 257}, {13, 1161, 131}, {245, 33, 300}}
	if testing.Short() {
		shapes = shapes[:2]
	}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(41, 42))
		for n, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			g := &gemmCase{M: M, N: N, K: K, ldc: N + n%3, ld: N + (n+1)%2}
			if n%2 == 0 {
				g.ai, g.ak = K, 1
			} else {
				g.ai, g.ak = 1, M+1
			}
			g.a = randomSlice(rng, span(M, g.ai, K, g.ak))
			g.b = randomSlice(rng, span(K, g.ld, N, 1))
			g.c = randomSlice(rng, span(M, g.ldc, N, 1))
			aux := randomSlice(rng, len(g.c))
			bias := randomSlice(rng, N)
			// GemmNN: chains from C.
			want := g.run(naiveNN, naiveNT)
			if got := g.run(GemmNN, GemmNT); !bitsEqual(t, got, want) {
				t.Fatalf("%v: GemmNN differs from the definition", g)
			}
			for k, epi := range []Epilogue{EpiNone, EpiReLU, EpiResidual, EpiReLU | EpiResidual, EpiMask} {
				b := bias
				if k%2 == 1 {
					b = nil
				}
				want := append([]float64(nil), g.c...)
				clearRows(want, g.ldc, M, N)
				if b != nil {
					for i := 0; i < M; i++ {
						copy(want[i*g.ldc:i*g.ldc+N], b)
					}
				}
				naiveNN(want, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, M, N, K)
				for i := 0; i < M; i++ {
					for j := 0; j < N; j++ {
						x, r := want[i*g.ldc+j], aux[i*g.ldc+j]
						if epi&EpiReLU != 0 {
							x = max(x, 0)
						}
						if epi&EpiResidual != 0 {
							x = r + x
						}
						if epi&EpiMask != 0 && !(r > 0) {
							x = 0
						}
						want[i*g.ldc+j] = x
					}
				}
				gc := testutil.Guarded(g.c)
				c := gc[testutil.GuardLen : testutil.GuardLen+len(g.c)]
				GemmNNSet(c, g.ldc, b, g.a, g.ai, g.ak, g.b, g.ld, M, N, K, epi, aux)
				if i, ok := testutil.SameBits(c, want); !ok {
					t.Fatalf("%v bias %v epi %d: c[%d] = %v, the definition gives %v", g, b != nil, epi, i, c[i], want[i])
				}
				if i, ok := testutil.CheckGuards(gc, len(g.c)); !ok {
					t.Fatalf("%v epi %d: wrote c[%d]", g, epi, i)
				}
			}
		}
	})
}

// bitsEqual reports whether got and want are the same to the bit,
// logging the first difference.
func bitsEqual(t *testing.T, got, want []float64) bool {
	t.Helper()
	if i, ok := testutil.SameBits(got, want); !ok {
		t.Logf("c[%d] = %v, want %v", i, got[i], want[i])
		return false
	}
	return true
}
