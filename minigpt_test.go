package minigpt

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

func TestDefaultConfigParamCount(t *testing.T) {
	// The seed's code gives 104,728 (its prose says 154k).
	if got := defaultConfig().NumParams(); got != 104728 {
		t.Fatalf("default config has %d parameters, want 104728", got)
	}
	// Tying drops the (C, V) head and its bias.
	c := defaultConfig()
	c.TiedHead = true
	if got, want := c.NumParams(), 104728-64*24-24; got != want {
		t.Fatalf("tied default config has %d parameters, want %d", got, want)
	}
}

func TestGradientCheck(t *testing.T) {
	for _, tied := range []bool{false, true} {
		name := "untied"
		if tied {
			name = "tied"
		}
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(tied)
			m := randomizedModel(t, cfg, 3)
			rng := rand.New(rand.NewPCG(5, 6))
			B, T := 3, cfg.BlockSize
			idx := randomTokens(rng, B*T, cfg.VocabSize)
			tgt := randomTokens(rng, B*T, cfg.VocabSize)
			_, grads, err := m.Gradients(idx, tgt, B, T)
			if err != nil {
				t.Fatal(err)
			}
			off := 0
			for _, ts := range m.tensors() {
				n := len(ts.data)
				// First, last and a few random entries of every tensor.
				picks := []int{0, n - 1, rng.IntN(n), rng.IntN(n), rng.IntN(n)}
				for _, i := range picks {
					const h = 1e-5
					orig := ts.data[i]
					ts.data[i] = orig + h
					lp, _ := m.loss(idx, tgt, B, T)
					ts.data[i] = orig - h
					lm, _ := m.loss(idx, tgt, B, T)
					ts.data[i] = orig
					num := (lp - lm) / (2 * h)
					ana := grads[off+i]
					rel := math.Abs(num-ana) / math.Max(math.Abs(num)+math.Abs(ana), 1e-7)
					if rel > 1e-6 {
						t.Errorf("%s[%d]: analytic %.10g, numeric %.10g, relative error %.2g", ts.name, i, ana, num, rel)
					}
				}
				off += n
			}
		})
	}
}

// TestBackwardSetsEveryGradient: backward sets every element of the
// gradient slab rather than adding to it (the training step does not
// clear the slab), so a slab full of NaN must come out holding exactly
// the gradients a zeroed one gets. Short rows (T < BlockSize) leave
// position embeddings unused, and small batches leave tokens unused:
// their gradients must still be written (+0). The forward pass here is
// not asked for the transposed weights (Gradients' is), so backward
// makes them itself: both ways must give the same bits.
func TestBackwardSetsEveryGradient(t *testing.T) {
	for _, tied := range []bool{false, true} {
		for _, T := range []int{2, tinyConfig(tied).BlockSize} {
			cfg := tinyConfig(tied)
			m := randomizedModel(t, cfg, 3)
			rng := rand.New(rand.NewPCG(7, 8))
			B := 2
			idx := randomTokens(rng, B*T, cfg.VocabSize)
			tgt := randomTokens(rng, B*T, cfg.VocabSize)
			_, want, err := m.Gradients(idx, tgt, B, T)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, len(want))
			for i := range got {
				got[i] = math.NaN()
			}
			a := newTrainingActivations(m.cfg, B, T)
			m.forwardBatch(a, idx, tgt, false)
			m.backward(a, got)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("tied %v, T %d: gradient %d is %v written over NaN, %v over zero", tied, T, i, got[i], want[i])
				}
			}
		}
	}
}

