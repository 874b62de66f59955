// Helpers shared by the package's tests, one copy each.

package minigpt

import (
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// forEachKernelPath runs fn once for every kernel path this machine can
// execute (kernels.Impls: always the Go twins, and the assembly when the
// CPU supports it), the package running on that path meanwhile.
func forEachKernelPath(t *testing.T, fn func(t *testing.T, path string)) {
	t.Helper()
	for _, path := range kernels.Impls() {
		t.Run(path, func(t *testing.T) {
			t.Cleanup(kernels.SetPath(path))
			fn(t, path)
		})
	}
}

// tinyConfig is small enough for finite differences over every tensor.
func tinyConfig(tied bool) Config {
	return Config{VocabSize: 7, BlockSize: 5, EmbedDim: 8, Heads: 2, Layers: 2, TiedHead: tied}
}

// randomizedModel returns a model whose every parameter (gains and biases
// included) is random, so that no gradient is trivially zero or one.
func randomizedModel(t testing.TB, cfg Config, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range m.Params() {
		m.Params()[i] = 0.3 * rng.NormFloat64()
	}
	for _, ts := range m.Tensors() {
		if strings.HasSuffix(ts.Name, "_gain") {
			for i := range ts.Data {
				ts.Data[i] += 1
			}
		}
	}
	return m
}

// sameBits reports whether x and y are identical to the bit (any NaN
// equals any NaN: payloads are not part of the contract), and otherwise
// the first index where they differ.
func sameBits(x, y []float64) (int, bool) {
	for i := range x {
		if i >= len(y) || math.Float64bits(x[i]) != math.Float64bits(y[i]) && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
			return i, false
		}
	}
	return -1, len(x) == len(y)
}

// bitsEqual is sameBits, the package's one bit-equality check, as a
// condition; unequal lengths are unequal.
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	_, ok := sameBits(a, b)
	return ok
}

// guardLen is the number of guard elements guarded places before and
// after a buffer; guardBits is their value, a NaN no kernel computes.
const (
	guardLen  = 16
	guardBits = 0x7ff8dead0000beef
)

// guarded returns a copy of x inside guard zones: x's part is
// g[guardLen:guardLen+len(x)].
func guarded(x []float64) []float64 {
	g := make([]float64, len(x)+2*guardLen)
	for i := range g {
		g[i] = math.Float64frombits(guardBits)
	}
	copy(g[guardLen:], x)
	return g
}

// checkGuards reports the first guard element of g (around n values)
// that is not intact.
func checkGuards(g []float64, n int) (int, bool) {
	for i, v := range g {
		if (i < guardLen || i >= guardLen+n) && math.Float64bits(v) != guardBits {
			return i - guardLen, false
		}
	}
	return 0, true
}

// randomSlice draws n values over many binades, with exact zeros of both
// signs now and then, so that rounding differences cannot hide.
func randomSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		switch rng.IntN(16) {
		case 0:
			s[i] = 0
		case 1:
			s[i] = math.Copysign(0, -1)
		default:
			s[i] = math.Ldexp(rng.NormFloat64(), rng.IntN(40)-20)
		}
	}
	return s
}

// naiveNN is kernels.GemmNN's definition written out directly, one
// output at a time: a k-ascending chain of fused multiply-adds from the
// value in c.
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

func randomTokens(rng *rand.Rand, n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = rng.IntN(vocab)
	}
	return ids
}

// seeded is the PCG generator the tests draw from.
func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

// dirNames lists dir, hidden files included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// resumeOnLanternBay is ResumeTrainer(c) on the built-in text, encoded
// with c's vocabulary.
func resumeOnLanternBay(t testing.TB, c *Checkpoint) *Trainer {
	t.Helper()
	d, err := NewDatasetWithVocab(LanternBay, c.Vocab, c.Model.Config().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ResumeTrainer(c, d)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
