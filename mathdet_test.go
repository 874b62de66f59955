package minigpt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ulps returns the distance in units of the last place between a and b.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Abs(math.Nextafter(b, math.Inf(1))-b)
}

// The platform's math.Exp and math.Log are the independent reference here:
// each is within one ulp of the exact value, so ours must be within two
// ulps of the platform's. That ours give the same bits on every platform
// is shown by the pinned training hash, which runs through both.
func TestExpLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		x := (rng.Float64() - 0.5) * 1400 // the whole finite range of exp
		if i%2 == 0 {
			x = (rng.Float64() - 0.5) * 40 // where softmax lives
		}
		if d := ulps(expDet(x), math.Exp(x)); d > 2 {
			t.Fatalf("expDet(%v) = %v, math.Exp = %v (%.1f ulps)", x, expDet(x), math.Exp(x), d)
		}
		y := math.Ldexp(rng.Float64()+0.5, rng.IntN(200)-100)
		if d := ulps(logDet(y), math.Log(y)); d > 2 {
			t.Fatalf("logDet(%v) = %v, math.Log = %v (%.1f ulps)", y, logDet(y), math.Log(y), d)
		}
	}
	// Both sides of the exponent fast path, and subnormal results.
	for _, x := range []float64{-708.5, -707, -706.9, -745, -740, 705, 706.5, 709.7} {
		if d := ulps(expDet(x), math.Exp(x)); d > 2 && math.Exp(x) > 1e-300 {
			t.Errorf("expDet(%v) = %v, math.Exp = %v", x, expDet(x), math.Exp(x))
		}
	}
	if got := expDet(-740); got == 0 || got > 1e-320 {
		t.Errorf("expDet(-740) = %v, want a subnormal", got)
	}
	for _, tc := range []struct{ got, want float64 }{
		{expDet(0), 1}, {expDet(math.Inf(-1)), 0}, {expDet(-800), 0}, {expDet(800), math.Inf(1)},
		{logDet(1), 0}, {logDet(0), math.Inf(-1)}, {logDet(math.Inf(1)), math.Inf(1)},
	} {
		if tc.got != tc.want {
			t.Errorf("special case: got %v, want %v", tc.got, tc.want)
		}
	}
	if !math.IsNaN(expDet(math.NaN())) || !math.IsNaN(logDet(-1)) || !math.IsNaN(logDet(math.NaN())) {
		t.Error("NaN cases do not return NaN")
	}
	for x := 0.0; x <= math.Pi; x += 0.001 {
		if d := math.Abs(cosDet(x) - math.Cos(x)); d > 1e-15 {
			t.Fatalf("cosDet(%v) = %v, math.Cos = %v", x, cosDet(x), math.Cos(x))
		}
	}
}

func TestNormalSource(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := normalSource{uniform: rng.Float64}
	const count = 200000
	sum, sq := 0.0, 0.0
	for range count {
		x := n.next()
		sum += x
		sq += x * x
	}
	mean, variance := sum/count, sq/count-(sum/count)*(sum/count)
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.02 {
		t.Fatalf("normal draws: mean %v, variance %v; want 0 and 1", mean, variance)
	}
}

func TestPowInt(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1200} {
		if d := ulps(powInt(0.999, n), math.Pow(0.999, float64(n))); d > 4*math.Log2(float64(n)+2) {
			t.Errorf("powInt(0.999, %d) = %v, math.Pow %v (%.0f ulps)", n, powInt(0.999, n), math.Pow(0.999, float64(n)), d)
		}
	}
}

