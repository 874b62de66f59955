package minigpt_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"sync"

	"example.org/minigpt"
)

// Sampling with the knobs of a real sampling API: min-p, a banned
// character and a stop string.
func ExampleGenerateOptions() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	c, err := vocab.Encode("c")
	if err != nil {
		log.Fatal(err)
	}
	bias := map[int]float64{c[0]: -100} // never write a 'c'

	res, err := m.Complete(context.Background(), vocab, "the keeper ", minigpt.GenerateOptions{
		MaxNewTokens: 120,
		Temperature:  1.2,
		MinP:         0.1,
		LogitBias:    bias,
		Seed:         42,
		Stop:         []string{"."}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the keeper " + res[0].Text)
	// Output:
	// the keeper rings the bell when a boat drifts near the rove the bay when the tide is low
}

// Several samples of one prompt, computed together; sample i is the one a
// single-sample call with seed 7+i gives alone.
func ExampleModel_Complete() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Complete(context.Background(), vocab, "the ", minigpt.GenerateOptions{
		MaxNewTokens: 40,
		N:            3,
		Seed:         7,
		Temperature:  1.5,
		TopK:         5,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res {
		fmt.Printf("seed %d: %q\n", 7+c.Index, c.Text)
	}
	// Output:
	// seed 7: "tide is low. the keeper counts the boats"
	// seed 8: "keeper rings the bell when a boat drifts"
	// seed 9: "bell when a boat drifts near the rocks a"
}

// Generate works on token ids: encoding and decoding are the caller's.
// With the same options and seed it gives Complete's samples (see
// Model.Complete's example), here streamed as they are generated.
func ExampleModel_Generate() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	prompt, err := vocab.Encode("the ")
	if err != nil {
		log.Fatal(err)
	}
	streamed := make([][]int, 3)
	res, err := m.Generate(context.Background(), prompt, minigpt.GenerateOptions{
		MaxNewTokens: 40,
		N:            3,
		Seed:         7,
		Temperature:  1.5,
		TopK:         5,
		Stream: func(c *minigpt.Completion) error {
			streamed[c.Index] = append(streamed[c.Index], c.IDs...)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for i, c := range res {
		text, err := vocab.Decode(c.IDs)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("seed %d: %q (%d ids streamed)\n", 7+i, text, len(streamed[i]))
	}
	// Output:
	// seed 7: "tide is low. the keeper counts the boats" (40 ids streamed)
	// seed 8: "keeper rings the bell when a boat drifts" (40 ids streamed)
	// seed 9: "bell when a boat drifts near the rocks a" (40 ids streamed)
}

// Many goroutines may generate with one Model: each call has its own
// KV cache, and the text does not depend on what else runs.
func ExampleModel_Complete_concurrent() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	prompts := []string{"the keeper ", "the boats ", "the tide ", "a small boat "}
	out := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := m.Complete(context.Background(), vocab, p, minigpt.GenerateOptions{MaxNewTokens: 30, Greedy: true})
			if err != nil {
				out[i] = err.Error()
				return
			}
			out[i] = p + res[0].Text
		}()
	}
	wg.Wait()
	for _, s := range out {
		fmt.Printf("%q\n", s)
	}
	// Output:
	// "the keeper rings the bell when a boat dri"
	// "the boats come home when the lantern glo"
	// "the tide rises at dusk and falls at daw"
	// "a small boat drifts near the rocks at dawn."
}

// A trace of each step: why the sampler chose what it chose.
func ExampleStep() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.Complete(context.Background(), vocab, "the ", minigpt.GenerateOptions{
		MaxNewTokens: 3,
		Temperature:  1.5,
		TopK:         2,
		Seed:         42,
		TraceTopN:    3,
		Trace:        true,
		Stream: func(part *minigpt.Completion) error {
			for _, s := range part.Steps {
				fmt.Printf("%q p=%.3f raw=%.3f |", vocab.Token(s.Chosen.ID), math.Exp(s.Logprob), math.Exp(s.Chosen.Logprob))
				for _, c := range s.Top {
					final := c.Probs[len(c.Probs)-1] // after the last stage
					if c.CutBy == minigpt.StageRaw {
						fmt.Printf(" %q %.3f→%.3f", vocab.Token(c.ID), c.Probs[minigpt.StageRaw], final)
					} else {
						fmt.Printf(" %q %.3f cut by %v", vocab.Token(c.ID), c.Probs[minigpt.StageRaw], c.CutBy)
					}
				}
				fmt.Println()
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// "b" p=0.523 raw=0.265 | "b" 0.265→0.523 "l" 0.231→0.477 "t" 0.102 cut by top-k
	// "o" p=0.502 raw=0.449 | "o" 0.449→0.502 "e" 0.443→0.498 "a" 0.102 cut by top-k
	// "a" p=0.968 raw=0.993 | "a" 0.993→0.968 "o" 0.006→0.032 "e" 0.001 cut by top-k
}

// A constraint holds samples to a format: here a sentence of the
// keeper's words, and a refusal that names what the model cannot write.
func ExampleNewConstraint() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	c, err := minigpt.NewConstraint(vocab, "regex", `the (lamp|keeper|tide) (rises|glows|walks)( at (dawn|dusk))?\.`)
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Complete(context.Background(), vocab, "at night ", minigpt.GenerateOptions{
		MaxNewTokens: 40, N: 3, Seed: 1, Temperature: 1.2, Constraint: c})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res {
		fmt.Printf("%q %s\n", s.Text, s.Finish)
	}
	_, err = minigpt.NewConstraint(vocab, "json-object")
	fmt.Println(err)
	// Output:
	// "the lamp glows." stop
	// "the lamp walks at dawn." stop
	// "the lamp glows." stop
	// invalid generate option: constraint cannot be satisfied over this vocabulary: the schema needs '{' and '}', which the model never writes
}
