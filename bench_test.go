package minigpt

import (
	"context"
	"example.org/minigpt/internal/par"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/nn"
	"example.org/minigpt/internal/testutil"
)

// trainingFLOPs counts the floating-point operations (multiply and add
// separately) of one training step: the matrix products and the causal
// attention triangle of the forward pass, times three for forward plus
// backward (the backward pass does two products for each forward one).
func trainingFLOPs(c Config, B, T int) float64 {
	N, C, V := float64(B*T), float64(c.EmbedDim), float64(c.VocabSize)
	perLayer := 2 * N * (C*3*C + C*C + 2*C*4*C)
	hs := C / float64(c.Heads)
	triangle := float64(T*(T+1)) / 2
	attention := 2 * 2 * float64(B*c.Heads) * triangle * hs
	forward := float64(c.Layers)*(perLayer+attention) + 2*N*C*V
	return 3 * forward
}

func benchTrainStep(b *testing.B, cfg Config, batch int, text string) {
	timeTrainSteps(b, newBenchTrainer(b, cfg, batch, text))
}

// newBenchTrainer is a trainer of cfg (its vocabulary taken from text) at
// this batch size, after one warm-up step that allocates the activations.
func newBenchTrainer(b *testing.B, cfg Config, batch int, text string) *Trainer {
	d, err := NewDataset(text, nil, cfg.BlockSize)
	if err != nil {
		b.Fatal(err)
	}
	cfg.VocabSize = d.Vocab.Size()
	m, err := NewModel(cfg, 42)
	if err != nil {
		b.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.BatchSize = batch
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tr.trainStep(); err != nil {
		b.Fatal(err)
	}
	return tr
}

// timeTrainSteps times tr's training steps and reports their rate.
func timeTrainSteps(b *testing.B, tr *Trainer) {
	cfg, batch := tr.Model().Config(), tr.Config().BatchSize
	b.ReportAllocs()
	cpu0, haveCPU := testutil.ProcessCPUTime()
	for b.Loop() {
		if _, err := tr.trainStep(); err != nil {
			b.Fatal(err)
		}
	}
	perStep := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(batch*cfg.BlockSize)/perStep, "tokens/s")
	b.ReportMetric(1/perStep, "steps/s")
	b.ReportMetric(trainingFLOPs(cfg, batch, cfg.BlockSize)/perStep/1e9, "GFLOP/s")
	if cpu1, ok := testutil.ProcessCPUTime(); ok && haveCPU {
		// On a shared machine the wall time depends on how many cores
		// the other processes left us: "cores" says how many the run
		// got on average, "cpu-ms/step" what a step cost in CPU time.
		cpu := (cpu1 - cpu0).Seconds()
		b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/step")
		b.ReportMetric(cpu/b.Elapsed().Seconds(), "cores")
	}
}

// BenchmarkTrainStep is one step of the seed's run: batch 32 of 32
// tokens, width 64, 4 heads, 2 layers, on Lantern Bay.
func BenchmarkTrainStep(b *testing.B) {
	benchTrainStep(b, defaultConfig(), 32, LanternBay)
}

