// vec_test.go tests the elementwise kernels, Adam, the sums of squares and Transpose by hand and against their definitions on every path.

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// adamWant is Adam's definition written out, element by element, with
// 1-β1 and 1-β2 rounded at run time as the callers compute them.
func adamWant(p, g, m, v []float64, k AdamCoefficients) (wp, wm, wv []float64) {
	wp, wm, wv = append([]float64(nil), p...), append([]float64(nil), m...), append([]float64(nil), v...)
	b1, b2 := k.Beta1, k.Beta2
	for i := range wp {
		wm[i] = float64(b1*wm[i]) + float64((1-b1)*g[i])
		wv[i] = float64(b2*wv[i]) + float64((1-b2)*float64(g[i]*g[i]))
		mh, vh := wm[i]/k.C1, wv[i]/k.C2
		pp := wp[i]
		if k.Shrink != 1 {
			pp = float64(pp * k.Shrink)
		}
		wp[i] = pp - float64(k.LR*mh)/(math.Sqrt(vh)+k.Eps)
	}
	return wp, wm, wv
}

// TestAdamHandComputed checks two Adam steps worked out by hand, with
// constants chosen so that every intermediate is exact: β1 = 1/2,
// β2 = 3/4, lr = 1/2, ε = 2. Step 1 from m = v = 0 with g = 2: m = 1,
// v = 1, m/C1 = 1/(1/2) = 2, v/C2 = 1/(1/4) = 4, so p -= (1/2·2)/(√4+2)
// = 1/4. Step 2 with g = 2: m = 3/2, v = 7/4, C1 = 3/4, C2 = 7/16, so
// m/C1 = 2 and v/C2 = 4 again. With weight decay (Shrink 1/2) p halves
// first. ε inside the root (√(v/C2+ε)), the corrections swapped or a
// decay applied without Shrink each change these values. Every path,
// every length (the vector tails), the same element repeated.
func TestAdamHandComputed(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		for _, n := range vectorLengths {
			p, g := filled(n, 1), filled(n, 2)
			m, v := make([]float64, n), make([]float64, n)
			k := AdamCoefficients{Beta1: 0.5, Beta2: 0.75, C1: 1 - PowInt(0.5, 1), C2: 1 - PowInt(0.75, 1), LR: 0.5, Eps: 2, Shrink: 1}
			Adam(p, g, m, v, k)
			for i := range p {
				if p[i] != 0.75 || m[i] != 1 || v[i] != 1 {
					t.Fatalf("n=%d step 1, element %d: p, m, v = %v, %v, %v; want 0.75, 1, 1", n, i, p[i], m[i], v[i])
				}
			}
			k.C1, k.C2 = 1-PowInt(0.5, 2), 1-PowInt(0.75, 2)
			Adam(p, g, m, v, k)
			for i := range p {
				if p[i] != 0.5 || m[i] != 1.5 || v[i] != 1.75 {
					t.Fatalf("n=%d step 2, element %d: p, m, v = %v, %v, %v; want 0.5, 1.5, 1.75", n, i, p[i], m[i], v[i])
				}
			}
			// Weight decay: p = 2 halves to 1 first; g = -2 gives m = -1,
			// v = 1 and p = 1 + 1/4.
			p, g = filled(n, 2), filled(n, -2)
			m, v = make([]float64, n), make([]float64, n)
			k = AdamCoefficients{Beta1: 0.5, Beta2: 0.75, C1: 0.5, C2: 0.25, LR: 0.5, Eps: 2, Shrink: 0.5}
			Adam(p, g, m, v, k)
			for i := range p {
				if p[i] != 1.25 || m[i] != -1 || v[i] != 1 {
					t.Fatalf("n=%d decay, element %d: p, m, v = %v, %v, %v; want 1.25, -1, 1", n, i, p[i], m[i], v[i])
				}
			}
		}
	})
}

