package kernels

// promises_test.go guards documented promises of the package that no
// other test held (docs/testing.md lists them with the rest).

import (
	"math"
	"testing"
)

// TestNormalIsMarsagliasPolarMethod: Normal draws pairs (u, v) = 2U-1
// from its uniform source, rejects those with s = u²+v² outside (0, 1),
// and gives u·f then v·f, f = sqrt(-2 ln s / s): here by hand for a
// scripted source.
func TestNormalIsMarsagliasPolarMethod(t *testing.T) {
	script := []float64{
		0.9, 0.9, // u = v = 0.8: s = 1.28, rejected
		0.5, 0.5, // u = v = 0: s = 0, rejected
		0.75, 0.6, // u = 0.5, v = 0.2: s = 0.29, accepted
		0.25, 0.5, // u = -0.5, v = 0: s = 0.25, accepted
	}
	i := 0
	n := Normal{Uniform: func() float64 { i++; return script[i-1] }}
	f1 := math.Sqrt(-2 * math.Log(0.29) / 0.29)
	f2 := math.Sqrt(-2 * math.Log(0.25) / 0.25)
	for k, want := range []float64{0.5 * f1, 0.2 * f1, -0.5 * f2, 0} {
		if got := n.Next(); math.Abs(got-want) > 1e-15*math.Abs(want) {
			t.Errorf("draw %d: %v, want %v", k, got, want)
		}
	}
	if i != len(script) {
		t.Errorf("%d uniforms drawn for four numbers, want %d", i, len(script))
	}
}
