// Command train trains a MiniGPT on a text corpus and writes a checkpoint
// (format: CHECKPOINT.md at the repository root).
//
//	go run ./cmd/train                                   # the seed run: Lantern Bay, 1200 steps
//	go run ./cmd/train -preset baby -corpus input.txt -out shakespeare.ckpt
//	go run ./cmd/train -resume minigpt.ckpt -steps 2400  # continue, exactly
//
// Progress goes to standard error: a live line on a terminal, otherwise a
// log line every 1/20 of the run and at every evaluation. SIGINT or
// SIGTERM stops at the end of the current step and writes the checkpoint
// (full, or weights-only with -weights-only), so nothing learned is lost;
// a second signal aborts without saving.
//
// Everything is checked before the first step (flags, the corpus, the
// -resume file, every output): an existing file is replaced only with
// -force, or when it is the -resume file the run continues; a device,
// FIFO, socket, symbolic link or directory never.
//
// Exit status (cli.ExitRule): 0 done; 2 refused before any work, nothing
// written; 1 failed after training began (divergence, a failed save);
// 130 interrupted (the checkpoint written if a step was taken).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("train", run) }

// errInterrupted is returned (wrapped) when a signal or the context stopped
// training; the checkpoint has been written.
var errInterrupted = cli.ErrInterrupted

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode).
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("train", err, stderr) }

// options are the command's flags.
type options struct {
	corpus, out, resume, preset string

	steps, batch, block, embd, heads, layers int
	lr                                       float64
	tied                                     bool
	seed                                     uint64

	warmup                       int
	cosine                       bool
	minLR, gradClip, weightDecay float64
	evalEvery, evalBatches       int

	weightsOnly, keepBest, force bool
	plot                         string
}

// presets maps a -preset name to flag values; flags given explicitly win.
var presets = map[string]map[string]string{
	// baby is nanoGPT's CPU "baby GPT" run on tiny Shakespeare (its
	// README: block 64, batch 12, 4 layers, 4 heads, width 128, 2000
	// iterations, lr 1e-3 with 100 warmup steps and cosine decay to 1e-4,
	// gradient clip 1, AdamW weight decay 0.1).
	"baby": {
		"block": "64", "batch": "12", "layers": "4", "heads": "4", "embd": "128",
		"lr": "1e-3", "steps": "2000", "warmup": "100", "cosine": "true", "min-lr": "1e-4",
		"grad-clip": "1", "weight-decay": "0.1", "eval-every": "100", "eval-batches": "40",
	},
}

// fixedByCheckpoint are the flags a -resume run takes from the checkpoint.
// The others may be given: -steps (to extend the run), -corpus (the text
// it was trained on), the outputs (-out, -weights-only, -plot, -keep-best)
// and -force.
var fixedByCheckpoint = []string{
	"batch", "block", "embd", "heads", "layers", "tied", "seed", "lr",
	"warmup", "cosine", "min-lr", "grad-clip", "weight-decay",
	"eval-every", "eval-batches", "preset",
}

