// softmax_test.go tests the softmax family against its definitions on every path.

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// TestExpShiftedPaths checks ExpShifted on every path against its
// definition, one Exp per element and the sum in index order, to the
// bit: the AVX-512 path computes eight exponentials at a time, takes
// Exp's 1 + x for |x| < 2^-28 (the row's maximum among them) itself,
// and must hand every other element Exp treats apart (NaN, ±Inf,
// results outside the normal range) back to Exp.
func TestExpShiftedPaths(t *testing.T) {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
		1.0 / (1 << 28), -1.0 / (1 << 28), 1.0 / (1 << 29), 3e-9, -3.8e-9,
		-706.9, -707.2, -707.5, -708.4, -709, -745, -745.2, -800, 706.9, 707.5, 709.7, 710}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(9, 10))
		for n := 0; n < 3000; n++ {
			src := make([]float64, rng.IntN(41))
			for i := range src {
				switch rng.IntN(8) {
				case 0:
					src[i] = specials[rng.IntN(len(specials))]
				case 1:
					src[i] = (rng.Float64() - 0.5) * 1500
				default:
					src[i] = (rng.Float64() - 0.5) * 40
				}
			}
			if len(src) > 0 && rng.IntN(4) == 0 {
				src[rng.IntN(len(src))] = math.Inf(-1) // masked logits
			}
			wantMax := math.Inf(-1)
			for _, v := range src {
				wantMax = max(wantMax, v)
			}
			want := make([]float64, len(src))
			wantSum := 0.0
			for i, v := range src {
				want[i] = Exp(v - wantMax)
				wantSum += want[i]
			}
			gbuf := testutil.Guarded(make([]float64, len(src)))
			got := gbuf[testutil.GuardLen : testutil.GuardLen+len(src)]
			gotMax, gotSum := ExpShifted(got, src)
			if i, ok := testutil.CheckGuards(gbuf, len(src)); !ok {
				t.Fatalf("src %v: wrote dst[%d]", src, i)
			}
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("src %v: dst[%d] = %v, Exp gives %v", src, i, got[i], want[i])
			}
			if _, ok := testutil.SameBits([]float64{gotMax, gotSum}, []float64{wantMax, wantSum}); !ok {
				t.Fatalf("src %v: max, sum = %v, %v, want %v, %v", src, gotMax, gotSum, wantMax, wantSum)
			}
		}
		// The ordinary range right up to the fast path's edges (k = ±1019)
		// and past them, directly with shift 0 (ExpShifted itself only
		// sees x <= 0), and in place below a max of 0 as softmax calls it.
		for _, lo := range []float64{-710, -707.5, -706, -3, -1e-8, 0, 700, 705} {
			src := make([]float64, 64)
			for i := range src {
				src[i] = lo + float64(i)*0.0625
			}
			got := make([]float64, len(src))
			n := expShiftedAsm(got, src, 0)
			for i, v := range src[:n] {
				if want := Exp(v); math.Float64bits(got[i]) != math.Float64bits(want) {
					t.Fatalf("x = %v: block gives %v, Exp %v", v, got[i], want)
				}
			}
			src[0] = 0
			for i := 1; i < len(src); i++ {
				src[i] = min(lo, 0) - float64(i)*0.0625
			}
			want := make([]float64, len(src))
			for i, v := range src {
				want[i] = Exp(v)
			}
			ExpShifted(src, src)
			if i, ok := testutil.SameBits(src, want); !ok {
				t.Fatalf("below %v: dst[%d] = %v, Exp gives %v", lo, i, src[i], want[i])
			}
		}
	})
}

