package minigpt

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkComplete measures tokens/s for n samples generated together
// (one batch of n rows) against the same n samples generated one after
// the other, side by side: the ratio is the batching gain. "short" stays
// inside the block (KV cache); "long" slides the window for most tokens
// (every window recomputed).
func BenchmarkComplete(b *testing.B) {
	m, vocab, err := DefaultModel()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, length := range []struct {
		name string
		n    int
	}{{"short", 28}, {"long", 200}} {
		for _, n := range []int{1, 4, 16} {
			o := GenerateOptions{MaxNewTokens: length.n, Temperature: 0.8, TopK: 10}
			b.Run(fmt.Sprintf("%s/n=%d/batched", length.name, n), func(b *testing.B) {
				batch := o
				batch.N, batch.Seed = n, 42
				m.Complete(ctx, vocab, "the ", batch) // warm the scratch pool
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Complete(ctx, vocab, "the ", batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*length.n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
			b.Run(fmt.Sprintf("%s/n=%d/serial", length.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for i := range n {
						o := o
						o.Seed = (42 + uint64(i))
						if _, err := m.Complete(ctx, vocab, "the ", o); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(n*length.n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
