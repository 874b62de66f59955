package minigpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

// trainTiny trains a small config for a few steps and returns the trainer
// and its loss curve.
func trainTiny(t testing.TB, seed uint64, steps int) (*Trainer, []float64) {
	t.Helper()
	return trainTinyWith(t, seed, steps, nil)
}

// trainTinyWith is trainTiny with the configs edited first.
func trainTinyWith(t testing.TB, seed uint64, steps int, edit func(*Config, *TrainConfig)) (*Trainer, []float64) {
	t.Helper()
	cfg := Config{VocabSize: 24, BlockSize: 16, EmbedDim: 32, Heads: 4, Layers: 2}
	d, err := NewDataset(LanternBay, nil, cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.Seed = steps, 8, seed
	if edit != nil {
		edit(&cfg, &tc)
		if m, err = NewModel(cfg, seed); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	var curve []float64
	if err := tr.Run(context.Background(), func(p Progress) { curve = append(curve, p.Loss) }); err != nil {
		t.Fatal(err)
	}
	return tr, curve
}

func TestDeterminism(t *testing.T) {
	a, curveA := trainTiny(t, 42, 20)
	b, curveB := trainTiny(t, 42, 20)
	for i := range curveA {
		if curveA[i] != curveB[i] {
			t.Fatalf("same seed: loss at step %d differs: %v vs %v", i, curveA[i], curveB[i])
		}
	}
	for i := range a.Model().Params() {
		if a.Model().Params()[i] != b.Model().Params()[i] {
			t.Fatalf("same seed: parameter %d differs", i)
		}
	}
	c, curveC := trainTiny(t, 43, 20)
	if curveC[0] == curveA[0] || c.Model().Params()[0] == a.Model().Params()[0] {
		t.Fatal("a different seed gave the same initial loss or weights")
	}
}

func TestTrainerErrors(t *testing.T) {
	d, _ := NewDataset(LanternBay, nil, 32)
	m, _ := NewModel(defaultConfig(), 1)
	for _, tc := range []struct {
		name string
		edit func(*TrainConfig)
		want error
	}{
		{"zero batch", func(c *TrainConfig) { c.BatchSize = 0 }, ErrBadConfig},
		{"negative steps", func(c *TrainConfig) { c.Steps = -1 }, ErrBadConfig},
		{"NaN lr", func(c *TrainConfig) { c.LR = math.NaN() }, ErrBadConfig},
		{"zero lr", func(c *TrainConfig) { c.LR = 0 }, ErrBadConfig},
		{"min lr above lr", func(c *TrainConfig) { c.MinLR = 1 }, ErrBadConfig},
		{"negative clip", func(c *TrainConfig) { c.GradClip = -1 }, ErrBadConfig},
		{"inf decay", func(c *TrainConfig) { c.WeightDecay = math.Inf(1) }, ErrBadConfig},
		{"no eval batches", func(c *TrainConfig) { c.EvalBatches = 0 }, ErrBadConfig},
		{"batch beyond memory", func(c *TrainConfig) { c.BatchSize, c.EvalBatches = 65536, 4096 }, ErrBadConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultTrainConfig()
			tc.edit(&c)
			_, err := NewTrainer(m, d, c)
			if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "new trainer: ") {
				t.Fatalf("NewTrainer = %v, want an error wrapping %v that starts with the operation", err, tc.want)
			}
		})
	}
	other, _ := NewDataset("abcdefghij"+strings.Repeat("xyz ", 100), nil, 8)
	if _, err := NewTrainer(m, other, DefaultTrainConfig()); !errors.Is(err, ErrDatasetMismatch) {
		t.Fatalf("NewTrainer with a dataset of another vocabulary size = %v, want ErrDatasetMismatch", err)
	}
}

