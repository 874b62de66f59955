// Command train trains a MiniGPT on a text corpus and writes a checkpoint
// (format: docs/checkpoint-format.md).
//
//	go run ./cmd/train                                   # the default run: Lantern Bay, 1200 steps
//	go run ./cmd/train -preset baby -corpus input.txt -out shakespeare.ckpt
//	go run ./cmd/train -resume minigpt.ckpt -steps 2400  # continue, exactly
//	go run ./cmd/train -init-from models/lanternbay.ckpt -corpus mine.txt -steps 200 -out tuned.ckpt
//
// Progress goes to standard error: a live line on a terminal, otherwise a
// log line every 1/20 of the run and at every evaluation. SIGINT or
// SIGTERM stops at the end of the current step and writes the checkpoint
// (full, or weights-only with -weights-only), so nothing learned is lost;
// a second signal aborts without saving.
//
// Everything is checked before the first step (flags, the corpus, the
// -resume or -init-from file, every output): an existing file is replaced
// only with -force, or when it is the -resume file the run continues; a
// device, FIFO, socket, symbolic link or directory never.
//
// Exit status: 0 done; 2 refused before any work, nothing written; 1
// failed after training began (divergence, a failed save); 130
// interrupted (the checkpoint written if a step was taken). -h lists the
// flags by purpose, and -version says what the binary was built from.
//
// The files: flags.go (flags, presets and their checks), usage.go (-h),
// main.go (the run), outputs.go (what the run writes), report.go
// (progress), plot.go (the -plot SVG).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, set, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	po := cli.ProgressTo(stderr, o.progress)
	tr, outs, best, corpusName, err := prepare(o, set, po, stderr)
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
	case errors.Is(err, minigpt.ErrNonFinite):
		// The failed step changed nothing: the state is the one after
		// the last good step. Keep it if this run got that far (to
		// generate with, or to look at), and say what was kept:
		// "training diverged: loss NaN in step 2 of 20".
		if tr.Step() == first {
			return fmt.Errorf("%w of %d; nothing saved", err, tr.Config().Steps)
		}
		if serr := outs.out.saveCheckpoint(o.snapshot(tr)); serr != nil {
			return fmt.Errorf("%w of %d; saving the last good state failed: %w", err, tr.Config().Steps, serr)
		}
		return fmt.Errorf("%w of %d; saved the last good state, step %d, to %s (%s; resuming it would diverge again: start over with a lower -lr)", err, tr.Config().Steps, tr.Step(), o.out, kind)
	default:
		return err
	}

	if serr := outs.out.saveCheckpoint(o.snapshot(tr)); serr != nil {
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
		fmt.Fprintf(stderr, "best val loss %.4f at step %d in %s\n", best.bestLoss, best.bestStep, best.out.Path)
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
// reads the corpus, and builds the trainer.
func prepare(o *options, set map[string]bool, po cli.ProgressOut, stderr io.Writer) (tr *minigpt.Trainer, outs *outputs, best *bestKeeper, corpusName string, err error) {
	outFromResume := o.resume != "" && !set["out"]
	if outFromResume {
		o.out = o.resume
	}
	if outs, err = planOutputs(o, outFromResume); err != nil {
		return
	}
	for _, f := range []*output{outs.out, outs.best} {
		if f != nil {
			f.po = po
		}
	}
	var text string
	if text, corpusName, err = readCorpus(o.corpus, po); err != nil {
		return
	}
	var data *minigpt.Dataset
	if tr, data, err = newTrainer(o, set, text, corpusName, po, stderr); err != nil {
		return
	}
	if outs.best != nil {
		best = &bestKeeper{out: outs.best, snapshot: o.snapshot, bestLoss: math.Inf(1)}
		if o.resume != "" {
			err = best.recall(tr, data, o.force, stderr)
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

// newTrainer builds the run's trainer: resumed (-resume), fine-tuning a
// checkpoint's weights (-init-from) or a fresh model, and announces it.
func newTrainer(o *options, set map[string]bool, text, corpusName string, po cli.ProgressOut, stderr io.Writer) (*minigpt.Trainer, *minigpt.Dataset, error) {
	switch {
	case o.resume != "":
		tr, d, err := resume(o, set, text, corpusName, po, stderr)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(stderr, "resuming %s at step %d of %d: %s\n", o.resume, tr.Step(), tr.Config().Steps, describe(tr, d, corpusName))
		return tr, d, nil
	case o.initFrom != "":
		tr, d, err := initFrom(o, set, text, corpusName, po)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(stderr, "fine-tuning %s: %s\n", o.initFrom, describe(tr, d, corpusName))
		return tr, d, nil
	}
	d, err := newDataset(text, nil, o.block, corpusName, po)
	if err != nil {
		return nil, nil, fmt.Errorf("corpus %s: %w", corpusName, err)
	}
	m, err := minigpt.NewModel(o.modelConfig(d.Vocab), o.seed)
	if err != nil {
		return nil, nil, cli.UsageError{Err: err} // the flags passed the checks with a 2-character vocabulary; this one is larger
	}
	tr, err := minigpt.NewTrainer(m, d, o.trainConfig())
	if err != nil {
		return nil, nil, cli.UsageError{Err: err}
	}
	fmt.Fprintf(stderr, "training %s\n", describe(tr, d, corpusName))
	return tr, d, nil
}

// initFrom loads the -init-from checkpoint and returns a trainer that
// fine-tunes its model on text: the checkpoint's weights, shape and
// vocabulary; the flags' training settings; a fresh optimizer at step 0.
func initFrom(o *options, set map[string]bool, text, corpusName string, po cli.ProgressOut) (*minigpt.Trainer, *minigpt.Dataset, error) {
	c, err := cli.LoadCheckpoint("init-from", o.initFrom, po)
	if err != nil {
		return nil, nil, err
	}
	if want := o.modelConfig(c.Vocab); set["block"] || set["embd"] || set["heads"] || set["layers"] || set["tied"] {
		got := c.Model.Config()
		for _, m := range []struct {
			flag      string
			flagV, ck any
		}{
			{"block", want.BlockSize, got.BlockSize}, {"embd", want.EmbedDim, got.EmbedDim},
			{"heads", want.Heads, got.Heads}, {"layers", want.Layers, got.Layers}, {"tied", want.TiedHead, got.TiedHead},
		} {
			if set[m.flag] && m.flagV != m.ck {
				return nil, nil, cli.Usagef("-%s %v does not match -init-from %s, whose model has %v; omit the flag (the shape comes from the checkpoint)", m.flag, m.flagV, o.initFrom, m.ck)
			}
		}
	}
	d, err := newDataset(text, c.Vocab, c.Model.Config().BlockSize, corpusName, po)
	if err != nil {
		return nil, nil, fmt.Errorf("corpus %s with the vocabulary of %s: %w", corpusName, o.initFrom, err)
	}
	tr, err := minigpt.NewTrainer(c.Model, d, o.trainConfig())
	if err != nil {
		return nil, nil, cli.UsageError{Err: err}
	}
	return tr, d, nil
}

// resume loads the -resume checkpoint and returns its trainer on text.
// A version-2 checkpoint records its text's fingerprint: another text is
// refused unless -force (and then said).
func resume(o *options, set map[string]bool, text, corpusName string, po cli.ProgressOut, stderr io.Writer) (*minigpt.Trainer, *minigpt.Dataset, error) {
	c, err := cli.LoadCheckpoint("resume", o.resume, po)
	if err != nil {
		return nil, nil, err
	}
	if c.Train == nil {
		return nil, nil, fmt.Errorf("%s is a weights-only checkpoint; -resume needs a full one (written without -weights-only)", o.resume)
	}
	if set["steps"] {
		if o.steps < c.Step {
			return nil, nil, cli.Usagef("invalid value \"%d\" for flag -steps: %s is already at step %d", o.steps, o.resume, c.Step)
		}
		c.Train.Steps = o.steps
	}
	if o.corpus == "" && !o.force {
		// Without -corpus the run continues on Lantern Bay: refuse a
		// checkpoint that was not trained on it rather than switch texts.
		lb, _ := minigpt.NewVocab(minigpt.LanternBay)
		sum := sha256.Sum256([]byte(minigpt.LanternBay))
		if !slices.Equal(lb.Chars(), c.Vocab.Chars()) || (c.CorpusSHA256 != nil && !bytes.Equal(c.CorpusSHA256, sum[:])) {
			return nil, nil, cli.Usagef("-resume %s was not trained on the built-in text; pass the -corpus it was trained on", o.resume)
		}
	}
	d, err := newDataset(text, c.Vocab, c.Model.Config().BlockSize, corpusName, po)
	if err != nil {
		return nil, nil, fmt.Errorf("corpus %s with the vocabulary of %s: %w", corpusName, o.resume, err)
	}
	switch sum := sha256.Sum256([]byte(text)); { // the fingerprint: the text's SHA-256
	case c.CorpusSHA256 == nil:
		fmt.Fprintf(stderr, "note: %s records no fingerprint of its training text (format version 1), so the corpus cannot be checked\n", o.resume)
	case !bytes.Equal(c.CorpusSHA256, sum[:]) && !o.force:
		return nil, nil, cli.Usagef("-resume %s was trained on another text than %s (SHA-256 %x…, not %x…); pass the -corpus it was trained on, or -force to continue on this one", o.resume, corpusName, c.CorpusSHA256[:6], sum[:6])
	case !bytes.Equal(c.CorpusSHA256, sum[:]):
		fmt.Fprintf(stderr, "-force: continuing %s on %s, which is not the text it was trained on\n", o.resume, corpusName)
		c.CorpusSHA256 = nil
	}
	tr, err := minigpt.ResumeTrainer(c, d)
	return tr, d, err
}
