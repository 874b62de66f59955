package minigpt_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

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
	greedy, err := m.GenerateText(ctx, vocab, "the keeper ", minigpt.GenerateOptions{MaxNewTokens: 40, Greedy: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(greedy)
	sample, err := m.GenerateText(ctx, vocab, "the boats ", minigpt.GenerateOptions{
		MaxNewTokens: 40,
		Temperature:  0.8,
		TopK:         10,
		Rand:         rand.New(rand.NewPCG(42, 0)),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sample)
	// Output:
	// the keeper rings the bell when a boat drifts near t
	// the boats and writes the count in a book. the lant
}

// Train a model on your own text, then save it for cmd/generate.
func ExampleTrainer() {
	text := minigpt.LanternBay // or any UTF-8 text
	data, err := minigpt.NewDataset(text, 32)
	if err != nil {
		log.Fatal(err)
	}
	cfg := minigpt.ConfigFor(data.Vocab) // the seed's shape, this text's vocabulary
	tc := minigpt.DefaultTrainConfig()
	tc.Steps = 20 // the seed's run is 1200
	m, err := minigpt.NewModel(cfg, tc.Seed)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := minigpt.NewTrainer(m, data, tc)
	if err != nil {
		log.Fatal(err)
	}
	err = tr.Run(context.Background(), func(p minigpt.Progress) {
		if p.Step == p.Steps {
			fmt.Printf("step %d: validation loss below 3: %v\n", p.Step, p.ValLoss < 3)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.NumParams(), "parameters")
	// To keep it: minigpt.SaveCheckpoint("my.ckpt", tr.Checkpoint(minigpt.FullCheckpoint))
	// Output:
	// step 20: validation loss below 3: true
	// 104728 parameters
}
