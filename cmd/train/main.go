// Command train trains a MiniGPT on a text corpus and writes a checkpoint
// (format: CHECKPOINT.md at the repository root).
//
//	go run ./cmd/train                                   # the seed run: Lantern Bay, 1200 steps
//	go run ./cmd/train -preset baby -corpus input.txt -out shakespeare.ckpt
//	go run ./cmd/train -resume minigpt.ckpt -steps 2400  # continue, exactly
//	go run ./cmd/train -init-from models/lanternbay.ckpt -corpus mine.txt -steps 200 -out tuned.ckpt
//
// Progress goes to standard error: a live line on a terminal, otherwise a
// log line every 1/20 of the run and at every evaluation. SIGINT or
// SIGTERM stops at the end of the current step and writes the checkpoint,
// so nothing learned is lost; a second signal aborts without saving.
//
// Exit status: 0 done, 1 runtime error (unreadable corpus or checkpoint,
// divergence, failed save), 2 bad flags, 130 interrupted (checkpoint
// written).
//
// The files: flags.go (flags, presets and their checks), main.go (the
// run), outputs.go (what the run writes), report.go (progress), plot.go
// (the -plot SVG).
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
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
		return "", "", fmt.Errorf("corpus %w", err)
	}
	return text, path, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, set, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if o.resume != "" && !set["out"] {
		o.out = o.resume
	}
	if err := checkOutputs(o); err != nil {
		return err
	}
	text, corpusName, err := readCorpus(o.corpus)
	if err != nil {
		return err
	}

	tr, err := newTrainer(o, set, text, corpusName, stderr)
	if err != nil {
		return err
	}

	best := bestKeeper{path: bestPath(o.out), kind: o.kind(), bestLoss: math.Inf(1)}
	if o.keepBest && o.resume != "" {
		best.recall(tr, stderr)
	}
	rep := newReporter(stderr, tr.Step(), tr.Config().Steps)
	var trainCurve, valCurve []point
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err = tr.Run(runCtx, func(p minigpt.Progress) {
		rep.step(p)
		if o.plot != "" {
			trainCurve = append(trainCurve, point{p.Step, p.Loss})
			if !math.IsNaN(p.ValLoss) {
				valCurve = append(valCurve, point{p.Step, p.ValLoss})
			}
		}
		if o.keepBest && !math.IsNaN(p.ValLoss) {
			if err := best.offer(tr, p.ValLoss); err != nil {
				cancel(err)
			}
		}
	})
	rep.finishLine()
	var interrupted bool
	switch {
	case err == nil:
	case ctx.Err() != nil:
		interrupted = true
		fmt.Fprintf(stderr, "interrupted: stopped after step %d; saving the checkpoint\n", tr.Step())
	case runCtx.Err() != nil: // keep-best failed: save what was learned, then report
		err = context.Cause(runCtx)
	default:
		return err // divergence: the state is the one before the bad step, but resuming would repeat it
	}

	kind := "full"
	if o.weightsOnly {
		kind = "weights-only"
	}
	if serr := minigpt.SaveCheckpoint(o.out, tr.Checkpoint(o.kind())); serr != nil {
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
	if o.plot != "" {
		title := fmt.Sprintf("%s: %s", filepath.Base(corpusName), describeShape(tr))
		if err := writePlotFile(o.plot, title, trainCurve, valCurve); err != nil {
			return fmt.Errorf("-plot: %w", err)
		}
		fmt.Fprintf(stderr, "wrote the loss curves to %s\n", o.plot)
	}
	if o.keepBest && best.saved {
		fmt.Fprintf(stderr, "best val loss %.4f at step %d in %s\n", best.bestLoss, best.bestStep, best.path)
	}
	if interrupted {
		if o.weightsOnly {
			return fmt.Errorf("%w at step %d of %d; weights saved to %s (weights-only: cannot be resumed)", errInterrupted, tr.Step(), tr.Config().Steps, o.out)
		}
		return fmt.Errorf("%w at step %d of %d; continue with: train -resume %s", errInterrupted, tr.Step(), tr.Config().Steps, o.out)
	}
	return nil
}

