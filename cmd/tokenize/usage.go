package main

// This file holds what tokenize says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is tokenize's -h and -version.
var command = cli.Command{
	Name: "tokenize",
	Summary: `Trains a byte-level BPE tokenizer on a text, or loads one (a file it wrote,
or GPT-2's), and shows how text becomes tokens: a text split into its tokens
with their ids and the compression in bytes per token, token ids decoded
back to bytes, or the merges.`,
	Groups: []cli.Group{{
		Title:   "Train a tokenizer",
		Flags:   []string{"corpus", "vocab-size", "out", "force"},
		Example: []string{"-corpus", "data/tinyshakespeare.txt", "-vocab-size", "1024", "-out", "tiny.bpe"},
	}, {
		Title:   "Or use one",
		Flags:   []string{"tokenizer", "gpt2"},
		Example: []string{"-tokenizer", "tiny.bpe", "-text", "To be, or not to be"},
	}, {
		Title:   "What to show",
		Flags:   []string{"text", "text-file", "ids", "decode", "merges"},
		Example: []string{"-corpus", "data/tinyshakespeare.txt", "-merges"},
	}},
	Notes: `Text is split into pieces as GPT-2 splits it (words with their leading space,
runs of digits, of punctuation, of white space), and each piece is encoded
from its bytes with the merges in the order they were learnt; a token never
spans two pieces. Training merges the most frequent adjacent pair of tokens
until -vocab-size; pairs that occur equally often go to the smaller ids.
With -gpt2 the ids are GPT-2's; the text "<|endoftext|>" encodes as its
characters, as in GPT-2's own encoder, and only -decode shows token 50256.`,
	Exit: cli.ExitStatus{
		Refused:     "a bad flag or value, a -corpus, -tokenizer, -gpt2 or -text-file that cannot be read or used, an -out that may not be written, or an id outside the vocabulary",
		Failed:      "writing the tokenizer or the output failed; a replaced file is intact",
		Interrupted: "nothing is written if the signal came before the writing",
	},
}
