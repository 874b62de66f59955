package main

// This file holds -info: what a checkpoint says about itself, once the
// whole file has been read and checked.

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// printInfo writes what the checkpoint at path (the embedded model when
// path is empty) says about itself once the whole of it has been read and
// checked (a minigpt checkpoint's SHA-256 included): a damaged file is
// refused, not described.
func printInfo(path string, w io.Writer) error {
	name, size := path, ""
	var c *minigpt.Checkpoint
	var err error
	if path == "" {
		name = "the embedded Lantern Bay model"
		c = &minigpt.Checkpoint{Step: minigpt.DefaultTrainConfig().Steps} // the default run's last step
		c.Model, c.Vocab, err = minigpt.DefaultModel()
	} else {
		c, err = cli.LoadCheckpoint("model", path, cli.ProgressOut{})
		if fi, serr := os.Stat(path); err == nil && serr == nil {
			size = fmt.Sprintf(", %d bytes", fi.Size())
		}
	}
	if err != nil {
		return cli.Usagef("-info: %w", err) // a file a flag names, refused before any work: status 2
	}
	cfg := c.Model.Config()
	kind, head := "weights-only", "untied"
	if c.Train != nil {
		kind = "full (resumable)"
	}
	if cfg.TiedHead {
		head = "tied"
	}
	fmt.Fprintf(w, "checkpoint: %s, %s%s, every byte checked\n", name, kind, size)
	fmt.Fprintf(w, "model:      %d parameters: vocab %d, block %d, width %d, %d heads, %d layers, %s head\n",
		cfg.NumParams(), cfg.VocabSize, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, head)
	if cli.IsBPE(c.Vocab) {
		fmt.Fprintf(w, "vocabulary: %s (tokenize -model %s -merges lists them)\n", c.Vocab, cmp.Or(path, "FILE"))
	} else {
		var chars strings.Builder
		for id := range c.Vocab.Size() {
			chars.WriteString(c.Vocab.Token(id))
		}
		fmt.Fprintf(w, "vocabulary: %q\n", chars.String())
	}
	fmt.Fprintf(w, "step:       %d\n", c.Step)
	if tc := c.Train; tc != nil {
		fmt.Fprintf(w, "training:   %d steps of batch %d, lr %g, seed %d, warmup %d, cosine %v to %g, clip %g, weight decay %g, eval every %d on %d batches\n",
			tc.Steps, tc.BatchSize, tc.LR, tc.Seed, tc.WarmupSteps, tc.CosineDecay, tc.MinLR, tc.GradClip, tc.WeightDecay, tc.EvalEvery, tc.EvalBatches)
	}
	if c.CorpusSHA256 != nil {
		fmt.Fprintf(w, "corpus:     SHA-256 %x (of the training text; -resume checks it)\n", c.CorpusSHA256)
	}
	return nil
}