func TestDivergenceStops(t *testing.T) {
	tr, _ := trainTiny(t, 1, 0)
	tr.Model().Params()[0] = math.NaN() // token embedding of id 0 poisons the loss
	tr.config.Steps = 50
	before := append([]float64(nil), tr.Model().Params()...)
	err := tr.Run(context.Background(), nil)
	if !errors.Is(err, ErrNonFinite) {
		t.Fatalf("Run = %v, want ErrNonFinite", err)
	}
	// The step is named as Progress.Step counts it (from 1), so that the
	// CLI's message agrees with its progress lines.
	if !strings.HasPrefix(err.Error(), "train step: ") || !strings.Contains(err.Error(), "in step 1") {
		t.Errorf("Run = %q, want it to start with the operation and name step 1", err)
	}
	for i := 1; i < len(before); i++ {
		if tr.Model().Params()[i] != before[i] {
			t.Fatalf("the diverged step changed parameter %d", i)
		}
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	tr, _ := trainTiny(t, 1, 0)
	tr.config.Steps = 1000
	ctx, cancel := context.WithCancel(context.Background())
	err := tr.Run(ctx, func(p Progress) {
		if p.Step == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || tr.Step() != 3 || tr.opt.step != 3 {
		t.Fatalf("Run = %v after %d steps (optimizer %d), want context.Canceled after 3", err, tr.Step(), tr.opt.step)
	}
}

// The seed's default run: 1200 steps of Adam at 3e-3 from seed 42.
func TestDefaultRunConverges(t *testing.T) {
	trainedLanternBay(t)
	if d := math.Abs(trained.first - math.Log(24)); d > 0.05 {
		t.Errorf("step 0 loss %.4f is %.3f from ln 24 = %.4f", trained.first, d, math.Log(24))
	}
	if trained.final >= 0.16 {
		t.Errorf("mean training loss over the last 50 steps is %.4f, want < 0.16 (the seed reports about 0.13)", trained.final)
	}
	if math.IsNaN(trained.val) || trained.val > 0.5 {
		t.Errorf("validation loss %.4f, want a number below 0.5", trained.val)
	}
	t.Logf("step 0 loss %.4f, last-50 mean %.4f, validation %.4f", trained.first, trained.final, trained.val)
}

// The learning-rate schedule against its closed form: warmup
// lr·(s+1)/W for s < W, then min + (lr-min)·(1+cos(π·p))/2 with
// p = (s-W)/(S-1-W), clamped at 1. With W = 10 and S = 111 the cosine
// spans 100 steps: its quarter, midpoint and end fall on steps 35, 60 and
// 110, where cos is √2/2, 0 and -1.
func TestLearningRateSchedule(t *testing.T) {
	c := TrainConfig{Steps: 111, LR: 1e-3, WarmupSteps: 10, CosineDecay: true, MinLR: 1e-4}
	for _, tc := range []struct {
		step int
		want float64
	}{
		{0, 1e-4},                            // warmup start: lr/W, not 0
		{4, 5e-4},                            // lr·5/10
		{9, 1e-3},                            // warmup end: the peak
		{10, 1e-3},                           // cosine start: p = 0
		{35, 1e-4 + 4.5e-4*(1+math.Sqrt2/2)}, // p = 1/4
		{60, 5.5e-4},                         // midpoint: halfway between peak and floor
		{110, 1e-4},                          // the last step reaches the floor
		{500, 1e-4},                          // and stays there if a run is extended
	} {
		if got := c.learningRate(tc.step); math.Abs(got-tc.want) > 1e-18 {
			t.Errorf("learningRate(%d) = %.17g, closed form %.17g", tc.step, got, tc.want)
		}
	}
	// Without cosine decay the rate stays at the peak after warmup; with
	// neither, every step uses it (the seed's run).
	c.CosineDecay = false
	if got := c.learningRate(60); got != 1e-3 {
		t.Errorf("no cosine: learningRate(60) = %v, want 1e-3", got)
	}
	c.WarmupSteps = 0
	if got := c.learningRate(0); got != 1e-3 {
		t.Errorf("no warmup: learningRate(0) = %v, want 1e-3", got)
	}
}

// Clipping scales a gradient of known norm (3-4-12: norm 13) to the clip
// exactly when its norm is above it, and leaves it bit for bit alone at
// and below (PyTorch's clip_grad_norm_ scales by min(1, clip/norm)).
func TestClipGradients(t *testing.T) {
	for _, tc := range []struct {
		clip    float64
		clipped bool
	}{
		{0, false},                      // off
		{6.5, true},                     // half the norm
		{math.Nextafter(13, 0), true},   // one ulp below the norm
		{13, false},                     // the boundary: not above, not clipped
		{math.Nextafter(13, 20), false}, // above the norm
		{100, false},
	} {
		g := []float64{3, -4, 12}
		norm, clipped := clipGradients(g, tc.clip, nil)
		if norm != 13 || clipped != tc.clipped {
			t.Errorf("clip %v: norm %v, clipped %v; want 13, %v", tc.clip, norm, clipped, tc.clipped)
		}
		want := []float64{3, -4, 12}
		if tc.clipped {
			s := tc.clip / 13
			want = []float64{3 * s, -4 * s, 12 * s}
			if n := math.Sqrt(kernels.SumSquares(g)); math.Abs(n-tc.clip) > 1e-15*tc.clip {
				t.Errorf("clip %v: norm after clipping %v", tc.clip, n)
			}
		}
		if !testutil.BitsEqual(g, want) {
			t.Errorf("clip %v: gradient %v, want %v", tc.clip, g, want)
		}
	}
	g := []float64{1, math.Inf(1)}
	if norm, clipped := clipGradients(g, 1, nil); !math.IsInf(norm, 1) || clipped || g[0] != 1 {
		t.Errorf("infinite gradient: norm %v, clipped %v, g %v; want +Inf reported unchanged", norm, clipped, g)
	}
}

// clipGradientsSerial is clipGradients as it was before the quick sum:
// the serial chain always decides.
func clipGradientsSerial(grads []float64, clip float64) (norm float64, clipped bool) {
	norm = math.Sqrt(kernels.SumSquares(grads))
	if math.IsNaN(norm) || math.IsInf(norm, 0) || clip <= 0 || !(norm > clip) {
		return norm, false
	}
	for i := range grads {
		grads[i] *= clip / norm
	}
	return norm, true
}

// TestQuickNormNeverChangesTheStep: the parallel block sum may only
// answer where the serial chain would decide the same, so that the
// gradient after clipping, and so the weights, keep their bits. Each
// case puts the clip between the two sums' answers (where they differ),
// on them, and a few ulps around, for gradients of many sizes, with and
// without scratch, at GOMAXPROCS 1, 2 and 8; the finiteness verdict is
// checked with NaN, infinities and sums that overflow. Removing the
// margin fails it.
func TestQuickNormNeverChangesTheStep(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(21, 22))
	check := func(g []float64, clip float64, what string) {
		t.Helper()
		want := slices.Clone(g)
		wantNorm, wantClipped := clipGradientsSerial(want, clip)
		cl := newClipper(len(g))
		for _, cl := range []*clipper{nil, &cl} {
			got := slices.Clone(g)
			norm, clipped := clipGradients(got, clip, cl)
			if clipped != wantClipped || !testutil.BitsEqual(got, want) {
				t.Fatalf("%s (n %d, clip %v): clipped %v, the serial chain says %v (norms %v, %v)", what, len(g), clip, clipped, wantClipped, norm, wantNorm)
			}
			if finite := !math.IsNaN(norm) && !math.IsInf(norm, 0); finite != (!math.IsNaN(wantNorm) && !math.IsInf(wantNorm, 0)) || (!finite && math.Float64bits(norm) != math.Float64bits(wantNorm)) {
				t.Fatalf("%s (n %d): norm %v, the serial chain's %v", what, len(g), norm, wantNorm)
			}
		}
	}
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 7, 100, 8191, 8193, 50000, 200000} {
			for rep := 0; rep < 6; rep++ {
				g := make([]float64, n)
				for i := range g {
					g[i] = rng.NormFloat64() * math.Exp(3*rng.NormFloat64())
				}
				serial, quick := kernels.SumSquares(g), quickSumSquares(g, nil)
				for _, s2 := range []float64{serial, quick, (serial + quick) / 2} {
					c := math.Sqrt(s2)
					for _, clip := range []float64{c, math.Nextafter(c, 0), math.Nextafter(c, math.Inf(1)), c * (1 - 1e-12), c * (1 + 1e-12), c / 2, c * 2} {
						check(g, clip, "near the boundary")
					}
				}
				check(g, 0, "clipping off")
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e200, math.Sqrt(math.MaxFloat64 / 3)} {
		g := make([]float64, 20000)
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		g[12345] = bad
		g[54] = math.Abs(bad)
		for _, clip := range []float64{0, 1, 1e300} {
			check(g, clip, fmt.Sprint("with ", bad))
		}
	}
}

// quickSumSquares' blocks make its sum the same at any GOMAXPROCS.
func TestQuickSumSquaresIndependentOfWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(23, 24))
	g := make([]float64, 3*sumSquaresBlock+77)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	cl := newClipper(len(g))
	runtime.GOMAXPROCS(1)
	want := quickSumSquares(g, nil)
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		if got := quickSumSquares(g, &cl); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("GOMAXPROCS %d: %v, one thread %v", procs, got, want)
		}
	}
}

