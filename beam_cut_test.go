package minigpt

// A beam search cut short keeps what it found, alone and in a Batch.

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBeamSearchCutShortKeepsItsBeams stops a search of 4 beams that
// would run for 100,000 tokens after 40 ms. Until it, no stop string and
// no early end: the beams it returns are those of a search whose length
// limit was the tokens it reached (each running beam then ends as a
// hypothesis at the last step), which the Hugging Face reference
// computes. It used to return no completion at all.
func TestBeamSearchCutShortKeepsItsBeams(t *testing.T) {
	m, vocab, b := newTestBatch(t, 8)
	prompt := "the "
	ids, err := vocab.Encode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{MaxNewTokens: 100_000, NumBeams: 4, N: 2}
	for _, where := range []string{"alone", "batch"} {
		t.Run(where, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
			defer cancel()
			streamed := 0
			o := o
			o.Stream = func(*Completion) error { streamed++; return nil }
			var got []Completion
			if where == "alone" {
				got, err = m.Complete(ctx, vocab, prompt, o)
			} else {
				got, err = b.Complete(ctx, vocab, prompt, o)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want the deadline's", err)
			}
			if len(got) != 2 {
				t.Fatalf("%d completions, want the best 2 beams", len(got))
			}
			if streamed != 0 {
				t.Errorf("%d chunks streamed after the deadline", streamed)
			}
			steps := len(got[0].IDs)
			if steps == 0 {
				t.Skip("the machine took the whole 40 ms to start: nothing to compare")
			}
			want := hfBeam(m.Config().VocabSize, ids, hfOptions{K: 4, maxNew: steps, lengthPenalty: 0}, modelLogprobs(t, m))
			if d := firstBeamDifference(got, want[:2]); d != "" {
				t.Fatalf("cut after %d tokens: %s", steps, d)
			}
			t.Logf("cut after %d tokens", steps)
		})
	}
}