// TestSoftmaxPaths checks Softmax, and ExpShifted's maximum, on every
// path against their definitions restated, to the bit, on rows where the AVX-512
// maximum must step aside: NaNs, a maximum of +0 or -0 (Go's max prefers
// +0, VMAXPD its operand order), -Inf everywhere, and tails of 1-7.
func TestSoftmaxPaths(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(11, 12))
		for n := 0; n < 4000; n++ {
			row := make([]float64, rng.IntN(42))
			nonPositive := rng.IntN(2) == 0
			for i := range row {
				switch rng.IntN(6) {
				case 0:
					row[i] = specials[rng.IntN(len(specials))]
				default:
					row[i] = (rng.Float64() - 0.5) * 30
				}
				if nonPositive && row[i] > 0 {
					row[i] = -row[i]
				}
			}
			wantMax := math.Inf(-1)
			for _, v := range row {
				wantMax = max(wantMax, v)
			}
			want := make([]float64, len(row))
			sum := 0.0
			for i, v := range row {
				want[i] = Exp(v - wantMax)
				sum += want[i]
			}
			for i := range want {
				want[i] /= sum
			}
			gotMax, _ := ExpShifted(make([]float64, len(row)), row)
			if math.Float64bits(gotMax) != math.Float64bits(wantMax) && !(math.IsNaN(gotMax) && math.IsNaN(wantMax)) {
				t.Fatalf("row %v: max %v, Go's max gives %v", row, gotMax, wantMax)
			}
			gbuf := testutil.Guarded(make([]float64, len(row)))
			got := gbuf[testutil.GuardLen : testutil.GuardLen+len(row)]
			copy(got, row)
			Softmax(got, got)
			if i, ok := testutil.CheckGuards(gbuf, len(row)); !ok {
				t.Fatalf("row %v: wrote probs[%d]", row, i)
			}
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("row %v: probs[%d] = %v, the Go loops give %v", row, i, got[i], want[i])
			}
		}
	})
}

// TestSoftmaxScaledPaths checks SoftmaxScaled, the attention's fused
// scale and softmax, on every path against the loops it
// replaces (scale each element, Go's max, Exp, one sum in index
// order, the division), to the bit and without a write outside the row:
// at every length to 70, with the cases where the AVX-512 kernel hands
// over to Go (a NaN, a zero maximum, an exponential off Exp's
// ordinary path in any block) and scales that overflow.
func TestSoftmaxScaledPaths(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324, 1e308, -1e308, -800, -1500}
	scales := []float64{0.25, 1 / math.Sqrt(32), 1, 3, 1e300}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(13, 14))
		for n := 0; n < 6000; n++ {
			row := make([]float64, n%71)
			kind := rng.IntN(4)
			for i := range row {
				switch {
				case kind == 0 && rng.IntN(8) == 0:
					row[i] = specials[rng.IntN(len(specials))]
				case kind == 1 && rng.IntN(20) == 0:
					row[i] = -2000 // exp(x - max) underflows: Exp's special path
				case kind == 2:
					row[i] = -(rng.Float64() * 4) // all negative: a negative maximum
				default:
					row[i] = (rng.Float64() - 0.5) * 30
				}
			}
			if kind == 3 && len(row) > 0 && rng.IntN(4) == 0 {
				clear(row) // every element zero: the kernel declines the maximum
				row[rng.IntN(len(row))] = negZero
			}
			scale := scales[rng.IntN(len(scales))]
			want := make([]float64, len(row))
			for i, v := range row {
				want[i] = float64(v * scale)
			}
			m := math.Inf(-1)
			for _, v := range want {
				m = max(m, v)
			}
			sum := 0.0
			for i, v := range want {
				want[i] = Exp(v - m)
				sum += want[i]
			}
			for i := range want {
				want[i] /= sum
			}
			gbuf := testutil.Guarded(make([]float64, len(row)))
			got := gbuf[testutil.GuardLen : testutil.GuardLen+len(row)]
			copy(got, row)
			SoftmaxScaled(got, scale)
			hookDid(t, path, "softmaxScaledAsm", softmaxScaledAsm(slices.Clone(row), scale), map[string]int{"avx2": 1, "avx512": 1}[path])
			if i, ok := testutil.CheckGuards(gbuf, len(row)); !ok {
				t.Fatalf("row %v, scale %v: wrote outside the row at %d", row, scale, i)
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
					t.Fatalf("row %v, scale %v: probs[%d] = %v, the Go loops give %v", row, scale, i, got[i], want[i])
				}
			}
		}
	})
}