// babyText returns the corpus of the baby benchmark: the file named by
// MINIGPT_BENCH_TEXT (tiny Shakespeare, say) if set, else a fixed
// pseudo-random text over 65 symbols, tiny Shakespeare's vocabulary size.
// The time per step depends only on the shapes, so the two time the same;
// bench/torch_ref.py and bench/numpy_ref.py make the same text.
func babyText(b testing.TB) string {
	if path := os.Getenv("MINIGPT_BENCH_TEXT"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return string(raw)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	text := make([]byte, 200_000)
	for i := range text {
		text[i] = byte(33 + rng.IntN(65))
	}
	return string(text)
}

// babyConfig is nanoGPT's CPU "baby" model on tiny Shakespeare: block 64,
// width 128, 4 heads, 4 layers (batch 12).
func babyConfig() Config {
	return Config{VocabSize: 65, BlockSize: 64, EmbedDim: 128, Heads: 4, Layers: 4}
}

// BenchmarkTrainStepBaby is one step of nanoGPT's baby config (batch 12).
func BenchmarkTrainStepBaby(b *testing.B) {
	benchTrainStep(b, babyConfig(), 12, babyText(b))
}

// scaleSizes are the model sizes of bench/compare.sh's scale table, the
// shapes of bench/torch_ref.py's configs of the same names: the seed's
// run (0.10M parameters), nanoGPT's baby (0.82M), a 3.2M model between
// them and nanoGPT's config/train_shakespeare_char.py (10.8M) at batch 4
// instead of its 64, about 1000 tokens a step each. pairReps is the
// steps per thread count in a round of BenchmarkTwoThreads.
var scaleSizes = []struct {
	name            string
	cfg             Config
	batch, pairReps int
	text            func(testing.TB) string
}{
	{"seed", defaultConfig(), 32, 20, func(testing.TB) string { return LanternBay }},
	{"baby", babyConfig(), 12, 5, babyText},
	{"mid", Config{VocabSize: 65, BlockSize: 128, EmbedDim: 256, Heads: 4, Layers: 4}, 8, 2, babyText},
	{"full", Config{VocabSize: 65, BlockSize: 256, EmbedDim: 384, Heads: 6, Layers: 6}, 4, 1, babyText},
}

// BenchmarkTrainStepScale is one training step at each of scaleSizes
// (seed and baby are BenchmarkTrainStep's and BenchmarkTrainStepBaby's
// runs), with benchTrainStep's metrics and the memory beside them:
// B/token, the bytes of activations and their gradients per token of
// batch, counted from the trainer's own buffers, and est-B/token, the
// same from Config.activationFloats (which NewTrainer's estimate uses);
// heap-MiB, the live heap the trainer added (parameters, gradients,
// Adam's moments, transposed weights, activations, batches), against
// est-MiB, NewTrainer's estimate (trainingBytes, checked against
// maxTrainingBytes); and peak-RSS-MiB, the process's peak resident
// memory, which is the size's own when one size runs per process, as
// in bench/compare.sh:
//
//	go test -run '^$' -bench 'BenchmarkTrainStepScale/full$' -benchtime 5x
func BenchmarkTrainStepScale(b *testing.B) {
	for _, s := range scaleSizes {
		b.Run(s.name, func(b *testing.B) {
			text := s.text(b)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tr := newBenchTrainer(b, s.cfg, s.batch, text)
			runtime.GC()
			runtime.ReadMemStats(&after)
			cfg, tc := tr.Model().Config(), tr.Config()
			tokens := float64(s.batch * cfg.BlockSize)
			timeTrainSteps(b, tr)
			b.ReportMetric(8*float64(activationBufferFloats(tr.acts))/tokens, "B/token")
			b.ReportMetric(8*cfg.activationFloats(s.batch, cfg.BlockSize)/tokens, "est-B/token")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
			b.ReportMetric(trainingBytes(cfg, tc)/(1<<20), "est-MiB")
			if rss, ok := peakRSS(); ok {
				b.ReportMetric(rss/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// stepProduct is one matrix product of a training step, C (M×N) = A
// (M×K)·B (K×N), with A read transposed for the weight gradients.
type stepProduct struct {
	M, N, K int
	trans   bool
}

// stepProducts lists the matrix products of one training step at cfg
// and this batch, each layer's and the head's (as a plain product, not
// the tied weight's transposed one), forward, input gradient and weight
// gradient; bench/gemm_ref.py's step_products is the same list.
// Attention's per-head products (about 5% of the full config's FLOPs)
// are left out.
func stepProducts(cfg Config, batch int) []stepProduct {
	M, C, V := batch*cfg.BlockSize, cfg.EmbedDim, cfg.VocabSize
	layer := [][2]int{{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}} // (in, out): qkv, proj, fc, fcproj
	var ps []stepProduct
	for range cfg.Layers {
		for _, w := range layer {
			ps = append(ps, stepProduct{M, w[1], w[0], false}, // forward
				stepProduct{M, w[0], w[1], false}, // input gradient
				stepProduct{w[0], w[1], M, true})  // weight gradient
		}
	}
	return append(ps, stepProduct{M, V, C, false}, stepProduct{M, C, V, false}, stepProduct{C, V, M, true})
}

// BenchmarkStepProducts times one training step's matrix products
// (stepProducts) on one thread as the trainer runs them (GemmNNSet, and
// nn.MatmulWeightGrad for the weight gradients), at each of scaleSizes,
// and reports ms/step and GFLOP/s: what the step would cost if it were
// nothing but its products. Each product reads operands of its own from
// memory, as a full-size step's do (its activations far exceed the
// caches); at the small sizes a step's chained products can find theirs
// in cache and run faster than the list does. bench/ceiling.sh sets it beside
// OpenBLAS's dgemm and sgemm on the same list (bench/gemm_ref.py):
//
//	GOMAXPROCS=1 go test -run '^$' -bench 'BenchmarkStepProducts/full$' -benchtime 3x
func BenchmarkStepProducts(b *testing.B) {
	for _, s := range scaleSizes {
		b.Run(s.name, func(b *testing.B) {
			ps := stepProducts(s.cfg, s.batch)
			rng := rand.New(rand.NewPCG(1, 2))
			fill := func(n int) []float64 {
				x := make([]float64, n)
				for i := range x {
					x[i] = rng.Float64() - 0.5
				}
				return x
			}
			type operands struct{ a, b, c []float64 }
			ops := make([]operands, len(ps))
			flops := 0.0
			for i, p := range ps {
				ops[i] = operands{fill(p.M * p.K), fill(p.K * p.N), make([]float64, p.M*p.N)}
				flops += 2 * float64(p.M) * float64(p.N) * float64(p.K)
			}
			run := func() {
				for i, p := range ps {
					o := ops[i]
					if p.trans { // the trainer's weight gradient: A is the layer's input, stored (K, M)
						j := nn.MatmulWeightGrad{DWeight: o.c, Inp: o.a, DOut: o.b, N: p.K, C: p.M, OC: p.N}
						items, _, _ := j.Size()
						j.Run(0, items)
						continue
					}
					kernels.GemmNNSet(o.c, p.N, nil, o.a, p.K, 1, o.b, p.N, p.M, p.N, p.K, kernels.EpiNone, nil)
				}
			}
			run() // the first pass faults C's pages in; the scratch pool fills
			for b.Loop() {
				run()
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(sec*1e3, "ms/step")
			b.ReportMetric(flops/sec/1e9, "GFLOP/s")
		})
	}
}

// activationBufferFloats counts the float64s of a's per-token buffers:
// every []float64 field but weightsT (parameter-sized, not per token),
// found by reflection so that a buffer added later is counted too.
func activationBufferFloats(a *activations) int {
	v := reflect.ValueOf(a).Elem()
	n := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Type() == reflect.TypeFor[[]float64]() && v.Type().Field(i).Name != "weightsT" {
			n += f.Len()
		}
	}
	return n
}

// peakRSS returns the process's peak resident memory in bytes (VmHWM in
// Linux's /proc/self/status), or false where that is not available.
func peakRSS() (float64, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%g kB", &kb); err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// BenchmarkTwoThreads measures what a second thread buys a training
// step, at each of scaleSizes, on a machine whose speed drifts (a shared
// virtual machine's host): each iteration is one round of a few steps
// (pairReps) at GOMAXPROCS 1 and the same number at GOMAXPROCS 2, back
// to back in one process, and "speedup" is the median over the rounds of
// the one-thread time over the two-thread time, so a drift slower than a
// round cancels out. Run it with -benchtime 15x or so; it restores
// GOMAXPROCS when done.
func BenchmarkTwoThreads(b *testing.B) {
	for _, c := range scaleSizes {
		b.Run(c.name, func(b *testing.B) {
			tr := newBenchTrainer(b, c.cfg, c.batch, c.text(b))
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
			var ratios, one, two []float64
			for b.Loop() {
				var dt [2]time.Duration
				for k, procs := range []int{1, 2} {
					runtime.GOMAXPROCS(procs)
					start := time.Now()
					for range c.pairReps {
						if _, err := tr.trainStep(); err != nil {
							b.Fatal(err)
						}
					}
					dt[k] = time.Since(start)
				}
				ratios = append(ratios, dt[0].Seconds()/dt[1].Seconds())
				one = append(one, dt[0].Seconds()*1e3/float64(c.pairReps))
				two = append(two, dt[1].Seconds()*1e3/float64(c.pairReps))
			}
			median := func(x []float64) float64 {
				slices.Sort(x)
				return x[len(x)/2]
			}
			b.ReportMetric(median(ratios), "speedup")
			b.ReportMetric(median(one), "ms/step-1")
			b.ReportMetric(median(two), "ms/step-2")
		})
	}
}

// BenchmarkTrainScaling is the step time as the context and the width
// grow (batch 8, 2 layers, 64-wide heads, vocabulary 65).
func BenchmarkTrainScaling(b *testing.B) {
	text := LanternBay + LanternBay + LanternBay
	for _, T := range []int{32, 64, 128, 256} {
		for _, C := range []int{64, 128, 256, 512} {
			b.Run(fmt.Sprintf("T=%d/C=%d", T, C), func(b *testing.B) {
				benchTrainStep(b, Config{BlockSize: T, EmbedDim: C, Heads: C / 64, Layers: 2}, 8, text)
			})
		}
	}
}

// BenchmarkGenerate decodes 1000 tokens from "the keeper " with the
// default config, greedy and sampled, with and without the KV cache (the
// cost does not depend on the weights).
func BenchmarkGenerate(b *testing.B) {
	m, err := NewModel(defaultConfig(), 42)
	if err != nil {
		b.Fatal(err)
	}
	vocab, _ := NewVocab(LanternBay)
	prompt, _ := vocab.Encode("the keeper ")
	const n = 1000
	for _, mode := range []string{"greedy", "sampled"} {
		for _, cache := range []string{"cached", "uncached"} {
			b.Run(mode+"/"+cache, func(b *testing.B) {
				o := GenerateOptions{MaxNewTokens: n, Greedy: mode == "greedy", noCache: cache == "uncached"}
				if mode == "sampled" {
					o.Temperature, o.TopK, o.Seed = 0.8, 10, 42
				}
				m.Generate(context.Background(), prompt, o) // warm-up
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Generate(context.Background(), prompt, o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

func TestTrainStepAllocatesNothing(t *testing.T) {
	tr, _ := trainTiny(t, 1, 1)
	if allocs := testing.AllocsPerRun(5, func() { tr.trainStep() }); allocs != 0 {
		t.Fatalf("a training step allocates %v times, want 0", allocs)
	}
	// With the weight gradients in halves at two threads (their marks
	// are allocated by the first step only).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	saved := par.HalvesRatio
	defer func() { par.HalvesRatio = saved }()
	par.HalvesRatio = 0
	tr.trainStep()
	if allocs := testing.AllocsPerRun(5, func() { tr.trainStep() }); allocs != 0 {
		t.Fatalf("a training step with the weight gradients in halves allocates %v times, want 0", allocs)
	}
}

// BenchmarkGenerateWithinBlock decodes 28 tokens from a 4-token prompt,
// never leaving the 32-token block: the regime where the KV cache pays
// (past the block size every token must rebuild the slid window).
func BenchmarkGenerateWithinBlock(b *testing.B) {
	m, err := NewModel(defaultConfig(), 42)
	if err != nil {
		b.Fatal(err)
	}
	prompt := []int{0, 1, 2, 3}
	const n = 28
	for _, cache := range []string{"cached", "uncached"} {
		b.Run(cache, func(b *testing.B) {
			o := GenerateOptions{MaxNewTokens: n, Greedy: true, noCache: cache == "uncached"}
			m.Generate(context.Background(), prompt, o)
			b.ReportAllocs()
			for b.Loop() {
				m.Generate(context.Background(), prompt, o)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
