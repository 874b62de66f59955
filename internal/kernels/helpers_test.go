// Helpers shared by the kernel tests, one copy each.

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// forEachImpl runs fn once for every kernel path this machine can
// execute, the Go twins ("go") first, with every kernel switched to that
// path meanwhile (and switched back when the subtest ends).
func forEachImpl(t *testing.T, fn func(t *testing.T, path string)) {
	t.Helper()
	for _, path := range Impls() {
		t.Run(path, func(t *testing.T) {
			t.Cleanup(SetPath(path))
			fn(t, path)
		})
	}
}

// hookDid fails t unless a hook on path did want items (what says which),
// and did none on the Go path: so that a test of an entry point on an
// assembly path cannot pass on the Go twin alone.
func hookDid(t *testing.T, path, what string, got, want int) {
	t.Helper()
	if path == "go" {
		want = 0
	}
	if got != want {
		t.Fatalf("%s: the %s hook did %d items, want %d", what, path, got, want)
	}
}

// span is the length a strided operand needs: 1 + the largest index used,
// counting an empty dimension as one (the Go twins slice rows of length
// K even when K is 0).
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

// filled is n copies of v.
func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// vectorLengths are the lengths every vector loop is tested at: empty,
// shorter than a register, every remainder modulo the AVX2 loops' 4 and
// the AVX-512 loops' 8 lanes, and several blocks with each kind of tail.
var vectorLengths = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39, 40, 63, 64, 65, 100}

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
	buf := make([]float64, off+len(x)+2*testutil.GuardLen)
	for i := range buf {
		buf[i] = math.Float64frombits(testutil.GuardBits)
	}
	copy(buf[testutil.GuardLen+off:], x)
	return &vecOperand{buf: buf, off: off, n: len(x), orig: append([]float64(nil), x...)}
}

// s is the operand as the kernel sees it; its capacity runs into the
// trailing guards.
func (o *vecOperand) s() []float64 {
	return o.buf[testutil.GuardLen+o.off : testutil.GuardLen+o.off+o.n]
}

// check fails t unless every guard is intact and, for an input
// (output false), every element is as it was.
func (o *vecOperand) check(t *testing.T, what string, output bool) {
	t.Helper()
	for i, v := range o.buf {
		j := i - testutil.GuardLen - o.off
		if (j < 0 || j >= o.n) && math.Float64bits(v) != testutil.GuardBits {
			t.Fatalf("%s: wrote element %d outside its %d", what, j, o.n)
		}
	}
	if !output {
		if i, ok := testutil.SameBits(o.s(), o.orig); !ok {
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

// ulps returns the distance in units of the last place between a and b.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Abs(math.Nextafter(b, math.Inf(1))-b)
}

// expValues draws n arguments for the vector exponential: mostly where
// softmax lives, some over the whole finite range and beyond, and now
// and then (one in every `every`; never when every is 0) one of the
// cases Exp treats apart or at its edges: NaN, ±Inf, zeros, subnormals,
// huge magnitudes, |x| below, at and above 2^-28, and k just inside and
// outside (-1020, 1020).
func expValues(rng *rand.Rand, n, every int) []float64 {
	edges := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, -5e-324,
		1e308, -1e308, 1e-300, -1e-300, 1.0 / (1 << 28), -1.0 / (1 << 28), math.Nextafter(1.0/(1<<28), 0),
		-math.Nextafter(1.0/(1<<28), 0), 1.0 / (1 << 29), 3e-9, -3.8e-9,
		// |x| < 2^-28 where the ordinary path's 1 + x + x²/2 rounds
		// differently from Exp's 1 + x (found by a search of random x).
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

// expSpecial reports whether Exp leaves its ordinary path for x other
// than at |x| < 2^-28: NaN, or k = int(log2e·x ± 0.5) outside
// (-1020, 1020), which takes in ±Inf, overflow, underflow and results
// below the normal range. The vector loops must stop before such a lane.
func expSpecial(x float64) bool {
	f := float64(log2e*x) + 0.5
	if x < 0 {
		f = float64(log2e*x) - 0.5
	}
	return x != x || f >= 1020 || f <= -1020
}

// describe is a short label for a failing case.
func describe(op string, n, rep int) string { return fmt.Sprintf("%s n=%d rep %d", op, n, rep) }
