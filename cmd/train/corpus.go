package main

// This file holds the corpus from its file to a Dataset: read, checked
// and encoded with progress on a terminal, since a corpus near the 1 GiB
// limit takes a minute before the first step.

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// maxCorpusBytes bounds what -corpus reads: far more text than a model of
// this kind can use, far less than the machine's memory.
const maxCorpusBytes = 1 << 30

// readCorpus returns the training text (without a leading UTF-8 byte-order
// mark) and a name for messages. It reads only regular files, at most
// maxCorpusBytes, and refuses bytes that are not UTF-8 with their place.
func readCorpus(path string, po cli.ProgressOut) (text, name string, err error) {
	if path == "" {
		return minigpt.LanternBay, "the built-in Lantern Bay text", nil
	}
	text, err = cli.ReadFileShowing(path, maxCorpusBytes, po)
	if err != nil {
		return "", "", fmt.Errorf("-corpus %w", err)
	}
	if !utf8.ValidString(text) {
		return "", "", cli.Usagef("-corpus %s: %w", path, cli.CheckText(text, nil))
	}
	return text, path, nil
}

// vocabPiece is the bytes of text vocabulary reads between two progress
// reports; a variable so that tests can make pieces small.
var vocabPiece = 8 << 20

// vocabulary returns minigpt.NewVocab(text) for valid UTF-8, its distinct
// characters sorted, found a piece at a time with progress on p.
func vocabulary(text string, p *cli.Progress) (*minigpt.Vocab, error) {
	var ascii [utf8.RuneSelf]bool
	other := map[rune]bool{}
	for off := 0; off < len(text); {
		end := min(off+vocabPiece, len(text))
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		for _, c := range text[off:end] {
			if c < utf8.RuneSelf {
				ascii[c] = true
			} else {
				other[c] = true
			}
		}
		p.Set(int64(end))
		off = end
	}
	var chars []rune
	for c, seen := range ascii {
		if seen {
			chars = append(chars, rune(c))
		}
	}
	var rest []rune
	for c := range other {
		rest = append(rest, c)
	}
	slices.Sort(rest)
	return minigpt.NewVocab(string(append(chars, rest...)))
}

// newDataset is minigpt.NewDataset(text, vocab, block) with progress on
// po: finding the vocabulary (when vocab is nil), then encoding. The
// library reports nothing while it encodes, so the line there advances at
// the rate the same call went on a sample, and says it is an estimate. A character outside vocab is named by its place (cli.At).
func newDataset(text string, vocab *minigpt.Vocab, block int, name string, po cli.ProgressOut) (*minigpt.Dataset, error) {
	large := int64(len(text)) >= largeCorpus
	if vocab == nil {
		var p *cli.Progress
		if large {
			p = po.Start("finding the characters of "+name, "bytes", int64(len(text)))
		}
		v, err := vocabulary(text, p)
		p.Done()
		if err != nil {
			return nil, err
		}
		vocab = v
	}
	var p *cli.Progress
	if large {
		p = po.Start("encoding "+name+" (time left estimated)", "bytes", int64(len(text)))
		p.Estimate(encodeRate(text, vocab, block))
	}
	d, err := minigpt.NewDataset(text, vocab, block)
	if err == nil {
		p.Set(int64(len(text)))
	}
	p.Done()
	if errors.Is(err, minigpt.ErrBadText) {
		if cerr := cli.CheckText(text, vocab); cerr != nil {
			return nil, cerr
		}
	}
	return d, err
}

// largeCorpus is the size from which preparing a corpus shows progress:
// 16 MiB takes about half a second to encode.
const largeCorpus = 16 << 20

// rateSample is the bytes encodeRate times: large enough that the
// sample, like the whole corpus, does not sit in the processor's caches
// (a 1 MiB sample ran twice as fast as the whole, 8 MiB within a third).
const rateSample = 8 << 20

// encodeRate times minigpt.NewDataset on the start of text (rateSample
// bytes at most) and returns the bytes a second it went at, or 0.
func encodeRate(text string, vocab *minigpt.Vocab, block int) float64 {
	n := min(len(text), rateSample)
	for n < len(text) && !utf8.RuneStart(text[n]) {
		n++
	}
	start := time.Now()
	if _, err := minigpt.NewDataset(text[:n], vocab, block); err != nil {
		return 0
	}
	return float64(n) / time.Since(start).Seconds()
}
