package main

// This file holds train's options, its presets and the flags a checkpoint
// fixes.

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/internal/bpe"
)

// options are the command's flags.
type options struct {
	corpus, out, resume, initFrom, preset string
	tokenizer                             string // "char" or "bpe"
	vocabSize                             int    // with bpe: the tokens to learn

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
	progress                     bool
}

// preset is a named set of flag values; flags given explicitly win.
type preset struct {
	name, about string
	values      [][2]string // flag name, value, in the order -h shows them
	notes       []string    // paragraphs -h shows after the values
}

// presets is the one description of every preset: -h text, the list in
// errors and the values applied all come from it.
var presets = []preset{{
	name:  "baby",
	about: "nanoGPT's CPU \"baby GPT\" run on tiny Shakespeare",
	// From nanoGPT's README: block 64, batch 12, 4 layers, 4 heads, width
	// 128, 2000 iterations, lr 1e-3 with 100 warmup steps and cosine decay
	// to 1e-4, gradient clip 1, AdamW weight decay 0.1.
	values: [][2]string{
		{"block", "64"}, {"batch", "12"}, {"layers", "4"}, {"heads", "4"}, {"embd", "128"},
		{"lr", "1e-3"}, {"steps", "2000"}, {"warmup", "100"}, {"cosine", "true"}, {"min-lr", "1e-4"},
		{"grad-clip", "1"}, {"weight-decay", "0.1"}, {"eval-every", "100"}, {"eval-batches", "40"},
	},
}, {
	name:  "shakespeare-char",
	about: "nanoGPT's config/train_shakespeare_char.py, the 10.8M-parameter model its README trains on a GPU",
	// From that file and nanoGPT's train.py defaults: block 256, batch
	// 64, 6 layers, 6 heads, width 384, lr 1e-3, 100 warmup steps,
	// cosine decay to 1e-4 at max_iters 5000, grad_clip 1, weight_decay
	// 0.1, evaluation every 250 steps over eval_iters 200 batches; its
	// model ties the head to the token embedding.
	values: [][2]string{
		{"block", "256"}, {"batch", "64"}, {"layers", "6"}, {"heads", "6"}, {"embd", "384"}, {"tied", "true"},
		{"lr", "1e-3"}, {"steps", "5000"}, {"warmup", "100"}, {"cosine", "true"}, {"min-lr", "1e-4"},
		{"grad-clip", "1"}, {"weight-decay", "0.1"}, {"eval-every", "250"}, {"eval-batches", "200"},
	},
	notes: []string{
		"Not as nanoGPT: no dropout (nanoGPT's is 0.2), ReLU instead of GELU, biases in the feed-forward " +
			"layers and LayerNorms (nanoGPT has none anywhere; neither has them in attention), Adam's beta2 " +
			"0.999 instead of 0.99, every weight initialised N(0, 0.02) (nanoGPT scales the residual " +
			"projections down), float64, and a fixed validation set instead of fresh random batches.",
		"A step at batch 64 is 16 times the work of the batch-4 step bench/compare.sh times, and the " +
			"run needs about 6 GiB of memory; for a quick look: -batch 8 -steps 500 -eval-every 100 -eval-batches 20.",
	},
}}

func findPreset(name string) (preset, bool) {
	for _, p := range presets {
		if p.name == name {
			return p, true
		}
	}
	return preset{}, false
}

// presetHelp is the -preset flag's usage: every preset with its values.
func presetHelp() string {
	var b strings.Builder
	b.WriteString("start from the flag values of this `preset`; explicit flags override it.")
	for _, p := range presets {
		fmt.Fprintf(&b, "\n%s (%s):", p.name, p.about)
		for _, kv := range p.values {
			if kv[1] == "true" {
				fmt.Fprintf(&b, " -%s", kv[0])
			} else {
				fmt.Fprintf(&b, " -%s %s", kv[0], kv[1])
			}
		}
		for _, line := range p.notes {
			fmt.Fprintf(&b, "\n  %s", line)
		}
	}
	return b.String()
}

