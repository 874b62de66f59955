package main

// This file holds what export says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is export's -h and -version.
var command = cli.Command{
	Name: "export",
	Summary: `Writes a minigpt checkpoint (default: the embedded Lantern Bay model) as a
safetensors file for PyTorch: docs/interop.md.`,
	Groups: []cli.Group{{
		Title:   "Model",
		Flags:   []string{"model"},
		Example: []string{"-model", "models/lanternbay.ckpt", "-out", "lanternbay.safetensors"},
	}, {
		Title:   "Output",
		Flags:   []string{"out", "dtype", "force"},
		Example: []string{"-out", "lanternbay-f32.safetensors", "-dtype", "F32"},
	}, {
		Title:   "Checking another implementation",
		Flags:   []string{"logits", "logits-prompt"},
		Example: []string{"-out", "lanternbay.safetensors", "-logits", "logits.json", "-force"},
	}, {
		Title:   "Progress",
		Flags:   []string{"progress"},
		Example: []string{"-model", "big.ckpt", "-out", "big.safetensors", "-progress"},
	}},
	Notes: `A model of 16 MiB or more shows on a terminal how much is read and written
and the time left (on standard error, never in piped output).`,
	Exit: cli.ExitStatus{
		Refused:     "a bad flag, a -model that cannot be loaded, an output that may not be written, or a weight beyond float32's range with -dtype F32; nothing was written",
		Failed:      "writing a file failed (a full disk); a replaced file is intact",
		Interrupted: "nothing is written if the signal came before the writing",
	},
}
