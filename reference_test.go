// reference_test.go proves the reference model (reference.go) bit-identical to the engine, and close to the lessons' NumPy values.

package minigpt

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"example.org/minigpt/internal/par"
)

// refSmallConfig is the reference tests' model: the Lantern Bay
// vocabulary, a block of 13 and heads of 10 channels, so that the
// engine's blocks of attention rows (8 forward, 4 backward) and its dot
// products' eight lanes end ragged, and small enough for every kernel
// path at three GOMAXPROCS in about a second.
func refSmallConfig(tied bool) Config {
	return Config{VocabSize: lanternBayVocabSizeForTests, BlockSize: 13, EmbedDim: 20, Heads: 2, Layers: 2, TiedHead: tied}
}

// lanternBayVocabSizeForTests is the number of distinct characters of
// LanternBay, which the training tests' datasets have.
const lanternBayVocabSizeForTests = 24

// refProcs are the GOMAXPROCS the engine is checked at: serial, the
// machine's two cores (where sums over rows run in two halves), and more
// goroutines than cores.
var refProcs = []int{1, 2, 8}

// forEachPathAndProcs runs fn on every kernel path at every GOMAXPROCS
// of refProcs, with every parallel section split as finely as the
// scheduler can (par.MinParallelWork 0), so that chunk boundaries fall
// everywhere they can.
func forEachPathAndProcs(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	forEachKernelPath(t, func(t *testing.T, _ string) {
		for _, p := range refProcs {
			t.Run(fmt.Sprintf("procs=%d", p), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
				saved := par.MinParallelWork
				defer func() { par.MinParallelWork = saved }()
				par.MinParallelWork = 0
				fn(t)
			})
		}
	})
}

// refTensorName names the tensor of config c that holds slab index i,
// and the index within it.
func refTensorName(c Config, i int) string {
	for _, ts := range refTensors(c, &refParams{}) {
		if i < ts.size {
			return fmt.Sprintf("%s[%d]", ts.name, i)
		}
		i -= ts.size
	}
	return fmt.Sprintf("beyond the slab [%d]", i)
}