// softmaxWant is SoftmaxScaled's definition restated: scale each
// element, Go's max, Exp, one sum in index order, the division.
func softmaxWant(row []float64, scale float64) {
	for i, v := range row {
		row[i] = float64(v * scale)
	}
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, v)
	}
	sum := 0.0
	for i, v := range row {
		row[i] = Exp(v - m)
		sum += row[i]
	}
	for i := range row {
		row[i] /= sum
	}
}

// softmaxRows fills the rows rows[r*ld : r*ld+n0+r] (r < n) with one of
// TestSoftmaxScaledPaths's kinds each: specials (NaN, infinities, zeros,
// huge and tiny values), exponentials that underflow, negative maxima
// and all-zero rows (kinds 0-3), or ordinary values (4-7), so that a
// block mixes rows the AVX-512 kernel finishes with rows it hands back;
// the rest of each stride holds values that must stay.
func softmaxRows(rng *rand.Rand, n, ld, n0 int) (rows []float64, kinds []int) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324, 1e308, -1e308, -800, -1500}
	rows = make([]float64, n*ld)
	for i := range rows {
		rows[i] = 1e6 + float64(i) // outside the rows: must stay
	}
	kinds = make([]int, n)
	for r := range n {
		kind := rng.IntN(8)
		kinds[r] = kind
		row := rows[r*ld : r*ld+n0+r]
		for i := range row {
			switch {
			case kind == 0 && rng.IntN(6) == 0:
				row[i] = specials[rng.IntN(len(specials))]
			case kind == 1 && rng.IntN(10) == 0:
				row[i] = -2000
			case kind == 2:
				row[i] = -(rng.Float64() * 4)
			default:
				row[i] = (rng.Float64() - 0.5) * 30
			}
		}
		if kind == 3 {
			clear(row)
			row[rng.IntN(len(row))] = negZero
		}
	}
	return rows, kinds
}

// TestSoftmaxScaledRows checks SoftmaxScaledRows, the attention's block
// of one to eight causal rows (lengths n0..n0+n-1, stride ld), on every
// path against softmaxWant row by row, to the bit, with the values
// around the rows (the rest of each stride) untouched. Whole blocks of
// four whose longest row is at most 32 run the AVX-512 four-row kernel,
// the other rows one at a time.
func TestSoftmaxScaledRows(t *testing.T) {
	scales := []float64{0.25, 1 / math.Sqrt(16), 1, 3}
	forEachImpl(t, func(t *testing.T, path string) {
		rng := rand.New(rand.NewPCG(15, 16))
		for trial := 0; trial < 3000; trial++ {
			n, n0 := 1+rng.IntN(8), 1+rng.IntN(34)
			if trial%3 == 0 {
				n = 4 * (1 + rng.IntN(2))
			}
			ld := n0 + n - 1 + rng.IntN(3)*rng.IntN(9)
			rows, _ := softmaxRows(rng, n, ld, n0)
			scale := scales[rng.IntN(len(scales))]
			want := slices.Clone(rows)
			for r := range n {
				softmaxWant(want[r*ld:r*ld+n0+r], scale)
			}
			hook := slices.Clone(rows)
			SoftmaxScaledRows(rows, ld, n, n0, scale)
			if i, ok := testutil.SameBits(rows, want); !ok {
				t.Fatalf("n %d, n0 %d, ld %d, scale %v: row %d element %d is %v, want %v", n, n0, ld, scale, i/ld, i%ld, rows[i], want[i])
			}
			hookDid(t, path, "softmaxScaledRowsAsm", softmaxScaledRowsAsm(hook, ld, n, n0, scale), map[string]int{"avx2": n, "avx512": n}[path])
		}
	})
}

