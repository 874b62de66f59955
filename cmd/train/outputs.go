package main

// This file holds train's output files: planned before training, written
// whole, never over a file not asked for, and the best checkpoint kept.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// output is a file the run writes (the checkpoint, the -keep-best copy,
// the plot) and whether it may replace what is there. Consent comes from
// -force, from being the -resume source (a resumed run continues its own
// file), or from this run having written the file already. Without it an
// existing file is refused up front and, should one appear while
// training, at the save itself: the run never replaces a file the user
// did not ask it to.
type output struct {
	cli.Output
	po cli.ProgressOut // where saving a large checkpoint shows progress
}

// newOutput is the output of flag -flag at path.
func newOutput(flag, path string, replace bool) *output {
	return &output{Output: cli.Output{Flag: flag, Path: path, Replace: replace,
		Exists: "the file exists and is not this run's output; pass -force to replace it, or choose another file"}}
}

// save writes the file atomically with the consent it has; once
// written, the file is this run's own and may be replaced.
func (f *output) save(write func(io.Writer) error) error {
	if err := f.Save(write); err != nil {
		return err
	}
	f.Replace = true
	return nil
}

// saveCheckpoint saves c (see save), showing the progress of a large
// one.
func (f *output) saveCheckpoint(c *minigpt.Checkpoint) error {
	slabs := int64(1)
	if c.Train != nil {
		slabs = 3 // the weights and Adam's two moments
	}
	size := slabs*8*int64(c.Model.Config().NumParams()) + 4<<10
	p := f.po.StartLarge("writing "+f.Path, size)
	defer p.Done()
	return f.save(func(w io.Writer) error {
		if err := minigpt.WriteCheckpoint(p.Writer(w), c); err != nil {
			return err
		}
		p.Set(size)
		return nil
	})
}

// outputs are the files a run writes; plot and best are nil when off.
type outputs struct {
	out, plot, best *output
}

// planOutputs checks, before any work, every path the run will read or
// write: the -resume file is a regular file, no two flags name the same
// file, no input is overwritten, and each output can be created and may
// replace what is there (see output). A run must never be lost at its
// final save, nor destroy a file at it.
func planOutputs(o *options, outFromResume bool) (*outputs, error) {
	if o.resume != "" {
		f, err := cli.OpenRegular(o.resume)
		if err != nil {
			return nil, cli.Usagef("-resume %w", err)
		}
		f.Close()
	}
	if o.out == "" {
		return nil, cli.Usagef("-out is empty: give the file to write the checkpoint to")
	}
	outs := &outputs{out: newOutput("out", o.out, o.force)}
	if outFromResume {
		outs.out.Note = "(the -resume file, as -out is not given)"
	}
	if o.resume != "" && cli.SamePath(o.out, o.resume) {
		outs.out.Replace = true // a resumed run continues its own file
	}
	if o.plot != "" {
		outs.plot = newOutput("plot", o.plot, o.force)
	}
	if o.keepBest {
		// On a resumed run the .best file is normally the earlier part's;
		// bestKeeper.recall confirms it before anything is written.
		outs.best = newOutput("keep-best", bestPath(o.out), o.force || o.resume != "")
		outs.best.Note = "(the best checkpoint beside -out)"
	}

	type file struct{ flag, path string }
	files := []file{{"out", o.out}, {"plot", o.plot}, {"corpus", o.corpus}, {"resume", o.resume}, {"init-from", o.initFrom}}
	if outs.best != nil {
		files = append(files, file{"keep-best", outs.best.Path})
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if a.path == "" || b.path == "" || (a.flag == "out" && b.flag == "resume") {
				continue
			}
			if cli.SamePath(a.path, b.path) {
				return nil, cli.Usagef("-%s and -%s both name %s: one would overwrite the other", a.flag, b.flag, a.path)
			}
		}
	}
	if o.resume != "" && o.weightsOnly && cli.SamePath(o.out, o.resume) {
		return nil, cli.Usagef("-weights-only would replace the full checkpoint %s; give -out another file", o.resume)
	}
	for _, f := range []*output{outs.out, outs.plot, outs.best} {
		if f == nil {
			continue
		}
		if err := f.Check(); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// bestPath inserts ".best" before the extension of out.
func bestPath(out string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + ".best" + ext
}

// bestKeeper saves the checkpoint with the lowest validation loss.
type bestKeeper struct {
	out      *output
	snapshot func(*minigpt.Trainer) *minigpt.Checkpoint
	bestLoss float64
	bestStep int
	saved    bool
}

// recall sets the loss to beat, on a resumed run, from the best checkpoint
// an earlier part of the run left, measured on the same validation
// batches. A file there that is not such a checkpoint is not this run's:
// it is refused, unless -force gives consent to replace it.
func (b *bestKeeper) recall(tr *minigpt.Trainer, data *minigpt.Dataset, force bool, stderr io.Writer) error {
	c, err := minigpt.LoadCheckpoint(b.out.Path)
	if errors.Is(err, fs.ErrNotExist) {
		b.out.Replace = force // nothing of the run's there: one that appears is not ours
		return nil
	}
	if err == nil && c.Model.Config() != tr.Model().Config() {
		err = fmt.Errorf("its model config %+v differs from the run's", c.Model.Config())
	}
	var judge *minigpt.Trainer
	if err == nil {
		judge, err = minigpt.NewTrainer(c.Model, data, tr.Config())
	}
	if err != nil {
		if !force {
			return cli.Usagef("%s is not this run's best checkpoint (%v); pass -force to replace it", b.out.Label(), err)
		}
		fmt.Fprintf(stderr, "keep-best: -force: will replace %s (%v)\n", b.out.Path, err)
		return nil
	}
	b.bestLoss, b.bestStep = judge.Evaluate(), c.Step
	fmt.Fprintf(stderr, "keep-best: %s (step %d) has val loss %.4f to beat\n", b.out.Path, c.Step, b.bestLoss)
	return nil
}

// offer saves tr's state if loss is the lowest yet.
func (b *bestKeeper) offer(tr *minigpt.Trainer, loss float64) error {
	if !(loss < b.bestLoss) {
		return nil
	}
	if err := b.out.saveCheckpoint(b.snapshot(tr)); err != nil {
		return fmt.Errorf("keep-best: %w", err)
	}
	b.bestLoss, b.bestStep, b.saved = loss, tr.Step(), true
	return nil
}
