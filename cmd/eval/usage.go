package main

// This file holds what eval says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is eval's -h and -version.
var command = cli.Command{
	Name:    "eval",
	Summary: summary,
	Groups: []cli.Group{{
		Title:   "What to score, and with what",
		Flags:   []string{"text", "model", "stride"},
		Example: []string{"-text", "data/tinyshakespeare.txt", "-stride", "16"},
	}, {
		Title:   "Every token",
		Flags:   []string{"jsonl", "top"},
		Example: []string{"-text", "-", "-jsonl", "-top", "3"},
	}, {
		Title:   "Progress",
		Flags:   []string{"progress"},
		Example: []string{"-text", "data/tinyshakespeare.txt", "-progress"},
	}},
	Notes: `Every token but the first is predicted from those before it, as many as
the model's context holds; a longer text is read in windows moving by
-stride tokens, each token scored once. The mean loss with the default
stride is exactly the mean cross-entropy of windows laid side by side. Bits per byte
are the scored tokens' surprisal in bits over their bytes (the text's, less
the first token's).
A text that takes more than half a second shows on a terminal how much is
scored and the time left (on standard error, never in piped output).`,
	Exit: cli.ExitStatus{
		Refused:     "a bad flag, a text or model that cannot be read, or a character the model does not know",
		Failed:      "scoring or writing the output failed",
		Interrupted: "nothing more is scored",
	},
}
