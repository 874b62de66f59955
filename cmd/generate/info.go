package main

import (
	"fmt"
	"io"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// printInfo writes what the checkpoint at path (the embedded model when
// path is empty) says about itself, without loading its weights, once
// its checksum has vouched for every byte: a damaged file is refused,
// not described.
func printInfo(path string, w io.Writer) error {
	var info *minigpt.CheckpointInfo
	var err error
	name := path
	if path == "" {
		name = "the embedded Lantern Bay model"
		info, err = minigpt.DefaultModelInfo()
	} else {
		info, err = minigpt.VerifyCheckpointFile(path)
	}
	if err != nil {
		return cli.Usagef("-info: %w", err) // a file a flag names, refused before any work: status 2
	}
	c := info.Config
	kind, head := "weights-only", "untied"
	if info.Full {
		kind = "full (resumable)"
	}
	if c.TiedHead {
		head = "tied"
	}
	fmt.Fprintf(w, "checkpoint: %s, %s, %d bytes, SHA-256 checksum verified\n", name, kind, info.Bytes)
	fmt.Fprintf(w, "model:      %d parameters: vocab %d, block %d, width %d, %d heads, %d layers, %s head\n",
		c.NumParams(), c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, head)
	fmt.Fprintf(w, "vocabulary: %q\n", string(info.Vocab.Chars()))
	fmt.Fprintf(w, "step:       %d\n", info.Step)
	if tc := info.Train; tc != nil {
		fmt.Fprintf(w, "training:   %d steps of batch %d, lr %g, seed %d, warmup %d, cosine %v to %g, clip %g, weight decay %g, eval every %d on %d batches\n",
			tc.Steps, tc.BatchSize, tc.LR, tc.Seed, tc.WarmupSteps, tc.CosineDecay, tc.MinLR, tc.GradClip, tc.WeightDecay, tc.EvalEvery, tc.EvalBatches)
	}
	if info.CorpusSHA256 != nil {
		fmt.Fprintf(w, "corpus:     SHA-256 %x (of the training text; -resume checks it)\n", info.CorpusSHA256)
	}
	return nil
}
