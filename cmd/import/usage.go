package main

// This file holds what import says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is import's -h and -version.
var command = cli.Command{
	Name: "import",
	Summary: `Turns a minigpt safetensors file (from export or python/train_ddp.py) into a
weights-only checkpoint for generate, serve and train -init-from:
docs/interop.md.`,
	Groups: []cli.Group{{
		Title:   "Input",
		Flags:   []string{"in"},
		Example: []string{"-in", "tuned.safetensors", "-out", "tuned.ckpt"},
	}, {
		Title:   "Output",
		Flags:   []string{"out", "force"},
		Example: []string{"-in", "tuned.safetensors", "-out", "tuned.ckpt", "-force"},
	}, {
		Title:   "Progress",
		Flags:   []string{"progress"},
		Example: []string{"-in", "big.safetensors", "-out", "big.ckpt", "-progress"},
	}},
	Notes: `A model of 16 MiB or more shows on a terminal how much is read and written
and the time left (on standard error, never in piped output).`,
	Exit: cli.ExitStatus{
		Refused:     "a bad flag, an -in file that is not a minigpt safetensors file (the message names the tensor or key), or an -out that may not be written; nothing was written",
		Failed:      "writing the checkpoint failed (a full disk); the old -out, if any, is intact",
		Interrupted: "nothing is written",
	},
}
