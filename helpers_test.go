// Helpers shared by the package's tests, one copy each.

package minigpt

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"example.org/minigpt/internal/kernels"

	"example.org/minigpt/internal/decode"
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
	for _, ts := range m.tensors() {
		if strings.HasSuffix(ts.name, "_gain") {
			for i := range ts.data {
				ts.data[i] += 1
			}
		}
	}
	return m
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

// generated returns the ids of Generate's first sample (the prompt not
// included), failing t on an error.
func generated(t testing.TB, m *Model, prompt []int, o GenerateOptions) []int {
	t.Helper()
	res, err := m.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].IDs
}

// completed returns prompt followed by the text of Complete's first
// sample, failing t on an error.
func completed(t testing.TB, m *Model, vocab *Vocab, prompt string, o GenerateOptions) string {
	t.Helper()
	res, err := m.Complete(context.Background(), vocab, prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return prompt + res[0].Text
}

// generateWith runs one sample of Generate's request drawing from r
// instead of the generator Seed gives it, so that a test can see whether
// a setting draws random numbers at all; it returns the generated ids.
func generateWith(m *Model, prompt []int, o GenerateOptions, r *rand.Rand) ([]int, error) {
	var ids []int
	o.N = 1
	sc := getSerial(m.cfg, 1)
	defer putSerial(sc)
	req := m.newRequest(&o, prompt, nil, sc.rows, sc.states, &sc.s, &sc.step)
	sc.states[0].rand = r
	req.emit = func(c *Completion) error { ids = append(ids, c.IDs...); return nil }
	req.Start(sc.slots)
	runAlone(m, sc, req)
	return ids, req.Err
}

// beamSearchK runs K-beam search directly (K may be 1, which the options
// do not allow), with stops as token sequences, returning the n best.
func beamSearchK(m *Model, prompt []int, K, maxNew int, lengthPenalty float64, stops [][]int, n int, noCache bool) ([]Completion, error) {
	o := GenerateOptions{MaxNewTokens: maxNew, LengthPenalty: lengthPenalty, noCache: noCache}
	sc := getSerial(m.cfg, K)
	defer putSerial(sc)
	req := m.newRequest(&o, prompt, nil, sc.rows, sc.states, &sc.s, &sc.step)
	// The stop strings are token sequences: spell each token as a
	// character of its own, and the sequences as their text.
	chars := make([]rune, m.cfg.VocabSize)
	for i := range chars {
		chars[i] = rune(0x100 + i)
	}
	vocab, err := vocabFromChars(chars)
	if err != nil {
		return nil, err
	}
	var stopText [][]byte
	for _, s := range stops {
		stopText = append(stopText, []byte(vocab.text(s)))
	}
	req.st, req.beam = nil, newBeamState(m.cfg, &o, len(prompt), K, n, stopText, vocab)
	req.Start(sc.slots)
	runAlone(m, sc, req)
	return req.results(), req.Err
}

// runAlone runs req to its end on sc's decoder, as generate does.
func runAlone(m *Model, sc *serial, req *request) {
	sc.pass.m = m
	decode.Run(context.Background(), &req.Request, sc.dec, &sc.pass)
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
	d, err := NewDataset(LanternBay, c.Vocab, c.Model.Config().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ResumeTrainer(c, d)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// counts returns how many of b's requests ended, run and wait.
func (b *Batch) counts() (ended int64, running, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.lanes {
		running += len(l.running)
	}
	return b.ended, running, len(b.waiting)
}

// withStop returns o with the stop strings.
func withStop(o GenerateOptions, stop []string) GenerateOptions {
	o.Stop = stop
	return o
}

// logSoftmax is log softmax(logits) as the trace computes it, (x - max) -
// log Σ exp(x - max), into a new slice.
func logSoftmax(logits []float64) []float64 {
	maxv, lse := logNormalizer(logits)
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = float64(v-maxv) - lse
	}
	return out
}

// checkpointOf is tr's full checkpoint, or with weightsOnly its weights.
func checkpointOf(tr *Trainer, weightsOnly bool) *Checkpoint {
	if weightsOnly {
		return tr.Checkpoint().WeightsOnly()
	}
	return tr.Checkpoint()
}
