package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// checkOutputs refuses, before any training, output paths that would
// overwrite one another or an input, or that cannot be written: a run must
// never be lost at its final save.
func checkOutputs(o *options) error {
	type file struct{ flag, path string }
	files := []file{{"out", o.out}, {"plot", o.plot}, {"corpus", o.corpus}, {"resume", o.resume}, {"init-from", o.initFrom}}
	if o.keepBest {
		files = append(files, file{"keep-best", bestPath(o.out)})
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if a.path == "" || b.path == "" || (a.flag == "out" && b.flag == "resume") {
				continue
			}
			if samePath(a.path, b.path) {
				return cli.UsageError{Err: fmt.Errorf("-%s and -%s both name %s: one would overwrite the other", a.flag, b.flag, a.path)}
			}
		}
	}
	if o.resume != "" && o.weightsOnly && samePath(o.out, o.resume) {
		return cli.UsageError{Err: fmt.Errorf("-weights-only would replace the full checkpoint %s; give -out another file", o.resume)}
	}
	for _, f := range files[:2] {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(f.path); err == nil && fi.IsDir() {
			return cli.UsageError{Err: fmt.Errorf("invalid value %q for flag -%s: is a directory", f.path, f.flag)}
		}
		probe, err := os.CreateTemp(filepath.Dir(f.path), ".train-probe-*")
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("invalid value %q for flag -%s: cannot write there: %w", f.path, f.flag, err)}
		}
		probe.Close()
		os.Remove(probe.Name())
	}
	return nil
}

// samePath reports whether a and b name the same file, existing or not.
func samePath(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// bestPath inserts ".best" before the extension of out.
func bestPath(out string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + ".best" + ext
}

// bestKeeper saves the checkpoint with the lowest validation loss.
type bestKeeper struct {
	path     string
	kind     minigpt.CheckpointKind
	bestLoss float64
	bestStep int
	saved    bool
}

// recall sets the loss to beat, on a resumed run, from the best checkpoint
// an earlier part of the run left, measured on the same validation
// batches.
func (b *bestKeeper) recall(tr *minigpt.Trainer, stderr io.Writer) {
	c, err := minigpt.LoadCheckpoint(b.path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil && c.Model.Config != tr.Model().Config {
		err = fmt.Errorf("its model config %+v differs from the run's", c.Model.Config)
	}
	var judge *minigpt.Trainer
	if err == nil {
		judge, err = minigpt.NewTrainer(c.Model, tr.Dataset(), tr.Config())
	}
	if err != nil {
		fmt.Fprintf(stderr, "keep-best: ignoring %s: %v\n", b.path, err)
		return
	}
	b.bestLoss, b.bestStep = judge.Evaluate(), c.Step
	fmt.Fprintf(stderr, "keep-best: %s (step %d) has val loss %.4f to beat\n", b.path, c.Step, b.bestLoss)
}

// offer saves tr's state if loss is the lowest yet.
func (b *bestKeeper) offer(tr *minigpt.Trainer, loss float64) error {
	if !(loss < b.bestLoss) {
		return nil
	}
	if err := minigpt.SaveCheckpoint(b.path, tr.Checkpoint(b.kind)); err != nil {
		return fmt.Errorf("keep-best: %w", err)
	}
	b.bestLoss, b.bestStep, b.saved = loss, tr.Step(), true
	return nil
}