func newFlagSet(o *options) *flag.FlagSet {
	mc, tc := minigpt.DefaultConfig(), minigpt.DefaultTrainConfig()
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.corpus, "corpus", "", "train on this UTF-8 text `file` (default: the built-in Lantern Bay text); the first 90% trains, the rest validates")
	fs.StringVar(&o.out, "out", "minigpt.ckpt", "write the checkpoint to this `file` (a -resume run without -out rewrites its -resume file)")
	fs.StringVar(&o.resume, "resume", "", "continue the full checkpoint in this `file` exactly where it stopped; the model and training settings come from it: give only -steps (to extend), the same -corpus, outputs (-out, -weights-only, -plot, -keep-best) and -force")
	fs.BoolVar(&o.force, "force", false, "replace existing -out, -plot and -keep-best files, and -resume on a corpus other than the checkpoint's")
	fs.BoolVar(&o.weightsOnly, "weights-only", false, "write a weights-only checkpoint (config, vocabulary, step, parameters: enough to generate, not to resume)")
	fs.StringVar(&o.preset, "preset", "", "start from the flag values of this `preset`; explicit flags override it. baby: -block 64 -batch 12 -layers 4 -heads 4 -embd 128 -lr 1e-3 -steps 2000 -warmup 100 -cosine -min-lr 1e-4 -grad-clip 1 -weight-decay 0.1 -eval-every 100 -eval-batches 40")

	fs.IntVar(&o.steps, "steps", tc.Steps, "optimizer steps in the whole run (with -resume: counted from the start, so a larger value extends the run)")
	fs.Float64Var(&o.lr, "lr", tc.LR, "peak learning rate of Adam")
	fs.IntVar(&o.batch, "batch", tc.BatchSize, "windows of -block characters per batch")
	fs.Uint64Var(&o.seed, "seed", tc.Seed, "seed of the parameter initialisation and of batch sampling")
	fs.IntVar(&o.block, "block", mc.BlockSize, "context length in characters")
	fs.IntVar(&o.embd, "embd", mc.EmbedDim, "width of the residual stream; a multiple of -heads")
	fs.IntVar(&o.heads, "heads", mc.Heads, "attention heads per layer")
	fs.IntVar(&o.layers, "layers", mc.Layers, "transformer blocks")
	fs.BoolVar(&o.tied, "tied", mc.TiedHead, "tie the output head to the token embedding (no separate head weights)")

	fs.IntVar(&o.evalEvery, "eval-every", tc.EvalEvery, "measure validation loss every `N` steps; 0 = only at the end")
	fs.IntVar(&o.evalBatches, "eval-batches", tc.EvalBatches, "batches in the fixed validation set")
	fs.IntVar(&o.warmup, "warmup", tc.WarmupSteps, "linear learning-rate warmup over this many steps; 0 = off")
	fs.BoolVar(&o.cosine, "cosine", tc.CosineDecay, "after warmup, decay the learning rate along a cosine to -min-lr at the last step")
	fs.Float64Var(&o.minLR, "min-lr", tc.MinLR, "floor of the -cosine decay")
	fs.Float64Var(&o.gradClip, "grad-clip", tc.GradClip, "clip the global gradient norm to this; 0 = off")
	fs.Float64Var(&o.weightDecay, "weight-decay", tc.WeightDecay, "AdamW decoupled weight decay on matrices and embeddings; 0 = off")
	fs.StringVar(&o.plot, "plot", "", "write the training and validation loss curves to this SVG `file` when training ends")
	fs.BoolVar(&o.keepBest, "keep-best", false, "also keep the checkpoint with the lowest validation loss so far in the -out file with .best before its extension (minigpt.ckpt → minigpt.best.ckpt)")
	return fs
}

// summary heads -h.
const summary = `Trains a MiniGPT on a text corpus and writes a checkpoint. Everything is
checked before the first step; an existing output file is replaced only
with -force (or when it is the -resume file), anything but a regular file
never. Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves
the checkpoint -out names (full, or weights-only with -weights-only).`