// The transposed weights backward multiplies by are made by a forward
// pass asked for them (training, Gradients) and otherwise by backward
// itself; they must never be stale: a forward pass that was not asked
// for them, after the parameters changed, leaves backward to make them
// again from the new parameters.
func TestBackwardTransposedWeightsNeverStale(t *testing.T) {
	cfg := tinyConfig(false)
	m := randomizedModel(t, cfg, 3)
	rng := rand.New(rand.NewPCG(9, 10))
	B, T := 2, cfg.BlockSize
	idx := randomTokens(rng, B*T, cfg.VocabSize)
	tgt := randomTokens(rng, B*T, cfg.VocabSize)
	a := newTrainingActivations(cfg, B, T)
	grads := make([]float64, len(m.Params()))
	m.forwardBatch(a, idx, tgt, true)
	m.backward(a, grads)
	for i := range m.Params() {
		m.Params()[i] *= 1.5 // every weight changes
	}
	_, want, err := m.Gradients(idx, tgt, B, T)
	if err != nil {
		t.Fatal(err)
	}
	m.forwardBatch(a, idx, tgt, false) // not asked for the transposes
	m.backward(a, grads)
	if i, ok := testutil.SameBits(grads, want); !ok {
		t.Fatalf("gradient %d: %v after a forward pass not asked for the transposed weights, %v from Gradients", i, grads[i], want[i])
	}
}

func TestCausality(t *testing.T) {
	for _, tied := range []bool{false, true} {
		cfg := tinyConfig(tied)
		m := randomizedModel(t, cfg, 11)
		rng := rand.New(rand.NewPCG(1, 2))
		T := cfg.BlockSize
		idx := randomTokens(rng, T, cfg.VocabSize)
		base, err := m.Logits(idx, 1, T)
		if err != nil {
			t.Fatal(err)
		}
		V := cfg.VocabSize
		for pos := 0; pos < T; pos++ {
			changed := append([]int(nil), idx...)
			changed[pos] = (changed[pos] + 1) % V
			got, _ := m.Logits(changed, 1, T)
			for i := 0; i < pos*V; i++ {
				if got[i] != base[i] {
					t.Fatalf("tied=%v: changing token %d changed logit %d (position %d)", tied, pos, i, i/V)
				}
			}
			differs := false
			for i := pos * V; i < (pos+1)*V; i++ {
				differs = differs || got[i] != base[i]
			}
			if !differs {
				t.Fatalf("tied=%v: changing token %d left its own logits unchanged", tied, pos)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := defaultConfig()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"vocab 1", func(c *Config) { c.VocabSize = 1 }, "vocab size 1"},
		{"zero block", func(c *Config) { c.BlockSize = 0 }, "block size 0"},
		{"negative width", func(c *Config) { c.EmbedDim = -4 }, "embedding width -4"},
		{"zero heads", func(c *Config) { c.Heads = 0 }, "heads 0"},
		{"zero layers", func(c *Config) { c.Layers = 0 }, "layers 0"},
		{"indivisible", func(c *Config) { c.Heads = 5 }, "not divisible by 5 heads"},
		{"huge", func(c *Config) { c.EmbedDim, c.Heads, c.Layers = 60000, 1, 1000 }, "parameters exceed"},
		{"huge attention", func(c *Config) { c.BlockSize, c.Heads, c.EmbedDim = 60000, 64, 64 }, "activations, above the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want ErrBadConfig mentioning %q", err, tc.want)
			}
			if _, err := NewModel(c, 1); err == nil {
				t.Fatal("NewModel accepted an invalid config")
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
}

func TestBadBatches(t *testing.T) {
	m, _ := NewModel(tinyConfig(false), 1)
	for _, tc := range []struct {
		name      string
		idx, tgt  []int
		B, T      int
		wantInErr string
	}{
		{"T beyond block", make([]int, 6), make([]int, 6), 1, 6, "block size 5"},
		{"short idx", make([]int, 3), make([]int, 4), 1, 4, "needs 4 input ids, got 3"},
		{"short targets", make([]int, 4), make([]int, 3), 1, 4, "needs 4 targets, got 3"},
		{"token out of range", []int{0, 7, 1}, []int{0, 1, 2}, 1, 3, "token id 7 at index 1 (counting from 0)"},
		{"negative target", []int{0, 1, 2}, []int{0, -1, 2}, 1, 3, "token id -1 at index 1 (counting from 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.loss(tc.idx, tc.tgt, tc.B, tc.T)
			if err == nil || !strings.HasPrefix(err.Error(), "loss: ") || !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("Loss error = %v, want one starting with the operation and mentioning %q", err, tc.wantInErr)
			}
		})
	}
}