func presetNames() []string {
	var names []string
	for _, p := range presets {
		names = append(names, p.name)
	}
	return names
}

// architectureFlags fix the model's shape: a -resume or -init-from run
// takes them from its checkpoint.
var architectureFlags = []string{"block", "embd", "heads", "layers", "tied"}

// fixedByCheckpoint are the flags a -resume run takes from the checkpoint.
// The others may be given: -steps (to extend the run), -corpus (the text
// it was trained on), the outputs (-out, -weights-only, -plot, -keep-best)
// and -force.
var fixedByCheckpoint = append(slices.Clone(architectureFlags),
	"batch", "seed", "lr", "warmup", "cosine", "min-lr", "grad-clip", "weight-decay",
	"eval-every", "eval-batches", "preset", "init-from", "tokenizer", "vocab-size")

// Tokenizers -tokenizer takes.
const (
	tokenizerChar = "char" // the text's characters (minigpt.NewVocab)
	tokenizerBPE  = "bpe"  // byte-level BPE learnt from the text (minigpt.NewBPEVocab)
)

// defaultVocabSize is -vocab-size's default: 256 merges over the bytes.
const defaultVocabSize = 512

func newFlagSet(o *options) *flag.FlagSet {
	mc, tc := minigpt.ConfigFor(lanternBayVocab()), minigpt.DefaultTrainConfig()
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.StringVar(&o.corpus, "corpus", "", "train on this UTF-8 text `file` (default: the built-in Lantern Bay text); the first 90% trains, the rest validates")
	fs.StringVar(&o.out, "out", "minigpt.ckpt", "write the checkpoint to this `file` (a -resume run without -out rewrites its -resume file)")
	fs.StringVar(&o.resume, "resume", "", "continue the full checkpoint in this `file` exactly where it stopped; the model and training settings come from it: give only -steps (to extend), the same -corpus, outputs (-out, -weights-only, -plot, -keep-best), -force and -progress")
	fs.BoolVar(&o.force, "force", false, "replace existing -out, -plot and -keep-best files, and -resume on a corpus other than the checkpoint's")
	fs.StringVar(&o.initFrom, "init-from", "", "fine-tune: start from the weights of this checkpoint `file` (full or weights-only) with a fresh optimizer at step 0; the model's shape and tokens come from it (shape flags must match or be omitted) and, for a character model, every character of -corpus must be in its vocabulary")
	fs.BoolVar(&o.weightsOnly, "weights-only", false, "write a weights-only checkpoint (config, vocabulary, step, parameters: enough to generate or fine-tune, not to resume)")
	fs.StringVar(&o.preset, "preset", "", presetHelp())
	fs.StringVar(&o.tokenizer, "tokenizer", tokenizerChar, "the tokens the model reads: char (the text's characters) or bpe (byte-level BPE merges learnt from the training part)")
	fs.IntVar(&o.vocabSize, "vocab-size", defaultVocabSize, fmt.Sprintf("with -tokenizer bpe, the tokens to learn: the 256 bytes and one a merge, %d to %d", bpe.NumBytes, bpe.MaxVocabSize))

	fs.IntVar(&o.steps, "steps", tc.Steps, fmt.Sprintf("optimizer steps in the whole run, at most %d (with -resume: counted from the start, to extend)", cli.MaxSteps))
	fs.Float64Var(&o.lr, "lr", tc.LR, "peak learning rate of Adam")
	fs.IntVar(&o.batch, "batch", tc.BatchSize, "windows of -block tokens per batch")
	fs.Uint64Var(&o.seed, "seed", tc.Seed, "seed of the parameter initialisation and of batch sampling")
	fs.IntVar(&o.block, "block", mc.BlockSize, "context length in tokens (characters, or BPE tokens with -tokenizer bpe)")
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
	fs.BoolVar(&o.progress, "progress", false, cli.ProgressUsage+"; training itself always reports")
	fs.BoolVar(&o.keepBest, "keep-best", false, "also keep the checkpoint with the lowest validation loss so far in the -out file with .best before its extension (minigpt.ckpt → minigpt.best.ckpt)")
	return fs
}

