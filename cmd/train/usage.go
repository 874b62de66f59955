package main

// This file holds what train says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is train's -h and -version.
var command = cli.Command{
	Name: "train",
	Summary: `Trains a MiniGPT on a text corpus and writes a checkpoint. Everything is
checked before the first step; an existing output file is replaced only
with -force (or when it is the -resume file), anything but a regular file
never. Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves
the checkpoint -out names (full, or weights-only with -weights-only).
Progress goes to standard error: a live line on a terminal, otherwise a
line every 1/20 of the run; before the first step, reading, checking and
encoding a corpus of 16 MiB or more and loading or saving a model of
16 MiB or more show how far they are and the time left (on a terminal, or
with -progress).`,
	Groups: []cli.Group{{
		Title:   "Data",
		Flags:   []string{"corpus"},
		Example: []string{"-corpus", "data/tinyshakespeare.txt", "-preset", "baby"},
	}, {
		Title:   "Where to start",
		Flags:   []string{"preset", "resume", "init-from"},
		Example: []string{"-resume", "minigpt.ckpt", "-steps", "2400"},
	}, {
		Title:   "Model shape (fixed by a -resume or -init-from checkpoint)",
		Flags:   []string{"block", "embd", "heads", "layers", "tied"},
		Example: []string{"-block", "64", "-embd", "128", "-heads", "4", "-layers", "4"},
	}, {
		Title:   "Optimisation",
		Flags:   []string{"steps", "lr", "batch", "seed", "warmup", "cosine", "min-lr", "grad-clip", "weight-decay"},
		Example: []string{"-steps", "2000", "-lr", "1e-3", "-warmup", "100", "-cosine", "-min-lr", "1e-4"},
	}, {
		Title:   "Evaluation",
		Flags:   []string{"eval-every", "eval-batches"},
		Example: []string{"-eval-every", "100", "-eval-batches", "20"},
	}, {
		Title:   "Outputs",
		Flags:   []string{"out", "weights-only", "keep-best", "plot", "force"},
		Example: []string{"-out", "my.ckpt", "-plot", "loss.svg", "-keep-best"},
	}, {
		Title:   "Progress",
		Flags:   []string{"progress"},
		Example: []string{"-corpus", "big.txt", "-progress"},
	}},
	Exit: cli.ExitStatus{
		Refused:     "a bad flag or value, a -corpus, -resume or -init-from file that cannot be used, or an output that exists without -force; nothing was written",
		Failed:      "training diverged or a save failed (the message says what was saved)",
		Interrupted: "the checkpoint is saved first, if a step was taken",
	},
}