// The batch sampler cuts windows of T consecutive tokens and targets that
// are the same windows shifted by exactly one; its starts cover
// [0, len-T-1) uniformly, as the seed's get_batch draws them.
func TestSampleBatchTargetsAreInputsShiftedByOne(t *testing.T) {
	const N, B, T = 40, 8, 5
	data := make([]int32, N)
	for i := range data {
		data[i] = int32(1000 + 3*i) // distinct, so the position is readable
	}
	x, y := make([]int, B*T), make([]int, B*T)
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int]int{}
	for range 400 {
		sampleBatch(x, y, data, B, T, rng)
		for b := 0; b < B; b++ {
			start := (x[b*T] - 1000) / 3
			seen[start]++
			for t2 := 0; t2 < T; t2++ {
				if x[b*T+t2] != int(data[start+t2]) || y[b*T+t2] != int(data[start+t2+1]) {
					t.Fatalf("window %d: x %v, y %v: want data[%d:%d] and data[%d:%d]", b, x[b*T:(b+1)*T], y[b*T:(b+1)*T], start, start+T, start+1, start+T+1)
				}
			}
		}
	}
	for s := 0; s < N-T-1; s++ {
		if seen[s] < 40 { // 3200 draws over 34 starts: about 94 each
			t.Errorf("start %d drawn %d times in 3200", s, seen[s])
		}
	}
	if len(seen) != N-T-1 {
		t.Errorf("%d distinct starts, want exactly the %d of [0, %d)", len(seen), N-T-1, N-T-1)
	}
}