// parseFlags parses and checks args. It returns the options and the set
// of flags given explicitly.
func parseFlags(args []string, stdout io.Writer) (*options, map[string]bool, error) {
	o := new(options)
	fs := newFlagSet(o)
	set, err := command.Parse(fs, args, stdout)
	if err != nil {
		return nil, nil, err
	}
	// Checked before anything else, so that no later sum overflows.
	if o.steps > cli.MaxSteps {
		return nil, nil, cli.BadValue(fs, "steps", fmt.Sprintf("at most %d (2^30): a run must be able to finish, and 2^30 steps of the default model take months", cli.MaxSteps))
	}
	if o.resume != "" {
		for _, name := range fixedByCheckpoint {
			if set[name] {
				return nil, nil, cli.Usagef("-%s cannot be combined with -resume: the checkpoint fixes the model and training settings (of those, only -steps may change)", name)
			}
		}
		return o, set, checkValues(fs, o, set, []string{"steps"})
	}
	if err := checkTokenizer(fs, o, set); err != nil {
		return nil, nil, err
	}
	if o.preset != "" {
		p, ok := findPreset(o.preset)
		if !ok {
			return nil, nil, cli.BadValue(fs, "preset", "the presets are "+strings.Join(presetNames(), ", "))
		}
		for _, kv := range p.values {
			if !set[kv[0]] {
				if err := fs.Set(kv[0], kv[1]); err != nil {
					panic(fmt.Sprintf("preset %s: -%s %s: %v", p.name, kv[0], kv[1], err))
				}
			}
		}
	}
	checked := append(slices.Clone(architectureFlags), trainFlags...)
	if o.initFrom != "" {
		checked = trainFlags // the checkpoint's shape is checked when it is loaded
	}
	if err := checkValues(fs, o, set, checked); err != nil {
		return nil, nil, err
	}
	// Valid for the library (a resumed run may extend Steps past it), but
	// a new run whose warmup outlasts it never reaches -lr: the issue's
	// -warmup 99999999 -steps 2 trained at 3e-11 without a word.
	if o.warmup > o.steps {
		why := fmt.Sprintf("longer than the run's -steps %d, so the learning rate would never get past %.3g × -lr", o.steps, float64(o.steps)/float64(o.warmup))
		if !set["warmup"] {
			why += fmt.Sprintf(" (the value comes from -preset %s: give -warmup too)", o.preset)
		}
		return nil, nil, cli.BadValue(fs, "warmup", why)
	}
	return o, set, nil
}

// checkTokenizer checks -tokenizer and -vocab-size: a known tokenizer, a
// size only for BPE and in its range, and neither with a checkpoint to
// start from, whose vocabulary is the model's.
func checkTokenizer(fs *flag.FlagSet, o *options, set map[string]bool) error {
	switch {
	case o.tokenizer != tokenizerChar && o.tokenizer != tokenizerBPE:
		return cli.BadValue(fs, "tokenizer", "want char or bpe")
	case o.initFrom != "" && (set["tokenizer"] || set["vocab-size"]):
		name := "tokenizer"
		if !set["tokenizer"] {
			name = "vocab-size"
		}
		return cli.Usagef("-%s cannot be combined with -init-from: the model reads the tokens of its checkpoint's vocabulary", name)
	case set["vocab-size"] && o.tokenizer != tokenizerBPE:
		return cli.Usagef("-vocab-size is the size of a BPE vocabulary: give -tokenizer bpe too (a character model's vocabulary is its text's characters)")
	case o.vocabSize < bpe.NumBytes || o.vocabSize > bpe.MaxVocabSize:
		return cli.BadValue(fs, "vocab-size", fmt.Sprintf("want %d (the bytes alone) to %d", bpe.NumBytes, bpe.MaxVocabSize))
	}
	return nil
}

