package main

// This file holds what generate says about itself: -h by purpose, with
// an example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is generate's -h and -version.
var command = cli.Command{
	Name: "generate",
	Summary: `Generates text with a MiniGPT checkpoint (default: the embedded model, trained
on the Lantern Bay text). The text streams to standard output as it is
generated; timings and reports go to standard error.`,
	Groups: []cli.Group{{
		Title:   "What to generate",
		Flags:   []string{"prompt", "prompt-file", "n", "samples", "stop"},
		Example: []string{"-prompt", "the keeper ", "-n", "80", "-stop", "."},
	}, {
		Title: "Sampling (in this order; -greedy skips them all)",
		Flags: []string{"greedy", "logit-bias", "presence-penalty", "frequency-penalty", "temperature",
			"repetition-penalty", "no-repeat-ngram", "top-k", "top-p", "min-p", "seed"},
		Example: []string{"-temperature", "0.8", "-top-k", "10", "-seed", "7"},
	}, {
		Title:   "Output format (one at most; greedy decoding, sampling and beams all keep it)",
		Flags:   []string{"regex", "choice", "grammar", "json-schema", "json"},
		Example: []string{"-regex", "the (lamp|keeper) (glows|walks)\\.", "-samples", "3"},
	}, {
		Title:   "Beam search (instead of sampling)",
		Flags:   []string{"beams", "length-penalty"},
		Example: []string{"-beams", "4", "-n", "40"},
	}, {
		Title:   "Output (instead of the plain text)",
		Flags:   []string{"compare", "explain", "explain-top", "logprobs", "loops", "loop-window"},
		Example: []string{"-explain", "-temperature", "1.5", "-n", "20"},
	}, {
		Title:   "Model",
		Flags:   []string{"model", "info"},
		Example: []string{"-model", "models/lanternbay.ckpt", "-info"},
	}},
	Notes: `A sampled character goes through, in order: the output format (which allows
only the tokens after which the text can still end in the format, within
-n), -logit-bias, -presence-penalty
and -frequency-penalty, -temperature, -repetition-penalty, -no-repeat-ngram,
-top-k, -top-p, -min-p; then one draw. -greedy (or -temperature 0) skips
them all; -beams applies the bias, the penalties and -no-repeat-ngram to
each beam's log-probabilities and skips the rest, as Hugging Face does.
docs/sampling.md explains each stage.`,
	Exit: cli.ExitStatus{
		Refused:     "a bad flag or value, a -model or -prompt-file that cannot be used, or a prompt character the model does not know; nothing was generated",
		Failed:      "the text could not be written (a full disk, a closed output), generating failed, or a -stop string cut a sample short of its output format (its text is written all the same)",
		Interrupted: "the text generated so far has been written",
	},
}