// TestExpShiftedPaths checks expShifted on every kernel path against its
// definition, one expDet per element and the sum in index order, to the
// bit: the AVX-512 path computes eight exponentials at a time, takes
// expDet's 1 + x for |x| < 2^-28 (the row's maximum among them) itself,
// and must hand every other element expDet treats apart (NaN, ±Inf,
// results outside the normal range) back to expDet.
func TestExpShiftedPaths(t *testing.T) {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
		1.0 / (1 << 28), -1.0 / (1 << 28), 1.0 / (1 << 29), 3e-9, -3.8e-9,
		-706.9, -707.2, -707.5, -708.4, -709, -745, -745.2, -800, 706.9, 707.5, 709.7, 710}
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
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
				want[i] = expDet(v - wantMax)
				wantSum += want[i]
			}
			gbuf := guarded(make([]float64, len(src)))
			got := gbuf[guardLen : guardLen+len(src)]
			gotMax, gotSum := expShifted(got, src)
			if i, ok := checkGuards(gbuf, len(src)); !ok {
				t.Fatalf("src %v: wrote dst[%d]", src, i)
			}
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("src %v: dst[%d] = %v, expDet gives %v", src, i, got[i], want[i])
			}
			if _, ok := sameBits([]float64{gotMax, gotSum}, []float64{wantMax, wantSum}); !ok {
				t.Fatalf("src %v: max, sum = %v, %v, want %v, %v", src, gotMax, gotSum, wantMax, wantSum)
			}
		}
		// The ordinary range right up to the fast path's edges (k = ±1019)
		// and past them, directly with shift 0 (expShifted itself only
		// sees x <= 0), and in place below a max of 0 as softmax calls it.
		for _, lo := range []float64{-710, -707.5, -706, -3, -1e-8, 0, 700, 705} {
			src := make([]float64, 64)
			for i := range src {
				src[i] = lo + float64(i)*0.0625
			}
			got := make([]float64, len(src))
			n := expShiftedBlocks(got, src, 0)
			for i, v := range src[:n] {
				if want := expDet(v); math.Float64bits(got[i]) != math.Float64bits(want) {
					t.Fatalf("x = %v: block gives %v, expDet %v", v, got[i], want)
				}
			}
			src[0] = 0
			for i := 1; i < len(src); i++ {
				src[i] = min(lo, 0) - float64(i)*0.0625
			}
			want := make([]float64, len(src))
			for i, v := range src {
				want[i] = expDet(v)
			}
			expShifted(src, src)
			if i, ok := sameBits(src, want); !ok {
				t.Fatalf("below %v: dst[%d] = %v, expDet gives %v", lo, i, src[i], want[i])
			}
		}
	})
}

// TestSoftmaxPaths checks softmax, and expShifted's maximum, on every
// kernel path against the Go loops to the bit, on rows where the AVX-512
// maximum must step aside: NaNs, a maximum of +0 or -0 (Go's max prefers
// +0, VMAXPD its operand order), -Inf everywhere, and tails of 1-7.
func TestSoftmaxPaths(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324}
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
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
				want[i] = expDet(v - wantMax)
				sum += want[i]
			}
			for i := range want {
				want[i] /= sum
			}
			gotMax, _ := expShifted(make([]float64, len(row)), row)
			if math.Float64bits(gotMax) != math.Float64bits(wantMax) && !(math.IsNaN(gotMax) && math.IsNaN(wantMax)) {
				t.Fatalf("row %v: max %v, Go's max gives %v", row, gotMax, wantMax)
			}
			gbuf := guarded(make([]float64, len(row)))
			got := gbuf[guardLen : guardLen+len(row)]
			copy(got, row)
			softmax(got, got)
			if i, ok := checkGuards(gbuf, len(row)); !ok {
				t.Fatalf("row %v: wrote probs[%d]", row, i)
			}
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("row %v: probs[%d] = %v, the Go loops give %v", row, i, got[i], want[i])
			}
		}
	})
}

