package main

// This file holds tokenize's flags and the checks on them that need no
// file.

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/internal/bpe"
)

type options struct {
	corpus, out     string
	vocabSize       int
	force           bool
	tokenizer, gpt2 string
	text, textFile  string
	ids, merges     bool
	decode          string
	decodeIDs       []int // -decode parsed
	textGiven       bool  // -text was given (it may be empty)
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.StringVar(&o.corpus, "corpus", "", "train a tokenizer on the text in this `file` (any bytes; a leading byte-order mark is not text)")
	fs.IntVar(&o.vocabSize, "vocab-size", 512, fmt.Sprintf("with -corpus, the tokens to learn: the 256 bytes and the merges, %d to %d", bpe.NumBytes, bpe.MaxVocabSize))
	fs.StringVar(&o.out, "out", "", "with -corpus, write the trained tokenizer to this `file` (for -tokenizer)")
	fs.BoolVar(&o.force, "force", false, "replace an existing -out file")
	fs.StringVar(&o.tokenizer, "tokenizer", "", "use the tokenizer in this `file`, written by -out")
	fs.StringVar(&o.gpt2, "gpt2", "", "use GPT-2's tokenizer from the encoder.json and vocab.bpe in this `directory`")
	fs.StringVar(&o.text, "text", "", "encode this `text` and list its tokens")
	fs.StringVar(&o.textFile, "text-file", "", "encode the text in this `file` (any bytes) and list its tokens; - reads standard input")
	fs.BoolVar(&o.ids, "ids", false, "with -text or -text-file, print only the ids, on one line, and the summary on standard error")
	fs.StringVar(&o.decode, "decode", "", "decode these token `ids` (separated by spaces or commas) and write their bytes to standard output")
	fs.BoolVar(&o.merges, "merges", false, "list the merges in rank order, then the special tokens")
	return fs
}

// validate checks the flags against each other; set holds the flags given.
func (o *options) validate(fs *flag.FlagSet, set map[string]bool) error {
	o.textGiven = set["text"]
	sources := 0
	for _, f := range []string{"corpus", "tokenizer", "gpt2"} {
		if set[f] {
			sources++
		}
	}
	actions := 0
	for _, f := range []string{"text", "text-file", "decode", "merges"} {
		if set[f] {
			actions++
		}
	}
	switch {
	case sources == 0:
		return cli.Usagef("give -corpus to train a tokenizer, or -tokenizer or -gpt2 to use one")
	case sources > 1:
		return cli.Usagef("-corpus, -tokenizer and -gpt2 each name the tokenizer: give one")
	case set["corpus"] && o.corpus == "", set["tokenizer"] && o.tokenizer == "", set["gpt2"] && o.gpt2 == "":
		return cli.Usagef("an empty file name: -corpus, -tokenizer and -gpt2 name a file or directory")
	case !set["corpus"] && (set["vocab-size"] || set["out"]):
		return cli.Usagef("-vocab-size and -out are for training: give -corpus")
	case set["force"] && o.out == "":
		return cli.Usagef("-force replaces the -out file: give -out")
	case set["corpus"] && (o.vocabSize < bpe.NumBytes || o.vocabSize > bpe.MaxVocabSize):
		return cli.BadValue(fs, "vocab-size", fmt.Sprintf("want %d (the bytes alone) to %d", bpe.NumBytes, bpe.MaxVocabSize))
	case set["out"] && o.out == "":
		return cli.Usagef("-out is empty: give the file to write the tokenizer to")
	case actions > 1:
		return cli.Usagef("-text, -text-file, -decode and -merges are different things to do: give one")
	case actions == 0 && !set["corpus"]:
		return cli.Usagef("nothing to do: give -text, -text-file, -decode or -merges")
	case o.ids && !set["text"] && !set["text-file"]:
		return cli.Usagef("-ids lists the ids of -text or -text-file: give one")
	case set["text-file"] && o.textFile == "":
		return cli.Usagef("-text-file is empty: give a file, or - for standard input")
	}
	if set["decode"] {
		ids, err := parseIDs(o.decode)
		if err != nil {
			return cli.BadValue(fs, "decode", err.Error())
		}
		o.decodeIDs = ids
	}
	return nil
}

// parseIDs reads token ids separated by spaces or commas.
func parseIDs(s string) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("no ids")
	}
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("id %d, %q, is not a number from 0", i+1, f)
		}
		ids[i] = id
	}
	return ids, nil
}