// parseFlags parses and checks args. It returns the options and the set
// of flags given explicitly.
func parseFlags(args []string, stdout io.Writer) (*options, map[string]bool, error) {
	o := new(options)
	fs := newFlagSet(o)
	set, err := cli.Parse(fs, args, summary+"\n\n"+cli.ExitRule, stdout)
	if err != nil {
		return nil, nil, err
	}

	if o.resume != "" {
		for _, name := range fixedByCheckpoint {
			if set[name] {
				return nil, nil, cli.UsageError{Err: fmt.Errorf("-%s cannot be combined with -resume: the checkpoint fixes the model and training settings (of those, only -steps may change)", name)}
			}
		}
		if o.steps < 0 {
			return nil, nil, badValue(fs, "steps", "must be at least 0")
		}
		return o, set, nil
	}

	if o.preset != "" {
		values, ok := presets[o.preset]
		if !ok {
			return nil, nil, badValue(fs, "preset", "the presets are "+strings.Join(presetNames(), ", "))
		}
		for name, v := range values {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					panic(fmt.Sprintf("preset %s: -%s %s: %v", o.preset, name, v, err))
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		ok   bool
		why  string
	}{
		{"steps", o.steps >= 0, "must be at least 0"},
		{"lr", o.lr > 0 && !math.IsInf(o.lr, 0), "must be positive and finite"},
		{"batch", o.batch >= 1 && o.batch <= 1<<16, "must be in [1, 65536]"},
		{"block", o.block >= 1 && o.block <= 1<<16, "must be in [1, 65536]"},
		{"embd", o.embd >= 1 && o.embd <= 1<<16, "must be in [1, 65536]"},
		{"heads", o.heads >= 1 && o.heads <= o.embd, "must be in [1, -embd]"},
		{"heads", o.heads < 1 || o.embd%o.heads == 0, fmt.Sprintf("must divide -embd %d", o.embd)},
		{"layers", o.layers >= 1 && o.layers <= 1<<10, "must be in [1, 1024]"},
		{"warmup", o.warmup >= 0, "must be at least 0"},
		{"min-lr", o.minLR >= 0 && o.minLR <= o.lr, fmt.Sprintf("must be in [0, -lr %v]", o.lr)},
		{"grad-clip", o.gradClip >= 0 && !math.IsInf(o.gradClip, 0), "must be non-negative and finite"},
		{"weight-decay", o.weightDecay >= 0 && !math.IsInf(o.weightDecay, 0), "must be non-negative and finite"},
		{"eval-every", o.evalEvery >= 0, "must be at least 0"},
		{"eval-batches", o.evalBatches >= 1 && o.evalBatches <= 1<<12, "must be in [1, 4096]"},
		// A warmup longer than the run never reaches -lr: the issue's
		// -warmup 99999999 -steps 2 trained at 3e-11 without a word.
		{"warmup", o.warmup <= o.steps, fmt.Sprintf("longer than the run's -steps %d, so the learning rate would never get past %.3g × -lr", o.steps, float64(o.steps)/float64(max(o.warmup, 1)))},
	} {
		if !c.ok {
			return nil, nil, badValue(fs, c.name, c.why)
		}
	}
	return o, set, nil
}

func badValue(fs *flag.FlagSet, name, why string) error { return cli.BadValue(fs, name, why) }

func presetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (o *options) modelConfig(vocabSize int) minigpt.Config {
	return minigpt.Config{VocabSize: vocabSize, BlockSize: o.block, EmbedDim: o.embd, Heads: o.heads, Layers: o.layers, TiedHead: o.tied}
}

// kind is the checkpoint the run writes.
func (o *options) kind() minigpt.CheckpointKind {
	if o.weightsOnly {
		return minigpt.WeightsOnly
	}
	return minigpt.FullCheckpoint
}

func (o *options) trainConfig() minigpt.TrainConfig {
	return minigpt.TrainConfig{
		Steps: o.steps, BatchSize: o.batch, LR: o.lr, Seed: o.seed,
		WarmupSteps: o.warmup, CosineDecay: o.cosine, MinLR: o.minLR,
		GradClip: o.gradClip, WeightDecay: o.weightDecay,
		EvalEvery: o.evalEvery, EvalBatches: o.evalBatches,
	}
}

// maxCorpusBytes bounds what -corpus reads: far more text than a model of
// this kind can use, far less than the machine's memory.
const maxCorpusBytes = 1 << 30

// readCorpus returns the training text (without a leading UTF-8 byte-order
// mark) and a name for messages. It reads only regular files, at most
// maxCorpusBytes.
func readCorpus(path string) (text, name string, err error) {
	if path == "" {
		return minigpt.LanternBay, "the built-in Lantern Bay text", nil
	}
	text, err = cli.ReadFile(path, maxCorpusBytes)
	if err != nil {
		return "", "", fmt.Errorf("-corpus %w", err)
	}
	return text, path, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, set, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	tr, outs, best, corpusName, err := prepare(o, set, stderr)
	if err != nil {
		// Everything before the first step is checking: a refusal here
		// has done nothing, whatever its cause (cli.ExitRule).
		var ue cli.UsageError
		if !errors.As(err, &ue) {
			err = cli.UsageError{Err: err}
		}
		return err
	}

	first := tr.Step()
	rep := newReporter(stderr, tr.Step(), tr.Config().Steps)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err = tr.Run(runCtx, func(p minigpt.Progress) {
		rep.step(p)
		if best != nil && !math.IsNaN(p.ValLoss) {
			if err := best.offer(tr, p.ValLoss); err != nil {
				cancel(err)
			}
		}
	})
	rep.finishLine()
	kind := "full"
	if o.weightsOnly {
		kind = "weights-only"
	}
	var interrupted bool
	switch {
	case err == nil:
	case ctx.Err() != nil:
		interrupted = true
		if tr.Step() == first {
			// Nothing learned: the file at -out (if any) stays as it is.
			return fmt.Errorf("%w before the first step; nothing saved", errInterrupted)
		}
		fmt.Fprintf(stderr, "interrupted: stopped after step %d; saving the %s checkpoint\n", tr.Step(), kind)
	case runCtx.Err() != nil: // keep-best failed: save what was learned, then report
		err = context.Cause(runCtx)
	case errors.Is(err, minigpt.ErrDiverged):
		// The failed step changed nothing: the state is the one after
		// the last good step. Keep it if this run got that far (to
		// generate with, or to look at), and say what was kept.
		// "training diverged: loss NaN in step 2 of 20"
		if tr.Step() == first {
			return fmt.Errorf("%w of %d; nothing saved", err, tr.Config().Steps)
		}
		if serr := outs.out.saveCheckpoint(tr.Checkpoint(o.kind())); serr != nil {
			return fmt.Errorf("%w of %d; saving the last good state failed: %w", err, tr.Config().Steps, serr)
		}
		return fmt.Errorf("%w of %d; saved the last good state, step %d, to %s (%s; resuming it would diverge again: start over with a lower -lr)", err, tr.Config().Steps, tr.Step(), o.out, kind)
	default:
		return err
	}

	if serr := outs.out.saveCheckpoint(tr.Checkpoint(o.kind())); serr != nil {
		return fmt.Errorf("stopped at step %d of %d: %w", tr.Step(), tr.Config().Steps, serr)
	}
	if err != nil && !interrupted {
		return fmt.Errorf("checkpoint saved to %s, but %w", o.out, err)
	}
	val := rep.lastVal
	if rep.lastValStep != tr.Step() {
		val = tr.Evaluate()
	}
	trainLoss, n := rep.meanLoss()
	lossText := "no steps taken"
	if n > 0 {
		lossText = fmt.Sprintf("train loss %.4f (mean of the last %d steps)", trainLoss, n)
	}
	fmt.Fprintf(stderr, "step %d/%d: %s, val loss %.4f, wall time %s; wrote %s (%s)\n",
		tr.Step(), tr.Config().Steps, lossText, val, time.Since(start).Round(time.Millisecond), o.out, kind)
	if outs.plot != nil {
		title := fmt.Sprintf("%s: %s", filepath.Base(corpusName), describeShape(tr))
		trainLosses, valLosses := tr.LossHistory()
		err := outs.plot.save(func(w io.Writer) error {
			return writeLossPlot(w, title, toPoints(trainLosses), toPoints(valLosses))
		})
		if err != nil {
			return fmt.Errorf("checkpoint saved to %s, but the plot failed: %w", o.out, err)
		}
		fmt.Fprintf(stderr, "wrote the loss curves of steps 1 to %d to %s\n", tr.Step(), o.plot)
	}
	if best != nil && best.saved {
		fmt.Fprintf(stderr, "best val loss %.4f at step %d in %s\n", best.bestLoss, best.bestStep, best.out.path)
	}
	if interrupted {
		if o.weightsOnly {
			return fmt.Errorf("%w at step %d of %d; weights saved to %s (weights-only: cannot be resumed)", errInterrupted, tr.Step(), tr.Config().Steps, o.out)
		}
		return fmt.Errorf("%w at step %d of %d; continue with: train -resume %s", errInterrupted, tr.Step(), tr.Config().Steps, o.out)
	}
	return nil
}

// prepare does everything before the first step: it checks the outputs,
// reads the corpus, and builds the trainer (fresh, or resumed).
func prepare(o *options, set map[string]bool, stderr io.Writer) (tr *minigpt.Trainer, outs *outputs, best *bestKeeper, corpusName string, err error) {
	outFromResume := o.resume != "" && !set["out"]
	if outFromResume {
		o.out = o.resume
	}
	if outs, err = planOutputs(o, outFromResume); err != nil {
		return
	}
	var text string
	if text, corpusName, err = readCorpus(o.corpus); err != nil {
		return
	}
	if o.resume != "" {
		if tr, err = resume(o, set, text, corpusName, stderr); err != nil {
			return
		}
		fmt.Fprintf(stderr, "resuming %s at step %d of %d: %s\n", o.resume, tr.Step(), tr.Config().Steps, describe(tr, corpusName))
	} else {
		var d *minigpt.Dataset
		if d, err = minigpt.NewDataset(text, o.block); err != nil {
			err = fmt.Errorf("corpus %s: %w", corpusName, err)
			return
		}
		var m *minigpt.Model
		if m, err = minigpt.NewModel(o.modelConfig(d.Vocab.Size()), o.seed); err != nil {
			return
		}
		if tr, err = minigpt.NewTrainer(m, d, o.trainConfig()); err != nil {
			return
		}
		fmt.Fprintf(stderr, "training %s\n", describe(tr, corpusName))
	}
	if outs.best != nil {
		best = &bestKeeper{out: outs.best, kind: o.kind(), bestLoss: math.Inf(1)}
		if o.resume != "" {
			err = best.recall(tr, o.force, stderr)
		}
	}
	return
}

// toPoints converts a loss history for the plot.
func toPoints(ps []minigpt.LossPoint) []point {
	out := make([]point, len(ps))
	for i, p := range ps {
		out[i] = point{p.Step, p.Loss}
	}
	return out
}

// resume loads the -resume checkpoint and returns its trainer on text.
// A version-2 checkpoint records its text's fingerprint: another text is
// refused unless -force (and then said).
func resume(o *options, set map[string]bool, text, corpusName string, stderr io.Writer) (*minigpt.Trainer, error) {
	c, err := minigpt.LoadCheckpoint(o.resume)
	if err != nil {
		return nil, fmt.Errorf("-resume: %w", err)
	}
	if !c.Full() {
		return nil, fmt.Errorf("%s is a weights-only checkpoint; -resume needs a full one (written without -weights-only)", o.resume)
	}
	if set["steps"] {
		if o.steps < c.Step {
			return nil, cli.UsageError{Err: fmt.Errorf("invalid value \"%d\" for flag -steps: %s is already at step %d", o.steps, o.resume, c.Step)}
		}
		c.Train.Steps = o.steps
	}
	if o.corpus == "" && !o.force {
		// Without -corpus the run continues on Lantern Bay: refuse a
		// checkpoint that was not trained on it rather than switch texts.
		lb, _ := minigpt.NewVocab(minigpt.LanternBay)
		sum := sha256.Sum256([]byte(minigpt.LanternBay))
		if string(lb.Chars()) != string(c.Vocab.Chars()) || (c.CorpusSHA256 != nil && !bytes.Equal(c.CorpusSHA256, sum[:])) {
			return nil, cli.Usagef("-resume %s was not trained on the built-in text; pass the -corpus it was trained on", o.resume)
		}
	}
	d, err := minigpt.NewDatasetWithVocab(text, c.Vocab, c.Model.Config.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("corpus %s with the vocabulary of %s: %w", corpusName, o.resume, err)
	}
	switch sum := d.SHA256(); {
	case c.CorpusSHA256 == nil:
		fmt.Fprintf(stderr, "note: %s records no fingerprint of its training text (format version 1), so the corpus cannot be checked\n", o.resume)
	case !bytes.Equal(c.CorpusSHA256, sum[:]) && !o.force:
		return nil, cli.Usagef("-resume %s was trained on another text than %s (SHA-256 %x…, not %x…); pass the -corpus it was trained on, or -force to continue on this one", o.resume, corpusName, c.CorpusSHA256[:6], sum[:6])
	case !bytes.Equal(c.CorpusSHA256, sum[:]):
		fmt.Fprintf(stderr, "-force: continuing %s on %s, which is not the text it was trained on\n", o.resume, corpusName)
		c.CorpusSHA256 = nil
	}
	return minigpt.ResumeTrainer(c, d)
}

// describe summarises the model and the run in one line.
func describe(tr *minigpt.Trainer, corpusName string) string {
	c, tc := tr.Model().Config, tr.Config()
	head := "untied"
	if c.TiedHead {
		head = "tied"
	}
	s := fmt.Sprintf("%d parameters (vocab %d, block %d, width %d, %d heads, %d layers, %s head) on %s (%d training, %d validation characters); %d steps of batch %d, lr %g",
		tr.Model().NumParams(), c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, head,
		corpusName, len(tr.Dataset().Train), len(tr.Dataset().Val), tc.Steps, tc.BatchSize, tc.LR)
	if tc.WarmupSteps > 0 {
		s += fmt.Sprintf(", warmup %d", tc.WarmupSteps)
	}
	if tc.CosineDecay {
		s += fmt.Sprintf(", cosine to %g", tc.MinLR)
	}
	if tc.GradClip > 0 {
		s += fmt.Sprintf(", clip %g", tc.GradClip)
	}
	if tc.WeightDecay > 0 {
		s += fmt.Sprintf(", weight decay %g", tc.WeightDecay)
	}
	return s
}

// bestPath inserts ".best" before the extension of out.
func bestPath(out string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + ".best" + ext
}

// bestKeeper saves the checkpoint with the lowest validation loss.
type bestKeeper struct {
	out      *output
	kind     minigpt.CheckpointKind
	bestLoss float64
	bestStep int
	saved    bool
}

// recall sets the loss to beat, on a resumed run, from the best checkpoint
// an earlier part of the run left, measured on the same validation
// batches. A file there that is not such a checkpoint is not this run's:
// it is refused, unless -force gives consent to replace it.
func (b *bestKeeper) recall(tr *minigpt.Trainer, force bool, stderr io.Writer) error {
	c, err := minigpt.LoadCheckpoint(b.out.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && c.Model.Config != tr.Model().Config {
		err = fmt.Errorf("its model config %+v differs from the run's", c.Model.Config)
	}
	var judge *minigpt.Trainer
	if err == nil {
		judge, err = minigpt.NewTrainer(c.Model, tr.Dataset(), tr.Config())
	}
	if err != nil {
		if !force {
			return cli.Usagef("%s is not this run's best checkpoint (%v); pass -force to replace it", b.out.label(), err)
		}
		fmt.Fprintf(stderr, "keep-best: -force: will replace %s (%v)\n", b.out.path, err)
		return nil
	}
	b.bestLoss, b.bestStep = judge.Evaluate(), c.Step
	fmt.Fprintf(stderr, "keep-best: %s (step %d) has val loss %.4f to beat\n", b.out.path, c.Step, b.bestLoss)
	return nil
}

// offer saves tr's state if loss is the lowest yet.
func (b *bestKeeper) offer(tr *minigpt.Trainer, loss float64) error {
	if !(loss < b.bestLoss) {
		return nil
	}
	if err := b.out.saveCheckpoint(tr.Checkpoint(b.kind)); err != nil {
		return fmt.Errorf("keep-best: %w", err)
	}
	b.bestLoss, b.bestStep, b.saved = loss, tr.Step(), true
	return nil
}

// reporter prints progress: on a terminal one live line rewritten with
// \r (evaluations stay on screen), otherwise a plain line every
// max(1, steps/20) steps and at every evaluation.
type reporter struct {
	w           io.Writer
	live        bool
	every       int
	firstStep   int // step the run (or resumed part) started at
	lastDraw    time.Time
	drawn       int // length of the live line on screen; 0 = none
	losses      [50]float64
	nLosses     int
	lastVal     float64
	lastValStep int
	stepWidth   int
}

func newReporter(w io.Writer, firstStep, steps int) *reporter {
	return &reporter{
		w: w, live: isTerminal(w), every: max(1, steps/20), firstStep: firstStep,
		lastVal: math.NaN(), lastValStep: -1, stepWidth: len(fmt.Sprint(steps)),
	}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (r *reporter) step(p minigpt.Progress) {
	r.losses[r.nLosses%len(r.losses)] = p.Loss
	r.nLosses++
	evaluated := !math.IsNaN(p.ValLoss)
	if evaluated {
		r.lastVal, r.lastValStep = p.ValLoss, p.Step
	}
	line := fmt.Sprintf("step %*d/%d  loss %.4f", r.stepWidth, p.Step, p.Steps, p.Loss)
	if evaluated {
		line += fmt.Sprintf("  val %.4f", p.ValLoss)
	}
	line += fmt.Sprintf("  lr %.2e", p.LR)
	if secs := p.Elapsed.Seconds(); secs > 0 {
		rate := float64(p.Step-r.firstStep) / secs
		eta := time.Duration(float64(p.Steps-p.Step) / rate * float64(time.Second))
		line += fmt.Sprintf("  %.1f steps/s  ETA %s", rate, eta.Round(time.Second))
	}
	if !r.live {
		if p.Step%r.every == 0 || evaluated || p.Step == p.Steps {
			fmt.Fprintln(r.w, line)
		}
		return
	}
	now := time.Now()
	if !evaluated && p.Step != p.Steps && now.Sub(r.lastDraw) < 100*time.Millisecond {
		return
	}
	r.lastDraw = now
	pad := strings.Repeat(" ", max(0, r.drawn-len(line)))
	if evaluated {
		fmt.Fprintf(r.w, "\r%s%s\n", line, pad)
		r.drawn = 0
		return
	}
	fmt.Fprintf(r.w, "\r%s%s", line, pad)
	r.drawn = len(line)
}

// finishLine ends a live line left on screen.
func (r *reporter) finishLine() {
	if r.drawn > 0 {
		fmt.Fprintln(r.w)
		r.drawn = 0
	}
}

// meanLoss returns the mean training loss of the last (up to) 50 steps and
// how many steps that is.
func (r *reporter) meanLoss() (float64, int) {
	n := min(r.nLosses, len(r.losses))
	if n == 0 {
		return math.NaN(), 0
	}
	sum := 0.0
	for i := r.nLosses - n; i < r.nLosses; i++ { // oldest first
		sum += r.losses[i%len(r.losses)]
	}
	return sum / float64(n), n
}