// TestSoftmaxScaledPaths checks softmaxScaled, the attention's fused
// scale and softmax, on every kernel path against the Go loops it
// replaces (scale each element, Go's max, expDet, one sum in index
// order, the division), to the bit and without a write outside the row:
// at every length to 70, with the cases where the AVX-512 kernel hands
// over to Go (a NaN, a zero maximum, an exponential off expDet's
// ordinary path in any block) and scales that overflow.
func TestSoftmaxScaledPaths(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324, 1e308, -1e308, -800, -1500}
	scales := []float64{0.25, 1 / math.Sqrt(32), 1, 3, 1e300}
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(13, 14))
		for n := 0; n < 6000; n++ {
			row := make([]float64, n%71)
			kind := rng.IntN(4)
			for i := range row {
				switch {
				case kind == 0 && rng.IntN(8) == 0:
					row[i] = specials[rng.IntN(len(specials))]
				case kind == 1 && rng.IntN(20) == 0:
					row[i] = -2000 // exp(x - max) underflows: expDet's special path
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
				want[i] = expDet(v - m)
				sum += want[i]
			}
			for i := range want {
				want[i] /= sum
			}
			gbuf := guarded(make([]float64, len(row)))
			got := gbuf[guardLen : guardLen+len(row)]
			copy(got, row)
			softmaxScaled(got, scale)
			if i, ok := checkGuards(gbuf, len(row)); !ok {
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

// softmaxScaled4Blocks finishes a block of four attention rows (lengths
// n0..n0+3, stride ld) with softmaxScaled's bits, and leaves a row it
// does not finish exactly as it was; the values around the rows (the
// rest of each stride) are never touched. The rows draw from
// TestSoftmaxScaledPaths's kinds: specials (NaN, infinities, zeros,
// huge and tiny values), exponentials that underflow, negative maxima
// and all-zero rows, one kind per row so that a block mixes rows the
// kernel finishes with rows it hands back. On AVX-512 the ordinary rows
// must be finished (else the test would pass with a kernel that
// declines everything).
func TestSoftmaxScaled4Blocks(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, -1e-300, -5e-324, 1e308, -1e308, -800, -1500}
	scales := []float64{0.25, 1 / math.Sqrt(16), 1, 3}
	forEachKernelPath(t, func(t *testing.T, k kernelImpl) {
		rng := rand.New(rand.NewPCG(15, 16))
		var scratch [128]float64
		finished, ordinary := 0, 0
		for trial := 0; trial < 3000; trial++ {
			n0 := 1 + rng.IntN(29)
			ld := n0 + 3 + rng.IntN(3)*rng.IntN(9)
			rows := make([]float64, 4*ld)
			for i := range rows {
				rows[i] = 1e6 + float64(i) // outside the rows: must stay
			}
			kinds := [4]int{}
			for r := range 4 {
				kind := rng.IntN(8) // 0-3 special kinds, 4-7 ordinary
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
			scale := scales[rng.IntN(len(scales))]
			before := slices.Clone(rows)
			want := slices.Clone(rows)
			for r := range 4 {
				softmaxScaled(want[r*ld:r*ld+n0+r], scale)
			}
			done := softmaxScaled4Blocks(rows, ld, n0, scale, &scratch)
			for r := range 4 {
				expect := want
				if done&(1<<r) == 0 {
					expect = before // handed back untouched
				} else {
					finished++
				}
				if kinds[r] >= 4 {
					ordinary++
					if k.name == "avx512" && done&(1<<r) == 0 {
						t.Fatalf("n0 %d, row %d (ordinary values %v): not finished", n0, r, before[r*ld:r*ld+n0+r])
					}
				}
				for i := r * ld; i < (r+1)*ld; i++ {
					if math.Float64bits(rows[i]) != math.Float64bits(expect[i]) && !(math.IsNaN(rows[i]) && math.IsNaN(expect[i])) {
						t.Fatalf("n0 %d, ld %d, scale %v, row %d (done %04b) %v: element %d is %v, want %v", n0, ld, scale, r, done, before[r*ld:r*ld+n0+r], i-r*ld, rows[i], expect[i])
					}
				}
			}
		}
		if k.name == "avx512" && finished < ordinary {
			t.Fatalf("finished %d rows, fewer than the %d ordinary ones", finished, ordinary)
		}
	})
}

// expValues draws n arguments for the vector exponential: mostly where
// softmax lives, some over the whole finite range and beyond, and now
// and then (one in every `every`; never when every is 0) one of the
// cases expDet treats apart or at its edges: NaN, ±Inf, zeros,
// subnormals, huge magnitudes, |x| below, at and above 2^-28, and k
// just inside and outside (-1020, 1020).
func expValues(rng *rand.Rand, n, every int) []float64 {
	edges := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, -5e-324,
		1e308, -1e308, 1e-300, -1e-300, 1.0 / (1 << 28), -1.0 / (1 << 28), math.Nextafter(1.0/(1<<28), 0),
		-math.Nextafter(1.0/(1<<28), 0), 1.0 / (1 << 29), 3e-9, -3.8e-9,
		// |x| < 2^-28 where the ordinary path's 1 + x + x²/2 rounds
		// differently from expDet's 1 + x (found by a search of random x).
		1.6524009929349674e-09, 1.9748901389597346e-09, -3.536146209480535e-09, 1.3893602932753562e-09,
		-706.9, -706.6, -707.2, -708.4, -709, -745, -745.2, -800, 706.2, 706.9, 707.5, 709.7, 710}
	s := make([]float64, n)
	for i := range s {
		switch {
		case every > 0 && rng.IntN(every) == 0:
			s[i] = edges[rng.IntN(len(edges))]
		case every > 0 && rng.IntN(every) == 0:
			// |x| < 2^-28 with all mantissa bits: 1 + x there, which the
			// ordinary path's 1 + x + x²/2 misses in a few last bits.
			s[i] = math.Ldexp(rng.Float64()*2-1, -28-rng.IntN(4))
		case rng.IntN(6) == 0:
			s[i] = (rng.Float64() - 0.5) * 1500
		default:
			s[i] = (rng.Float64() - 0.5) * 40
		}
	}
	return s
}

// expSpecial reports whether expDet leaves its ordinary path for x
// other than at |x| < 2^-28: NaN, or k = int(log2e·x ± 0.5) outside
// (-1020, 1020), which takes in ±Inf, overflow, underflow and results
// below the normal range. The vector loops must stop before such a lane.
func expSpecial(x float64) bool {
	f := float64(log2e*x) + 0.5
	if x < 0 {
		f = float64(log2e*x) - 0.5
	}
	return x != x || f >= 1020 || f <= -1020
}

// TestSoftmaxVectorLoops checks the assembly loops of softmax directly
// against their Go loops, to the bit: the exponential against expDet
// (and that it stops exactly at the block of the first lane expDet
// treats apart, not earlier), the maximum against Go's max (and that it
// answers whenever its answer can be Go's: no NaN and a non-zero
// maximum), and the division, at every length of vectorLengths, every
// alignment, with special values, in place and not.
func TestSoftmaxVectorLoops(t *testing.T) {
	forEachVectorPath(t, func(t *testing.T, path string) {
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
				gotMax, ok := maxBlocks(in.s())
				in.check(t, "max "+what, false)
				if ok && math.Float64bits(gotMax) != math.Float64bits(wantMax) {
					t.Fatalf("max %s of %v: %v, Go's max gives %v", what, src, gotMax, wantMax)
				}
				if ok != (!hasNaN && wantMax != 0) {
					t.Fatalf("max %s of %v: answered %v, want an answer exactly when there is no NaN and the max is not zero", what, src, ok)
				}

				// The shift: softmax's row maximum (x <= 0), or any value.
				shift := wantMax
				if rep%2 == 1 || math.IsInf(shift, 0) || shift != shift {
					shift = []float64{0, 3.5, -700, 1e-20, math.Copysign(0, -1)}[rng.IntN(5)]
				}
				want := make([]float64, n)
				wantN := n
				for i, v := range src {
					want[i] = expDet(v - shift)
					if wantN == n && expSpecial(v-shift) {
						wantN = i - i%block
					}
				}
				out := newVecOperand(vectorValues(rng, n, 0), off())
				got := expShiftedBlocks(out.s(), in.s(), shift)
				in.check(t, "exp "+what, false)
				if got != wantN {
					t.Fatalf("exp %s of %v - %v: stopped at %d, want %d", what, src, shift, got, wantN)
				}
				out.check(t, "exp "+what, true)
				if i, ok := sameBits(out.s()[:got], want[:got]); !ok {
					t.Fatalf("exp %s: expDet(%v - %v) = %v, the %s loop gives %v", what, src[i], shift, want[i], path, out.s()[i])
				}
				// In place, as softmax calls it.
				io := newVecOperand(src, off())
				if got := expShiftedBlocks(io.s(), io.s(), shift); got != wantN {
					t.Fatalf("exp %s in place: stopped at %d, want %d", what, got, wantN)
				} else if i, ok := sameBits(io.s()[:got], want[:got]); !ok {
					t.Fatalf("exp %s in place: expDet(%v - %v) = %v, the %s loop gives %v", what, src[i], shift, want[i], path, io.s()[i])
				}
				io.check(t, "exp in place "+what, true)

				d := []float64{7.25, 1, 3e-310, -2, 0, math.Copysign(0, -1), math.Inf(1), math.NaN(), 1e300}[rng.IntN(9)]
				x := vectorValues(rng, n, every)
				for i, v := range x {
					want[i] = v / d
				}
				io = newVecOperand(x, off())
				if !divBlocks(io.s(), d) {
					t.Fatalf("div %s: the %s path declined", what, path)
				}
				io.check(t, "div "+what, true)
				if i, ok := sameBits(io.s(), want); !ok {
					t.Fatalf("div %s: %v / %v = %v, the %s loop gives %v", what, x[i], d, want[i], path, io.s()[i])
				}
			}
		}
	})
}
