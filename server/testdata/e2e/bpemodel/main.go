// Command bpemodel writes the end-to-end tests' BPE model: a byte-level
// BPE vocabulary learnt from Lantern Bay with a few words of two-, three-
// and four-byte characters, and a small model trained over it, as a
// weights-only checkpoint (format version 3) for cmd/serve -model.
//
//	go run ./server/testdata/e2e/bpemodel -out bpe.ckpt
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"example.org/minigpt"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bpemodel:", err)
		os.Exit(1)
	}
}

// text is what the tokenizer and the model learn: the built-in text, and
// sentences whose characters BPE at this size leaves in pieces.
var text = minigpt.LanternBay + strings.Repeat("the keeper’s café is naïve — “a gull” 🙂 at dusk. ", 40)

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bpemodel", flag.ContinueOnError)
	out := fs.String("out", "", "write the checkpoint to `path` (never replacing a file)")
	size := fs.Int("vocab-size", 320, "tokens of the vocabulary")
	steps := fs.Int("steps", 300, "training steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	ctx := context.Background()
	v, err := minigpt.NewBPEVocab(ctx, text, *size)
	if err != nil {
		return err
	}
	d, err := minigpt.NewDataset(text, v, 32)
	if err != nil {
		return err
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: v.Size(), BlockSize: 32, EmbedDim: 64, Heads: 4, Layers: 2}, 42)
	if err != nil {
		return err
	}
	tc := minigpt.DefaultTrainConfig()
	tc.Steps = *steps
	tr, err := minigpt.NewTrainer(m, d, tc)
	if err != nil {
		return err
	}
	if err := tr.Run(ctx, nil); err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := minigpt.WriteCheckpoint(f, tr.Checkpoint().WeightsOnly()); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, validation loss %.3f after %d steps\n", *out, v, tr.Evaluate(), *steps)
	return nil
}