// trainFlags set the TrainConfig, in the order their checks are blamed.
var trainFlags = []string{"steps", "lr", "batch", "seed", "warmup", "cosine", "min-lr", "grad-clip", "weight-decay", "eval-every", "eval-batches"}

// checkValues checks the flags named (in order) with the library's own
// Config.Validate and TrainConfig.Validate, so that the command and the
// library cannot disagree on what is valid. The library reports what is
// wrong; the flag to blame is found by applying the flags one by one to
// the defaults: it is the first flag from which on every prefix fails
// (so -heads 3 is blamed for -embd 64, -min-lr for a -lr below it, and
// -embd 30 -heads 3 is fine although -embd 30 alone is not).
func checkValues(fs *flag.FlagSet, o *options, set map[string]bool, names []string) error {
	validate := func(upto int) error {
		c, tc := minigpt.ConfigFor(lanternBayVocab()), minigpt.DefaultTrainConfig()
		c.VocabSize = 2 // the smallest vocabulary: the corpus decides later
		for _, name := range names[:upto] {
			o.apply(name, &c, &tc)
		}
		if err := c.Validate(); err != nil {
			return err
		}
		return tc.Validate()
	}
	final := validate(len(names))
	if final == nil {
		return nil
	}
	blame := len(names) - 1
	for blame > 0 && validate(blame) != nil {
		blame--
	}
	return cli.BadValue(fs, names[blame], final.Error())
}

// apply sets the field of c or tc that flag name controls to o's value.
func (o *options) apply(name string, c *minigpt.Config, tc *minigpt.TrainConfig) {
	switch name {
	case "block":
		c.BlockSize = o.block
	case "embd":
		c.EmbedDim = o.embd
	case "heads":
		c.Heads = o.heads
	case "layers":
		c.Layers = o.layers
	case "tied":
		c.TiedHead = o.tied
	case "steps":
		tc.Steps = o.steps
	case "lr":
		tc.LR = o.lr
	case "batch":
		tc.BatchSize = o.batch
	case "seed":
		tc.Seed = o.seed
	case "warmup":
		tc.WarmupSteps = o.warmup
	case "cosine":
		tc.CosineDecay = o.cosine
	case "min-lr":
		tc.MinLR = o.minLR
	case "grad-clip":
		tc.GradClip = o.gradClip
	case "weight-decay":
		tc.WeightDecay = o.weightDecay
	case "eval-every":
		tc.EvalEvery = o.evalEvery
	case "eval-batches":
		tc.EvalBatches = o.evalBatches
	default:
		panic("apply: no field for -" + name)
	}
}

// modelConfig is the model the flags describe, for a vocabulary.
func (o *options) modelConfig(vocab *minigpt.Vocab) minigpt.Config {
	c := minigpt.ConfigFor(vocab)
	for _, name := range architectureFlags {
		o.apply(name, &c, nil)
	}
	return c
}

// trainConfig is the training run the flags describe.
func (o *options) trainConfig() minigpt.TrainConfig {
	tc := minigpt.DefaultTrainConfig()
	for _, name := range trainFlags {
		o.apply(name, nil, &tc)
	}
	return tc
}

// snapshot is the checkpoint the run writes of tr: full, or with
// -weights-only the weights alone.
func (o *options) snapshot(tr *minigpt.Trainer) *minigpt.Checkpoint {
	if o.weightsOnly {
		return tr.Checkpoint().WeightsOnly()
	}
	return tr.Checkpoint()
}

// lanternBayVocab is the built-in text's vocabulary, the presets' default.
func lanternBayVocab() *minigpt.Vocab {
	v, err := minigpt.NewVocab(minigpt.LanternBay)
	if err != nil {
		panic("the built-in text has no vocabulary: " + err.Error()) // it is a constant
	}
	return v
}