// newTrainer builds the run's trainer: resumed (-resume), fine-tuning a
// checkpoint's weights (-init-from) or a fresh model, and announces it.
func newTrainer(o *options, set map[string]bool, text, corpusName string, stderr io.Writer) (*minigpt.Trainer, error) {
	switch {
	case o.resume != "":
		tr, err := resume(o, set, text, corpusName)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "resuming %s at step %d of %d: %s\n", o.resume, tr.Step(), tr.Config().Steps, describe(tr, corpusName))
		return tr, nil
	case o.initFrom != "":
		tr, err := initFrom(o, set, text, corpusName)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "fine-tuning %s: %s\n", o.initFrom, describe(tr, corpusName))
		return tr, nil
	}
	d, err := minigpt.NewDataset(text, o.block)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", corpusName, err)
	}
	m, err := minigpt.NewModel(o.modelConfig(d.Vocab), o.seed)
	if err != nil {
		return nil, cli.UsageError{Err: err} // the flags passed the checks with a 2-character vocabulary; this one is larger
	}
	tr, err := minigpt.NewTrainer(m, d, o.trainConfig())
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	fmt.Fprintf(stderr, "training %s\n", describe(tr, corpusName))
	return tr, nil
}

// initFrom loads the -init-from checkpoint and returns a trainer that
// fine-tunes its model on text: the checkpoint's weights, shape and
// vocabulary; the flags' training settings; a fresh optimizer at step 0.
func initFrom(o *options, set map[string]bool, text, corpusName string) (*minigpt.Trainer, error) {
	c, err := minigpt.LoadCheckpoint(o.initFrom)
	if err != nil {
		return nil, fmt.Errorf("-init-from: %w", err)
	}
	if want := o.modelConfig(c.Vocab); set["block"] || set["embd"] || set["heads"] || set["layers"] || set["tied"] {
		got := c.Model.Config
		for _, m := range []struct {
			flag      string
			flagV, ck any
		}{
			{"block", want.BlockSize, got.BlockSize}, {"embd", want.EmbedDim, got.EmbedDim},
			{"heads", want.Heads, got.Heads}, {"layers", want.Layers, got.Layers}, {"tied", want.TiedHead, got.TiedHead},
		} {
			if set[m.flag] && m.flagV != m.ck {
				return nil, cli.Usagef("-%s %v does not match -init-from %s, whose model has %v; omit the flag (the shape comes from the checkpoint)", m.flag, m.flagV, o.initFrom, m.ck)
			}
		}
	}
	d, err := minigpt.NewDatasetWithVocab(text, c.Vocab, c.Model.Config.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("corpus %s with the vocabulary of %s: %w", corpusName, o.initFrom, err)
	}
	tr, err := minigpt.NewTrainer(c.Model, d, o.trainConfig())
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	return tr, nil
}

// resume loads the -resume checkpoint and returns its trainer on text.
func resume(o *options, set map[string]bool, text, corpusName string) (*minigpt.Trainer, error) {
	c, err := minigpt.LoadCheckpoint(o.resume)
	if err != nil {
		return nil, err
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
	if o.corpus == "" {
		// Without -corpus the run continues on Lantern Bay: refuse a
		// checkpoint that was not trained on it rather than switch texts.
		lb, _ := minigpt.NewVocab(minigpt.LanternBay)
		if !slices.Equal(lb.Chars(), c.Vocab.Chars()) {
			return nil, cli.UsageError{Err: fmt.Errorf("-resume %s was not trained on the built-in text (its vocabulary differs); pass the -corpus it was trained on", o.resume)}
		}
	}
	d, err := minigpt.NewDatasetWithVocab(text, c.Vocab, c.Model.Config.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("corpus %s with the vocabulary of %s: %w", corpusName, o.resume, err)
	}
	return minigpt.ResumeTrainer(c, d)
}