// TestSumSquaresHandComputed pins both sums of squares' orders with sums
// whose rounding shows them: 2^54 + 1 rounds back to 2^54 (ties to
// even), so the serial chain adding four ones to (2^27)² stays at 2^54,
// while SumSquares8's lanes 4-7 add theirs to each other first and give
// 2^54 + 4 exactly (likewise lanes 2 and 3 against (3·2^25)², where the
// ulp is 2). With the ones at elements 8-11 the tail continues
// lanes 0-3 (lane 0 rounds back to 2^54, and 2^54 + (1+1) ties back to
// 2^54). Every path.
func TestSumSquaresHandComputed(t *testing.T) {
	const big = 1 << 27
	forEachImpl(t, func(t *testing.T, path string) {
		for _, tc := range []struct {
			x            []float64
			serial, lane float64
		}{
			{[]float64{3, -4, 12}, 169, 169},
			{[]float64{3 << 25, 0, 1, 1}, 9 << 50, 9<<50 + 2}, // ulp 2 at 9·2^50: s2 + s3 first
			{[]float64{big, 0, 0, 0, 1, 1, 1, 1}, 1 << 54, 1<<54 + 4},
			{[]float64{big, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}, 1 << 54, 1 << 54},
			{[]float64{big, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}, 1 << 54, 1<<54 + 4},
			{nil, 0, 0},
		} {
			if got := SumSquares(tc.x); got != tc.serial {
				t.Errorf("SumSquares(%v) = %v, want %v", tc.x, got, tc.serial)
			}
			if got := SumSquares8(tc.x); got != tc.lane {
				t.Errorf("SumSquares8(%v) = %v, want %v", tc.x, got, tc.lane)
			}
		}
	})
}

// TestSumSquares8Paths checks SumSquares8 on every path against its
// definition restated (element i into chain i mod 8, FMA, then the
// pairwise tree); the values sit in a longer array full of 1e300, so a
// kernel reading past the slice shows.
func TestSumSquares8Paths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	backing := make([]float64, 400)
	forEachImpl(t, func(t *testing.T, path string) {
		for n := 0; n <= 300; n += 1 + n/16 {
			for i := range backing {
				backing[i] = 1e300
			}
			xs := backing[:n:n]
			for i := range xs {
				xs[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
			}
			var s [8]float64
			for i, x := range xs {
				s[i%8] = math.FMA(x, x, s[i%8])
			}
			want := ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
			if got := SumSquares8(xs); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n = %d: %v, want %v", n, got, want)
			}
			lanes := map[string]int{"avx512": n &^ 7, "avx2": n &^ 7}[path]
			if n < 8 {
				lanes = 0
			}
			hookDid(t, path, "sumSquares8Asm", sumSquares8Asm(xs, new([8]float64)), lanes)
		}
	})
}

// TestScale checks Scale against x·s written out, specials included.
func TestScale(t *testing.T) {
	x := []float64{1, -2, 0, math.Copysign(0, -1), math.Inf(1), 3e-320, 1e300}
	want := []float64{0.5, -1, 0, math.Copysign(0, -1), math.Inf(1), 1.5e-320, 5e299}
	Scale(x, 0.5)
	if i, ok := testutil.SameBits(x, want); !ok {
		t.Fatalf("x[%d] = %v, want %v", i, x[i], want[i])
	}
}

// TestElementwiseHandComputed pins the elementwise kernels' special
// cases on every path: Go's max for ReLU (NaN stays NaN, -0 becomes +0),
// the mask zeroing wherever the mask is not > 0 (NaN, ±0 and negatives)
// and keeping the value's bits (a -0 stays -0) elsewhere, and the
// softmax backward step's two rounded products. Lengths 1 to 17 repeat
// the pattern across every vector tail.
func TestElementwiseHandComputed(t *testing.T) {
	nan, negZero, inf := math.NaN(), math.Copysign(0, -1), math.Inf(1)
	in := []float64{-1, negZero, 0, nan, 2, -inf, inf, 5e-324}
	relu := []float64{0, 0, 0, nan, 2, 0, inf, 5e-324}
	d := []float64{7, 7, negZero, 7, negZero, 7, 7, nan}
	mask := []float64{0, 0, 0, 0, negZero, 0, 7, nan}
	forEachImpl(t, func(t *testing.T, path string) {
		for n := 1; n <= 17; n++ {
			rep := func(x []float64) []float64 {
				s := make([]float64, n)
				for i := range s {
					s[i] = x[i%len(x)]
				}
				return s
			}
			got := make([]float64, n)
			ReLU(got, rep(in))
			if i, ok := testutil.SameBits(got, rep(relu)); !ok {
				t.Fatalf("n=%d: ReLU(%v) = %v, want %v", n, rep(in)[i], got[i], rep(relu)[i])
			}
			got = rep(d)
			ReLUMask(got, rep(in))
			if i, ok := testutil.SameBits(got, rep(mask)); !ok {
				t.Fatalf("n=%d: mask of %v by %v = %v, want %v", n, rep(d)[i], rep(in)[i], got[i], rep(mask)[i])
			}
			// (p·(dp − sum))·scale with p = 0.5, dp = 3, sum = 1, scale = 4: 4;
			// with dp = 1 + 2^-52 the inner difference is exact, the
			// products 2^-53·4.
			dp := rep([]float64{3, 1 + 0x1p-52})
			SoftmaxBackward(dp, filled(n, 0.5), 1, 4)
			if i, ok := testutil.SameBits(dp, rep([]float64{4, 0x1p-51})); !ok {
				t.Fatalf("n=%d: softmax backward element %d = %v", n, i, dp[i])
			}
			sum := make([]float64, n)
			Add(sum, rep([]float64{1, 0x1p53, negZero}), rep([]float64{2, 1, negZero}))
			if i, ok := testutil.SameBits(sum, rep([]float64{3, 0x1p53, negZero})); !ok {
				t.Fatalf("n=%d: add element %d = %v", n, i, sum[i])
			}
		}
	})
}

