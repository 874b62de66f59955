package minigpt_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"example.org/minigpt"
)

// Generate text with the embedded Lantern Bay model: greedy decoding is
// deterministic, and a seeded sample is reproducible.
func Example() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	greedy, err := m.Complete(ctx, vocab, "the keeper ", minigpt.GenerateOptions{MaxNewTokens: 40, Greedy: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the keeper " + greedy[0].Text)
	sample, err := m.Complete(ctx, vocab, "the boats ", minigpt.GenerateOptions{
		MaxNewTokens: 40,
		Temperature:  0.8,
		TopK:         10,
		Seed:         42,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the boats " + sample[0].Text)
	// Output:
	// the keeper rings the bell when a boat drifts near t
	// the boats and writes the count in a book. the lant
}

// Train a model on your own text, then save it for cmd/generate.
func ExampleTrainer() {
	text := minigpt.LanternBay // or any UTF-8 text
	data, err := minigpt.NewDataset(text, nil, 32)
	if err != nil {
		log.Fatal(err)
	}
	cfg := minigpt.ConfigFor(data.Vocab) // the lessons' shape, this text's vocabulary
	tc := minigpt.DefaultTrainConfig()
	tc.Steps = 20 // the default run is 1200
	m, err := minigpt.NewModel(cfg, tc.Seed)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := minigpt.NewTrainer(m, data, tc)
	if err != nil {
		log.Fatal(err)
	}
	err = tr.Run(context.Background(), func(p minigpt.Progress) {
		if p.Step == tc.Steps {
			fmt.Printf("step %d: validation loss below 3: %v\n", p.Step, p.ValLoss < 3)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.NumParams(), "parameters")
	// To keep it: minigpt.SaveCheckpoint("my.ckpt", tr.Checkpoint())
	// Output:
	// step 20: validation loss below 3: true
	// 104728 parameters
}

// Fine-tune a trained model on new text: load it (here the embedded
// Lantern Bay model; LoadCheckpoint for a file), encode the text with the
// model's own vocabulary, and hand the model to NewTrainer, which starts a
// fresh optimizer at step 0. Every character of the text must be in the
// vocabulary.
func ExampleNewTrainer_fineTune() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	text := strings.Repeat("the gulls sing to the keeper at dawn. ", 12)
	data, err := minigpt.NewDataset(text, vocab, m.Config().BlockSize)
	if err != nil {
		log.Fatal(err) // e.g. "unusable text: 'z' (U+007A) at byte offset 4 ..."
	}
	tc := minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.LR, tc.EvalBatches = 20, 8, 1e-3, 1
	tr, err := minigpt.NewTrainer(m, data, tc)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	greedy := minigpt.GenerateOptions{MaxNewTokens: 30, Greedy: true}
	before, err := m.Complete(ctx, vocab, "the gulls ", greedy)
	if err != nil {
		log.Fatal(err)
	}
	if err := tr.Run(ctx, nil); err != nil {
		log.Fatal(err)
	}
	after, err := m.Complete(ctx, vocab, "the gulls ", greedy)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the gulls " + before[0].Text)
	fmt.Println("the gulls " + after[0].Text)
	// Output:
	// the gulls call over the bay when the tid
	// the gulls sing to the keeper at dawn. th
}

// Save a model to a file, then load it and generate.
func ExampleLoadCheckpoint() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "minigpt-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "lanternbay.ckpt")
	// A weights-only checkpoint; a Trainer's Checkpoint method makes full ones.
	if err := minigpt.SaveCheckpoint(path, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 1200}); err != nil {
		log.Fatal(err)
	}

	c, err := minigpt.LoadCheckpoint(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d parameters, %d characters, step %d, resumable: %v\n",
		c.Model.Config().NumParams(), c.Vocab.Size(), c.Step, c.Train != nil)
	res, err := c.Model.Complete(context.Background(), c.Vocab, "the lamp ", minigpt.GenerateOptions{MaxNewTokens: 30, Greedy: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the lamp " + res[0].Text)
	// Output:
	// 104728 parameters, 24 characters, step 1200, resumable: false
	// the lamp keeper lights the lantern when
}
