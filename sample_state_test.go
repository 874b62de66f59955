// sample_state_test.go tests how a sampled generation builds each sample's past for the pipeline: the generated-token counts of the presence and frequency penalties, and the seen set (prompt included) of the repetition penalty.

package minigpt

import (
	"context"
	"math"
	"slices"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// Through whole generations (several samples, past the block size), every
// step's trace must show the penalties computed from that sample's own
// past as OpenAI and Hugging Face define it: presence and frequency from
// the counts of the tokens generated so far (the prompt does not count:
// at the first step they change nothing), the repetition penalty on every
// token of the prompt and of the generated text. Each candidate's
// probability after the penalties and after the repetition penalty is
// recomputed here from the raw logits and the sample's tokens, so that the
// counts are checked where they are built, not only where they are used.
// Counts go from 0 to many: 7 ids, 60 tokens. The call runs three times
// (its scratch, kept for the next call, must start empty every time).
func TestPenaltyCountsFollowGeneratedTokens(t *testing.T) {
	cfg := Config{VocabSize: 7, BlockSize: 16, EmbedDim: 8, Heads: 2, Layers: 1}
	m := randomizedModel(t, cfg, 41)
	V := cfg.VocabSize
	prompt := []int{3, 3, 5, 0, 3}
	const presence, frequency, repetition = 0.7, 0.35, 1.6
	o := GenerateOptions{MaxNewTokens: 60, N: 3, Seed: 8, PresencePenalty: presence, FrequencyPenalty: frequency,
		RepetitionPenalty: repetition, Trace: true, TraceTopN: V}
	res, err := m.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		again, err := m.Generate(context.Background(), prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range res {
			if !slices.Equal(again[i].IDs, res[i].IDs) {
				t.Fatalf("sample %d: %v, then %v on the same call again", i, res[i].IDs, again[i].IDs)
			}
		}
	}
	softmax := func(x []float64) []float64 {
		p := make([]float64, len(x))
		kernels.Softmax(p, x)
		return p
	}
	maxCount := 0
	for _, c := range res {
		if len(c.Steps) != len(c.IDs) || len(c.IDs) != o.MaxNewTokens {
			t.Fatalf("sample %d: %d tokens, %d steps", c.Index, len(c.IDs), len(c.Steps))
		}
		for j, st := range c.Steps {
			counts := make([]int, V)
			for _, id := range c.IDs[:j] {
				counts[id]++
			}
			seen := make([]bool, V)
			for _, id := range slices.Concat(prompt, c.IDs[:j]) {
				seen[id] = true
			}
			// The raw logits, recomputed over the window the step saw.
			seq := slices.Concat(prompt, c.IDs[:j])
			w := seq[max(0, len(seq)-cfg.BlockSize):]
			logits, err := m.Logits(w, 1, len(w))
			if err != nil {
				t.Fatal(err)
			}
			raw := logits[(len(w)-1)*V:]
			pen := slices.Clone(raw)
			for id, n := range counts {
				if n > 0 {
					pen[id] -= presence + frequency*float64(n)
				}
				maxCount = max(maxCount, n)
			}
			rep := slices.Clone(pen)
			for id := range rep {
				if seen[id] {
					if rep[id] > 0 {
						rep[id] /= repetition
					} else {
						rep[id] *= repetition
					}
				}
			}
			wantPen, wantRep := softmax(pen), softmax(rep)
			for _, cand := range st.Top {
				if d := math.Abs(cand.Probs[stagePenalties] - wantPen[cand.ID]); d > 1e-12 {
					t.Fatalf("sample %d, step %d, token %d (count %d): probability %v after the penalties, want %v",
						c.Index, j, cand.ID, counts[cand.ID], cand.Probs[stagePenalties], wantPen[cand.ID])
				}
				if d := math.Abs(cand.Probs[stageRepetitionPenalty] - wantRep[cand.ID]); d > 1e-12 {
					t.Fatalf("sample %d, step %d, token %d (seen %v): probability %v after the repetition penalty, want %v",
						c.Index, j, cand.ID, seen[cand.ID], cand.Probs[stageRepetitionPenalty], wantRep[cand.ID])
				}
			}
		}
	}
	if maxCount < 10 {
		t.Fatalf("no token was generated more than %d times: the test does not reach many", maxCount)
	}
}