// TestElementwiseVectorLoops checks ReLU, its mask, the residual add,
// attention backward's softmax step and Adam on every path against
// their definitions restated, to the bit, at every length of
// vectorLengths, at every alignment of each operand, with special values
// and in place where the model calls them in place; they must write only
// their outputs' elements. On the assembly paths the hooks must do every
// element (the softmax step only on AVX-512).
func TestElementwiseVectorLoops(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(41, 42))
		off := func() int { return rng.IntN(4) }
		for _, n := range vectorLengths {
			for rep, every := range []int{0, 3, 1, 8} {
				a, b := vectorValues(rng, n, every), vectorValues(rng, n, every)
				what := func(op string) string { return describe(op, n, rep) }
				all := map[string]int{"avx2": n, "avx512": n}[path]

				want := make([]float64, n)
				for i, v := range a {
					want[i] = max(v, 0)
				}
				in, out := newVecOperand(a, off()), newVecOperand(vectorValues(rng, n, every), off())
				ReLU(out.s(), in.s())
				in.check(t, what("relu"), false)
				out.check(t, what("relu"), true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("%s: max(%v, 0) = %v, want %v", what("relu"), a[i], out.s()[i], want[i])
				}
				hookDid(t, path, what("relu"), reluAsm(make([]float64, n), a), all)

				for i := range want {
					want[i] = a[i] + b[i]
				}
				ina, inb := newVecOperand(a, off()), newVecOperand(b, off())
				out = newVecOperand(make([]float64, n), off())
				Add(out.s(), ina.s(), inb.s())
				ina.check(t, what("add"), false)
				inb.check(t, what("add"), false)
				out.check(t, what("add"), true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("%s: %v + %v = %v, want %v", what("add"), a[i], b[i], out.s()[i], want[i])
				}
				// In place, as the column sums call it (s += row).
				out = newVecOperand(a, off())
				Add(out.s(), out.s(), inb.s())
				out.check(t, what("add in place"), true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("%s: %v + %v = %v, want %v", what("add in place"), a[i], b[i], out.s()[i], want[i])
				}
				hookDid(t, path, what("add"), addAsm(make([]float64, n), a, b), all)

				for i := range want {
					var keep uint64
					if a[i] > 0 {
						keep = ^uint64(0)
					}
					want[i] = math.Float64frombits(math.Float64bits(b[i]) & keep)
				}
				in, out = newVecOperand(a, off()), newVecOperand(b, off())
				ReLUMask(out.s(), in.s())
				in.check(t, what("relu mask"), false)
				out.check(t, what("relu mask"), true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("%s: mask of %v by %v = %v, want %v", what("relu mask"), b[i], a[i], out.s()[i], want[i])
				}
				hookDid(t, path, what("relu mask"), reluMaskAsm(append([]float64(nil), b...), a), all)

				// Attention backward's softmax step, dp = (p·(dp − sum))·scale.
				sum, scale := vectorValues(rng, 1, every/2)[0], vectorValues(rng, 1, every/2)[0]
				for i := range want {
					want[i] = float64(float64(a[i]*(b[i]-sum)) * scale)
				}
				in, out = newVecOperand(a, off()), newVecOperand(b, off())
				SoftmaxBackward(out.s(), in.s(), sum, scale)
				in.check(t, what("softmax backward"), false)
				out.check(t, what("softmax backward"), true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("%s: (%v·(%v − %v))·%v = %v, want %v", what("softmax backward"), a[i], b[i], sum, scale, out.s()[i], want[i])
				}
				hookDid(t, path, what("softmax backward"), softmaxBackwardAsm(append([]float64(nil), b...), a, sum, scale), map[string]int{"avx512": n, "avx2": n}[path])

				// Adam, with v mostly non-negative, as Adam keeps it.
				g, m, v := vectorValues(rng, n, every), vectorValues(rng, n, every), vectorValues(rng, n, every)
				for i := range v {
					if rng.IntN(8) != 0 {
						v[i] = math.Abs(v[i])
					}
				}
				b1, b2, lr := 0.9, 0.95, 3e-3
				step := 1 + rng.IntN(50)
				k := AdamCoefficients{Beta1: b1, Beta2: b2, C1: 1 - PowInt(b1, step), C2: 1 - PowInt(b2, step), LR: lr, Eps: 1e-8, Shrink: []float64{1, 1 - lr*0.1}[rng.IntN(2)]}
				wp, wm, wv := adamWant(a, g, m, v, k)
				op, og, om, ov := newVecOperand(a, off()), newVecOperand(g, off()), newVecOperand(m, off()), newVecOperand(v, off())
				Adam(op.s(), og.s(), om.s(), ov.s(), k)
				og.check(t, what("adam grads"), false)
				for _, c := range []struct {
					name      string
					o         *vecOperand
					want, was []float64
				}{{"params", op, wp, a}, {"m", om, wm, m}, {"v", ov, wv, v}} {
					c.o.check(t, what("adam "+c.name), true)
					if i, ok := testutil.SameBits(c.o.s(), c.want); !ok {
						t.Fatalf("%s: %s[%d] = %v, want %v (from %v, grad %v)", what("adam"), c.name, i, c.o.s()[i], c.want[i], c.was[i], g[i])
					}
				}
				hookDid(t, path, what("adam"), adamAsm(append([]float64(nil), a...), g, append([]float64(nil), m...), append([]float64(nil), v...), &k), all)
			}
		}
	})
}

