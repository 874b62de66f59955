package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/internal/safefile"
)

// output is a file the run writes (the checkpoint, the -keep-best copy,
// the plot) and whether it may replace what is there. Consent comes from
// -force, from being the -resume source (a resumed run continues its own
// file), or from this run having written the file already. Without it an
// existing file is refused up front and, should one appear while
// training, at the save itself: the run never replaces a file the user
// did not ask it to.
type output struct {
	flag, path string
	replace    bool
	note       string // how the path was chosen, for messages: "(the -resume file)"
}

// label names the output in messages: "-out m.ckpt".
func (f *output) label() string {
	s := "-" + f.flag + " " + f.path
	if f.note != "" {
		s += " " + f.note
	}
	return s
}

// refusal turns a safefile.CheckOutput or Save error into the message
// the user sees, naming the flag and what to do.
func (f *output) refusal(err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s: the file exists and is not this run's output; pass -force to replace it, or choose another file", f.label())
	case errors.Is(err, minigpt.ErrNotRegularFile) && errors.As(err, &pe):
		return fmt.Errorf("%s: %v; it is never replaced, not even with -force", f.label(), pe.Err)
	case errors.As(err, &pe) && pe.Path == f.path:
		return fmt.Errorf("%s: %w", f.label(), pe.Err) // the path is in the label already
	}
	return fmt.Errorf("%s: %w", f.label(), err)
}

// check refuses, before any work, what the save would refuse.
func (f *output) check() error {
	if err := safefile.CheckOutput(f.path, f.replace); err != nil {
		return cli.UsageError{Err: f.refusal(err)}
	}
	return nil
}

// save writes the file atomically (safefile.Save) with the consent it
// has; once written, the file is this run's own and may be replaced.
func (f *output) save(write func(io.Writer) error) error {
	if err := safefile.Save(f.path, f.replace, write); err != nil {
		return f.refusal(err)
	}
	f.replace = true
	return nil
}

// saveCheckpoint saves c (see save).
func (f *output) saveCheckpoint(c *minigpt.Checkpoint) error {
	return f.save(func(w io.Writer) error { return minigpt.WriteCheckpoint(w, c) })
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
	outs := &outputs{out: &output{flag: "out", path: o.out, replace: o.force}}
	if outFromResume {
		outs.out.note = "(the -resume file, as -out is not given)"
	}
	if o.resume != "" && samePath(o.out, o.resume) {
		outs.out.replace = true // a resumed run continues its own file
	}
	if o.plot != "" {
		outs.plot = &output{flag: "plot", path: o.plot, replace: o.force}
	}
	if o.keepBest {
		// On a resumed run the .best file is normally the earlier part's;
		// bestKeeper.recall confirms it before anything is written.
		outs.best = &output{flag: "keep-best", path: bestPath(o.out), replace: o.force || o.resume != "",
			note: "(the best checkpoint beside -out)"}
	}

	type file struct{ flag, path string }
	files := []file{{"out", o.out}, {"plot", o.plot}, {"corpus", o.corpus}, {"resume", o.resume}, {"init-from", o.initFrom}}
	if outs.best != nil {
		files = append(files, file{"keep-best", outs.best.path})
	}
	for i, a := range files {
		for _, b := range files[i+1:] {
			if a.path == "" || b.path == "" || (a.flag == "out" && b.flag == "resume") {
				continue
			}
			if samePath(a.path, b.path) {
				return nil, cli.Usagef("-%s and -%s both name %s: one would overwrite the other", a.flag, b.flag, a.path)
			}
		}
	}
	if o.resume != "" && o.weightsOnly && samePath(o.out, o.resume) {
		return nil, cli.Usagef("-weights-only would replace the full checkpoint %s; give -out another file", o.resume)
	}
	for _, f := range []*output{outs.out, outs.plot, outs.best} {
		if f == nil {
			continue
		}
		if err := f.check(); err != nil {
			return nil, err
		}
	}
	return outs, nil
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
		b.out.replace = force // nothing of the run's there: one that appears is not ours
		return nil
	}
	if err == nil && c.Model.Config() != tr.Model().Config() {
		err = fmt.Errorf("its model config %+v differs from the run's", c.Model.Config())
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