// TestSoftmaxVectorLoops checks the softmax steps on every path against
// their definitions, to the bit, through their entry points (rowMax,
// expShiftedFrom, divideBy) and, on the assembly paths, through the
// hooks alone: the exponential against Exp (and that the hook stops
// exactly at the block of the first lane Exp treats apart, not
// earlier), the maximum against Go's max (and that the hook answers
// whenever its answer can be Go's: no NaN and a non-zero maximum), and
// the division, at every length of vectorLengths, every alignment, with
// special values, in place and not.
func TestSoftmaxVectorLoops(t *testing.T) {
	forEachImpl(t, func(t *testing.T, path string) {
		block := map[string]int{"avx2": 4, "avx512": 8}[path]
		rng := rand.New(rand.NewPCG(43, 44))
		off := func() int { return rng.IntN(4) }
		for _, n := range vectorLengths {
			for rep, every := range []int{0, 0, 40, 8, 2} {
				what := fmt.Sprintf("n=%d rep %d", n, rep)
				src := expValues(rng, n, every)
				wantMax := math.Inf(-1)
				hasNaN := false
				for _, v := range src {
					wantMax = max(wantMax, v)
					hasNaN = hasNaN || v != v
				}
				in := newVecOperand(src, off())
				if got := rowMax(in.s()); math.Float64bits(got) != math.Float64bits(wantMax) && !(hasNaN && math.IsNaN(got)) {
					t.Fatalf("max %s of %v: %v, Go's max gives %v", what, src, got, wantMax)
				}
				m := math.Inf(-1)
				took := maxAsm(in.s(), &m)
				in.check(t, "max "+what, false)
				if answers := !hasNaN && wantMax != 0; path != "go" && answers {
					hookDid(t, path, "max "+what, took, n)
					if math.Float64bits(m) != math.Float64bits(wantMax) {
						t.Fatalf("max %s of %v: the hook gives %v, Go's max %v", what, src, m, wantMax)
					}
				} else if took != 0 {
					t.Fatalf("max %s of %v: the %s hook took %d elements, want none (a NaN or a zero maximum)", what, src, path, took)
				}

				// The shift: softmax's row maximum (x <= 0), or any value.
				shift := wantMax
				if rep%2 == 1 || math.IsInf(shift, 0) || shift != shift {
					shift = []float64{0, 3.5, -700, 1e-20, math.Copysign(0, -1)}[rng.IntN(5)]
				}
				want := make([]float64, n)
				wantN := n
				for i, v := range src {
					want[i] = Exp(v - shift)
					if block > 0 && wantN == n && expSpecial(v-shift) {
						wantN = i - i%block
					}
				}
				out := newVecOperand(vectorValues(rng, n, 0), off())
				expShiftedFrom(out.s(), in.s(), shift, 0)
				in.check(t, "exp "+what, false)
				out.check(t, "exp "+what, true)
				if i, ok := testutil.SameBits(out.s(), want); !ok {
					t.Fatalf("exp %s: Exp(%v - %v) = %v, the %s path gives %v", what, src[i], shift, want[i], path, out.s()[i])
				}
				out = newVecOperand(vectorValues(rng, n, 0), off())
				got := expShiftedAsm(out.s(), in.s(), shift)
				hookDid(t, path, "exp "+what, got, wantN)
				out.check(t, "exp hook "+what, true)
				if i, ok := testutil.SameBits(out.s()[:got], want[:got]); !ok {
					t.Fatalf("exp %s: Exp(%v - %v) = %v, the %s hook gives %v", what, src[i], shift, want[i], path, out.s()[i])
				}
				// In place, as softmax calls it.
				io := newVecOperand(src, off())
				expShiftedFrom(io.s(), io.s(), shift, 0)
				if i, ok := testutil.SameBits(io.s(), want); !ok {
					t.Fatalf("exp %s in place: Exp(%v - %v) = %v, the %s path gives %v", what, src[i], shift, want[i], path, io.s()[i])
				}
				io.check(t, "exp in place "+what, true)

				d := []float64{7.25, 1, 3e-310, -2, 0, math.Copysign(0, -1), math.Inf(1), math.NaN(), 1e300}[rng.IntN(9)]
				x := vectorValues(rng, n, every)
				for i, v := range x {
					want[i] = v / d
				}
				io = newVecOperand(x, off())
				divideBy(io.s(), d)
				io.check(t, "div "+what, true)
				if i, ok := testutil.SameBits(io.s(), want); !ok {
					t.Fatalf("div %s: %v / %v = %v, the %s path gives %v", what, x[i], d, want[i], path, io.s()[i])
				}
				hookDid(t, path, "div "+what, divAsm(slices.Clone(x), d), map[string]int{"avx2": n, "avx512": n}[path])
			}
		}
	})
}