func TestTrainConfigValidate(t *testing.T) {
	if err := DefaultTrainConfig().Validate(); err != nil {
		t.Fatalf("the default config: %v", err)
	}
	c := DefaultTrainConfig()
	c.MinLR = 1
	if err := c.Validate(); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "minimum learning rate 1") {
		t.Errorf("Validate = %v, want ErrBadConfig naming the minimum learning rate", err)
	}
}

func TestCheckpointIsASnapshot(t *testing.T) {
	tr := ckptTrainer(t, ckptResumeConfig(), 1, nil)
	c := tr.Checkpoint()
	before := encodeCheckpoint(t, c)
	if _, err := tr.trainStep(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeCheckpoint(t, c), before) {
		t.Fatal("training on changed a checkpoint taken earlier")
	}
}

// TestResumeIsExact trains N+M steps in one go and N, checkpoint, resume,
// M, for several schedules, and wants the same bits.
func TestResumeIsExact(t *testing.T) {
	const N, M = 7, 5
	cfg := ckptResumeConfig()
	for _, tc := range []struct {
		name string
		edit func(*TrainConfig)
	}{
		{"seed run", nil},
		{"warmup cosine clip decay", func(c *TrainConfig) {
			c.WarmupSteps, c.CosineDecay, c.MinLR, c.GradClip, c.WeightDecay = 3, true, 3e-4, 0.5, 0.1
		}},
	} {
		edit := func(c *TrainConfig) {
			if tc.edit != nil {
				tc.edit(c)
			}
			c.Steps = N + M
		}
		want := ckptTrainer(t, cfg, 0, edit)
		if err := want.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		for _, via := range []string{"bytes", "file"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				first := ckptTrainer(t, cfg, 0, edit)
				ctx, cancel := context.WithCancel(context.Background())
				err := first.Run(ctx, func(p Progress) {
					if p.Step == N {
						cancel()
					}
				})
				if !errors.Is(err, context.Canceled) || first.Step() != N {
					t.Fatalf("first part: %v after %d steps, want cancellation after %d", err, first.Step(), N)
				}
				var c *Checkpoint
				switch via {
				case "bytes":
					c, err = ReadCheckpoint(bytes.NewReader(encodeCheckpoint(t, first.Checkpoint())))
				case "file":
					path := filepath.Join(t.TempDir(), "run.ckpt")
					if err := SaveCheckpoint(path, first.Checkpoint()); err != nil {
						t.Fatal(err)
					}
					c, err = LoadCheckpoint(path)
				}
				if err != nil {
					t.Fatal(err)
				}
				second := resumeOnLanternBay(t, c)
				if err := second.Run(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				if second.Step() != N+M || second.opt.step != N+M {
					t.Fatalf("resumed run ended at step %d (optimizer %d), want %d", second.Step(), second.opt.step, N+M)
				}
				if !testutil.BitsEqual(second.Model().Params(), want.Model().Params()) {
					t.Fatal("parameters after resuming differ from the uninterrupted run")
				}
				if !testutil.BitsEqual(second.opt.m, want.opt.m) || !testutil.BitsEqual(second.opt.v, want.opt.v) {
					t.Fatal("optimizer moments after resuming differ from the uninterrupted run")
				}
				if a, b := second.Evaluate(), want.Evaluate(); a != b {
					t.Fatalf("validation loss %v after resuming, %v uninterrupted: the validation batches differ", a, b)
				}
			})
		}
	}
}

func TestResumeTrainerErrors(t *testing.T) {
	tr := ckptTrainer(t, ckptResumeConfig(), 1, nil)
	other, err := NewDataset(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40), nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *Checkpoint
		d    *Dataset
		want string
	}{
		{"weights-only", tr.Checkpoint().WeightsOnly(), tr.data, "weights-only"},
		{"other vocabulary", tr.Checkpoint(), other, "vocabulary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ResumeTrainer(tc.c, tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ResumeTrainer = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestCosDet checks the schedule's cosine against the platform's, an
// independent reference within an ulp of the exact value; that cosDet
// gives the same bits everywhere is shown by the pinned training hash.
func TestCosDet(t *testing.T) {
	for x := 0.0; x <= math.Pi; x += 0.001 {
		if d := math.Abs(cosDet(x) - math.Cos(x)); d > 1e-15 {
			t.Fatalf("cosDet(%v) = %v, math.Cos = %v", x, cosDet(x), math.Cos(x))
		}
	}
}
