package minigpt

import (
	"context"
	"testing"
)

// TestNoStaleAttention: a traced call without TraceAttention gets steps
// without attention weights, even when the pooled buffers it runs on
// served a call with them before (they would be another call's weights).
func TestNoStaleAttention(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	run := func(attention bool) (withWeights int) {
		_, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{
			MaxNewTokens: 5, Seed: 1, TraceTopN: 1, TraceAttention: attention, Trace: true,
			Stream: func(c *Completion) error {
				for _, s := range c.Steps {
					if len(s.Attention) > 0 || s.Context > 0 {
						withWeights++
					}
				}
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return withWeights
	}
	if n := run(true); n != 5 {
		t.Fatalf("with TraceAttention: %d of 5 steps have weights", n)
	}
	if n := run(false); n != 0 {
		t.Errorf("without TraceAttention: %d of 5 steps have weights", n)
	}
}