// TestTransposePaths checks Transpose on every path against its
// definition dst[o*R+i] = src[i*W+o], for ranges of destination rows
// that start and end anywhere (the hook's whole blocks of eight or four, the
// ragged rows and columns), with src values unique so that a misplaced
// copy shows and NaN around and between the rows written (which must
// stay NaN).
func TestTransposePaths(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		for _, shape := range [][2]int{{8, 24}, {13, 5}, {3, 17}, {16, 16}, {1, 1}, {9, 40}, {24, 64}, {17, 35}, {8, 8}} {
			R, W := shape[0], shape[1]
			src := make([]float64, R*W)
			for i := range src {
				src[i] = float64(i + 1)
			}
			for o0 := 0; o0 <= W; o0 += 1 + W/5 {
				for o1 := o0; o1 <= W; o1 += 1 + W/7 {
					g := testutil.Guarded(filled(R*W, math.NaN()))
					dst := g[testutil.GuardLen : testutil.GuardLen+R*W]
					Transpose(dst, src, R, W, o0, o1)
					for o := 0; o < W; o++ {
						for i := 0; i < R; i++ {
							want := math.NaN()
							if o0 <= o && o < o1 {
								want = src[i*W+o]
							}
							if got := dst[o*R+i]; math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
								t.Fatalf("%d×%d rows [%d,%d): dst[%d][%d] = %v, want %v", R, W, o0, o1, o, i, got, want)
							}
						}
					}
					if i, ok := testutil.CheckGuards(g, R*W); !ok {
						t.Fatalf("%d×%d rows [%d,%d): wrote dst[%d]", R, W, o0, o1, i)
					}
					blocks := 0
					if path == "avx512" && R >= 8 {
						blocks = (o1 - o0) &^ 7
					}
					if path == "avx2" && R >= 8 {
						blocks = (o1 - o0) &^ 3
					}
					if o0 < o1 {
						hookDid(t, path, "transposeAsm", transposeAsm(make([]float64, R*W), src, R, W, o0, o1), blocks)
					}
				}
			}
		}
	})
}
