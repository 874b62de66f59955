// math_test.go tests Exp, Log, PowInt and Normal against the platform's functions.

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

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
		if d := ulps(Exp(x), math.Exp(x)); d > 2 {
			t.Fatalf("Exp(%v) = %v, math.Exp = %v (%.1f ulps)", x, Exp(x), math.Exp(x), d)
		}
		y := math.Ldexp(rng.Float64()+0.5, rng.IntN(200)-100)
		if d := ulps(Log(y), math.Log(y)); d > 2 {
			t.Fatalf("Log(%v) = %v, math.Log = %v (%.1f ulps)", y, Log(y), math.Log(y), d)
		}
	}
	// Both sides of the exponent fast path, and subnormal results.
	for _, x := range []float64{-708.5, -707, -706.9, -745, -740, 705, 706.5, 709.7} {
		if d := ulps(Exp(x), math.Exp(x)); d > 2 && math.Exp(x) > 1e-300 {
			t.Errorf("Exp(%v) = %v, math.Exp = %v", x, Exp(x), math.Exp(x))
		}
	}
	if got := Exp(-740); got == 0 || got > 1e-320 {
		t.Errorf("Exp(-740) = %v, want a subnormal", got)
	}
	for _, tc := range []struct{ got, want float64 }{
		{Exp(0), 1}, {Exp(math.Inf(-1)), 0}, {Exp(-800), 0}, {Exp(800), math.Inf(1)},
		{Log(1), 0}, {Log(0), math.Inf(-1)}, {Log(math.Inf(1)), math.Inf(1)},
	} {
		if tc.got != tc.want {
			t.Errorf("special case: got %v, want %v", tc.got, tc.want)
		}
	}
	if !math.IsNaN(Exp(math.NaN())) || !math.IsNaN(Log(-1)) || !math.IsNaN(Log(math.NaN())) {
		t.Error("NaN cases do not return NaN")
	}
}

// TestNormal checks Normal's first two moments over many draws.
func TestNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := Normal{Uniform: rng.Float64}
	const count = 200000
	sum, sq := 0.0, 0.0
	for range count {
		x := n.Next()
		sum += x
		sq += x * x
	}
	mean, variance := sum/count, sq/count-(sum/count)*(sum/count)
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.02 {
		t.Fatalf("normal draws: mean %v, variance %v; want 0 and 1", mean, variance)
	}
}

// TestPowInt checks PowInt against the platform's math.Pow.
func TestPowInt(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1200} {
		if d := ulps(PowInt(0.999, n), math.Pow(0.999, float64(n))); d > 4*math.Log2(float64(n)+2) {
			t.Errorf("PowInt(0.999, %d) = %v, math.Pow %v (%.0f ulps)", n, PowInt(0.999, n), math.Pow(0.999, float64(n)), d)
		}
	}
}