// Defect (issue 10): ReadCheckpoint built its Model without the named
// tensor views, so a loaded model could generate but its backward pass
// indexed empty slices. Every Model now comes from one constructor; a
// loaded model must train exactly like a fresh one with the same weights.
func TestLoadedModelTrains(t *testing.T) {
	loaded, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewModel(loaded.Config(), 1)
	if err != nil {
		t.Fatal(err)
	}
	copy(fresh.Params(), loaded.Params())
	ids, err := vocab.Encode(LanternBay[:33])
	if err != nil {
		t.Fatal(err)
	}
	gotLoss, got, err := loaded.Gradients(ids[:31], ids[1:32], 1, 31)
	if err != nil {
		t.Fatal(err)
	}
	wantLoss, want, _ := fresh.Gradients(ids[:31], ids[1:32], 1, 31)
	if gotLoss != wantLoss || !testutil.BitsEqual(got, want) {
		t.Fatalf("loaded model: loss %v and gradients differ from a fresh model's with the same weights (loss %v)", gotLoss, wantLoss)
	}

	// And through the Trainer (whose pool workers used to crash the process).
	d, err := NewDataset(LanternBay, vocab, loaded.Config().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches = 2, 4, 1
	for _, m := range []*Model{loaded, fresh} {
		tr, err := NewTrainer(m, d, tc)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if !testutil.BitsEqual(loaded.Params(), fresh.Params()) {
		t.Fatal("two training steps from the loaded model differ from the same steps from a fresh copy")
	}
}

// TestReportKernelDispatch logs which kernel implementations this run
// uses and compares: .ci/run prints the line, so that a green run on a
// CPU without the assembly's features (where only the Go kernels run) is
// not mistaken for a check of the assembly. The names are whatever the
// dispatch reports, so a new path shows up without a change here.
func TestReportKernelDispatch(t *testing.T) {
	names := kernels.Impls()
	if len(names) == 0 || names[0] != "go" {
		t.Fatalf("kernel implementations %v: the portable Go kernel must come first, as the reference", names)
	}
	t.Logf("kernel dispatch: in use %s; compared against Go: %s", kernels.Path(), strings.Join(names, " "))
}

// TestConcurrentLogitsAndLossMatchSerial runs Logits, Loss and Gradients
// from 8 goroutines on one Model, with batch shapes that differ between
// calls, and compares every result to the bits of a serial run. When the
// Model's buffers were shared, concurrent callers overwrote each other's
// activations (run with -race to see the races too).
func TestConcurrentLogitsAndLossMatchSerial(t *testing.T) {
	m, _, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	V, bs := m.Config().VocabSize, m.Config().BlockSize
	type call struct {
		idx, targets []int
		B, T         int
	}
	rng := seeded(5)
	calls := make([]call, 48)
	for i := range calls {
		B, T := 1+i%3, bs-i%5
		calls[i] = call{randomTokens(rng, B*T, V), randomTokens(rng, B*T, V), B, T}
	}
	type result struct {
		logits, grads []float64
		loss, gLoss   float64
	}
	compute := func(c call) (r result) {
		var err1, err2, err3 error
		r.logits, err1 = m.Logits(c.idx, c.B, c.T)
		r.loss, err2 = m.loss(c.idx, c.targets, c.B, c.T)
		r.gLoss, r.grads, err3 = m.Gradients(c.idx, c.targets, c.B, c.T)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Error(err)
		}
		return r
	}
	want := make([]result, len(calls))
	for i, c := range calls {
		want[i] = compute(c)
	}
	got := make([]result, len(calls))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(calls); i += 8 {
				got[i] = compute(calls[i])
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		w, g := want[i], got[i]
		if !testutil.BitsEqual(g.logits, w.logits) || !testutil.BitsEqual(g.grads, w.grads) ||
			!testutil.BitsEqual([]float64{g.loss, g.gLoss}, []float64{w.loss, w.gLoss}) {
			t.Errorf("call %d (B=%d, T=%d): concurrent result differs from the serial one", i, calls[i].B, calls[i].T)
		}
	}
}