// requireSameBits fails t unless got and want have the same length and
// every element the same bits; name(i) says what element i is.
func requireSameBits(t *testing.T, what string, got, want []float64, name func(int) string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: engine has %d values, reference %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s %s: engine %v (%#016x), reference %v (%#016x)", what, name(i), got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// refIndex names element i of a flat slice.
func refIndex(i int) string { return fmt.Sprintf("[%d]", i) }

// refRandomModel returns a model of config c whose every parameter is
// random (gains near 1, the rest N(0, 0.3²)), so that no gradient is
// trivially 0 or 1.
func refRandomModel(t *testing.T, c Config, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, ts := range m.tensors() {
		for i := range ts.data {
			ts.data[i] = 0.3 * rng.NormFloat64()
			if strings.HasSuffix(ts.name, "_gain") {
				ts.data[i] += 1
			}
		}
	}
	return m
}

// TestReferenceLayoutMatchesTensors checks the reference's views of a
// slab against Model.Tensors: the same tensors in the same order, each
// view starting where the engine's does and as long, for both heads.
func TestReferenceLayoutMatchesTensors(t *testing.T) {
	for _, c := range []Config{defaultConfig(), refSmallConfig(false), refSmallConfig(true)} {
		m, err := NewModel(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := refNumParams(c), len(m.Params()); got != want {
			t.Errorf("%+v: reference has %d parameters, engine %d", c, got, want)
		}
		var p refParams
		refs := refTensors(c, &p)
		p = refParamViews(c, m.Params())
		tensors := m.tensors()
		if len(refs) != len(tensors) {
			t.Fatalf("%+v: reference has %d tensors, engine %d", c, len(refs), len(tensors))
		}
		for i, ts := range tensors {
			r := refs[i]
			view := *r.view
			if r.name != ts.name || len(view) != len(ts.data) || unsafe.SliceData(view) != unsafe.SliceData(ts.data) {
				t.Errorf("%+v: tensor %d is the engine's %s (%d values), the reference's %s (%d values, at another place: %v)",
					c, i, ts.name, len(ts.data), r.name, len(view), unsafe.SliceData(view) != unsafe.SliceData(ts.data))
			}
		}
	}
}

// TestReferenceLogitsOfDefaultModel checks that the reference gives the
// embedded model's logits to the bit: windows of Lantern Bay at the
// full block size, and a shorter batch.
func TestReferenceLogitsOfDefaultModel(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := vocab.Encode(LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	r := newRefModel(m)
	for _, shape := range []struct{ B, T, at int }{{3, 32, 100}, {2, 7, 5001}} {
		idx := make([]int, shape.B*shape.T)
		for i := range idx {
			idx[i] = ids[(shape.at+i)%len(ids)]
		}
		r.forward(idx, nil, shape.B, shape.T)
		want := r.acts.logits
		forEachPathAndProcs(t, func(t *testing.T) {
			got, err := m.Logits(idx, shape.B, shape.T)
			if err != nil {
				t.Fatal(err)
			}
			requireSameBits(t, fmt.Sprintf("logits (%d, %d)", shape.B, shape.T), got, want, refIndex)
		})
	}
}

// TestReferenceGradients checks the loss and every parameter's gradient
// of a batch (Model.Gradients) against the reference's, to the bit, for
// both heads, on a random model and batch large enough that the engine
// sums the weight gradients over rows in two halves at GOMAXPROCS 2.
func TestReferenceGradients(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			c := refSmallConfig(tied)
			m := refRandomModel(t, c, 3)
			rng := rand.New(rand.NewPCG(4, 0))
			B, T := 21, c.BlockSize // 273 rows: ragged for the blocks of 4 and 8 rows
			idx, targets := make([]int, B*T), make([]int, B*T)
			for i := range idx {
				idx[i], targets[i] = rng.IntN(c.VocabSize), rng.IntN(c.VocabSize)
			}
			r := newRefModel(m)
			wantLoss := r.forward(idx, targets, B, T)
			r.backward()
			forEachPathAndProcs(t, func(t *testing.T) {
				loss, grads, err := m.Gradients(idx, targets, B, T)
				if err != nil {
					t.Fatal(err)
				}
				requireSameBits(t, "loss", []float64{loss}, []float64{wantLoss}, refIndex)
				requireSameBits(t, "gradient", grads, r.grads, func(i int) string { return refTensorName(c, i) })
			})
		})
	}
}

// refTrainCase is a training run the reference is checked on.
type refTrainCase struct {
	name string
	cfg  Config
	tc   TrainConfig
}

// refTrainCases are 50 steps of the small model with each head, with
// the lessons' options and with all of nanoGPT's (warmup, cosine decay,
// a gradient clip that some steps reach and others not, weight decay).
func refTrainCases() []refTrainCase {
	plain := TrainConfig{Steps: 50, BatchSize: 4, LR: 3e-3, Seed: 11, EvalBatches: 1}
	options := plain
	options.WarmupSteps, options.CosineDecay, options.MinLR = 5, true, 3e-4
	options.GradClip, options.WeightDecay = 1, 0.1
	return []refTrainCase{
		{"untied", refSmallConfig(false), plain},
		{"tied", refSmallConfig(true), plain},
		{"untied+options", refSmallConfig(false), options},
		{"tied+options", refSmallConfig(true), options},
	}
}

// refTrain trains a fresh model of the case with the reference and
// returns it, with every step's loss and gradient norm.
func refTrain(t *testing.T, rc refTrainCase, d *Dataset) (*refModel, []float64, []float64) {
	t.Helper()
	m, err := NewModel(rc.cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	r := newRefModel(m)
	losses, norms := r.train(d.Train, rc.tc)
	return r, losses, norms
}

// engineTrain trains a fresh model of the case with a Trainer (Run) and
// returns it, with every step's loss and the Adam moments.
func engineTrain(t *testing.T, rc refTrainCase, d *Dataset) (m *Model, losses, moment1, moment2 []float64) {
	t.Helper()
	m, err := NewModel(rc.cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, d, rc.tc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), func(p Progress) { losses = append(losses, p.Loss) }); err != nil {
		t.Fatal(err)
	}
	moment1, moment2 = trainerMoments(tr)
	return m, losses, moment1, moment2
}

// trainerMoments returns copies of the trainer's Adam moments.
func trainerMoments(tr *Trainer) (m, v []float64) {
	return slices.Clone(tr.opt.m), slices.Clone(tr.opt.v)
}

// checkTraining compares an engine run with the reference's.
func checkTraining(t *testing.T, c Config, r *refModel, refLosses []float64, m *Model, losses, moment1, moment2 []float64) {
	t.Helper()
	name := func(i int) string { return refTensorName(c, i) }
	requireSameBits(t, "loss per step", losses, refLosses, func(i int) string { return fmt.Sprintf("of step %d", i+1) })
	requireSameBits(t, "weights", m.Params(), r.params, name)
	requireSameBits(t, "Adam's first moments", moment1, r.m, name)
	requireSameBits(t, "Adam's second moments", moment2, r.v, name)
}

// TestReferenceTraining checks 50 training steps of the Trainer against
// the reference's: every step's loss, then every weight and both Adam
// moments to the bit, for both heads, with and without the training
// options, on every kernel path at every GOMAXPROCS of refProcs.
func TestReferenceTraining(t *testing.T) {
	d, err := NewDataset(LanternBay, nil, refSmallConfig(false).BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range refTrainCases() {
		t.Run(rc.name, func(t *testing.T) {
			r, refLosses, norms := refTrain(t, rc, d)
			if clip := rc.tc.GradClip; clip > 0 {
				clipped := 0
				for _, n := range norms {
					if n > clip {
						clipped++
					}
				}
				if clipped == 0 || clipped == len(norms) {
					t.Fatalf("the clip %v was reached in %d of %d steps: the test needs both kinds", clip, clipped, len(norms))
				}
			}
			forEachPathAndProcs(t, func(t *testing.T) {
				m, losses, moment1, moment2 := engineTrain(t, rc, d)
				checkTraining(t, rc.cfg, r, refLosses, m, losses, moment1, moment2)
			})
		})
	}
}

// TestReferenceTrainingDefaultConfig checks the first 50 steps of the
// lessons' run (the default config and training config, batches of 32
// windows of 32) against the reference's, on the path and GOMAXPROCS in
// use. It takes tens of seconds, so it runs only when the environment
// has MINIGPT_LONG_TESTS=1 (.ci/run sets it for this test).
func TestReferenceTrainingDefaultConfig(t *testing.T) {
	if os.Getenv("MINIGPT_LONG_TESTS") != "1" {
		t.Skip("the lessons' run for 50 steps in the reference takes tens of seconds: set MINIGPT_LONG_TESTS=1")
	}
	d, err := NewDataset(LanternBay, nil, defaultConfig().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.EvalBatches = 50, 1
	rc := refTrainCase{"lessons", defaultConfig(), tc}
	r, refLosses, _ := refTrain(t, rc, d)
	m, losses, moment1, moment2 := engineTrain(t, rc, d)
	checkTraining(t, rc.cfg, r, refLosses, m, losses, moment1, moment2)
}

// refGolden is testdata/golden_tiny.json (see golden_test.go and
// testdata/golden_gen.py): parameters, logits, losses and gradients of
// a tiny model computed by the lessons' NumPy code.
type refGolden struct {
	Config struct{ Vocab, Block, Embd, Heads, Layers int }
	Params map[string]struct{ Data []float64 }
	Cases  []struct {
		B, T         int
		Idx, Targets []int
		LossNoEps    float64 `json:"loss_no_eps"`
		Logits       []float64
		Grads        map[string][]float64
	}
}

// refGoldenTensors calls fn for every tensor of the golden file with
// the reference's view that holds it and the index in that view of the
// golden tensor's element i (its matrices are (in, out), as ours; its
// query, key and value matrices are column blocks of our qkv matrix).
func refGoldenTensors(c Config, p refParams, fn func(name string, view []float64, at func(i int) int)) {
	C := c.EmbedDim
	from := func(base int) func(int) int { return func(i int) int { return base + i } }
	fn("E", p.tokenEmbedding, from(0))
	fn("P", p.positionEmbedding, from(0))
	for l := 0; l < c.Layers; l++ {
		n := func(s string) string { return fmt.Sprintf("%s%d", s, l) }
		fn(n("ln1g"), p.ln1Gain, from(l*C))
		fn(n("ln1b"), p.ln1Bias, from(l*C))
		for part, s := range []string{"Wq", "Wk", "Wv"} {
			fn(n(s), p.qkvWeight, func(i int) int { return l*C*3*C + i/C*3*C + part*C + i%C })
		}
		fn(n("Wo"), p.attnProjWeight, from(l*C*C))
		fn(n("ln2g"), p.ln2Gain, from(l*C))
		fn(n("ln2b"), p.ln2Bias, from(l*C))
		fn(n("W1"), p.fcWeight, from(l*C*4*C))
		fn(n("b1"), p.fcBias, from(l*4*C))
		fn(n("W2"), p.fcProjWeight, from(l*4*C*C))
		fn(n("b2"), p.fcProjBias, from(l*C))
	}
	fn("lnfg", p.lnfGain, from(0))
	fn("lnfb", p.lnfBias, from(0))
	fn("Wh", p.headWeight, from(0))
	fn("bh", p.headBias, from(0))
}

// Agreement with NumPy: within refGoldenRel of the value, plus the
// absolute floor refGoldenAbs (see TestReferenceMatchesNumPy).
const (
	refGoldenRel = 1e-12
	refGoldenAbs = 1e-16
)

// TestReferenceMatchesNumPy checks the reference against the lessons'
// NumPy code (testdata/golden_tiny.json): logits, loss and every
// gradient within 1e-12 of the value, plus an absolute floor of 1e-16.
// NumPy sums in BLAS's orders, not ours, so a value summed from terms as
// large as s may differ by a few ulps of s (2.2e-16·s each) however
// small the sum: the floor is for the sums that cancel. The one value
// here that needs it is a bias gradient of 3.9e-6 summed from terms up
// to 8.8e-3, which differs from NumPy's by 9.5e-18 (2.4e-12 of it), 5
// ulps of its largest term.
func TestReferenceMatchesNumPy(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	var g refGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	c := Config{VocabSize: g.Config.Vocab, BlockSize: g.Config.Block, EmbedDim: g.Config.Embd, Heads: g.Config.Heads, Layers: g.Config.Layers}
	m, err := NewModel(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := newRefModel(m)
	filled := 0
	refGoldenTensors(c, r.p, func(name string, view []float64, at func(int) int) {
		p, ok := g.Params[name]
		if !ok {
			t.Fatalf("the golden file lacks %s", name)
		}
		for i, v := range p.Data {
			view[at(i)] = v
		}
		filled += len(p.Data)
	})
	if filled != len(r.params) {
		t.Fatalf("the golden parameters fill %d of %d", filled, len(r.params))
	}
	worst := 0.0 // the largest difference over the tolerance's relative part
	check := func(what string, got, want float64) {
		t.Helper()
		d := math.Abs(got - want)
		if d > refGoldenRel*math.Abs(want)+refGoldenAbs {
			t.Errorf("%s: reference %.17g, NumPy %.17g (difference %.3g, %.3g of the value)", what, got, want, d, d/math.Abs(want))
		}
		if w := math.Abs(want); w > 0 {
			worst = max(worst, d/w)
		}
	}
	for ci, k := range g.Cases {
		loss := r.forward(k.Idx, k.Targets, k.B, k.T)
		if len(k.Logits) != len(r.acts.logits) {
			t.Fatalf("case %d: %d golden logits, %d here", ci, len(k.Logits), len(r.acts.logits))
		}
		for i, want := range k.Logits {
			check(fmt.Sprintf("case %d logit %d", ci, i), r.acts.logits[i], want)
		}
		check(fmt.Sprintf("case %d loss", ci), loss, k.LossNoEps)
		r.backward()
		refGoldenTensors(c, r.g, func(name string, view []float64, at func(int) int) {
			want, ok := k.Grads[name]
			if !ok {
				t.Fatalf("case %d: the golden file lacks the gradient of %s", ci, name)
			}
			for i, w := range want {
				check(fmt.Sprintf("case %d gradient %s[%d]", ci, name, i), view[at(i)], w)
			}
		})
	}
	t.Logf("largest difference from NumPy: %.3g of the value", worst)
}
