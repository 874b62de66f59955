package bpe

// This file holds the benchmarks: training, encoding and decoding tiny
// Shakespeare.

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkTrain trains on tiny Shakespeare (1.1 MB) to each size.
func BenchmarkTrain(b *testing.B) {
	text := shakespeare(b)
	for _, vocab := range []int{512, 1024, 4096} {
		b.Run(fmt.Sprintf("vocab=%d", vocab), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := Train(context.Background(), text, vocab); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode encodes tiny Shakespeare with a tokenizer trained on
// it, and with GPT-2's when MINIGPT_GPT2_FILES names its files.
func BenchmarkEncode(b *testing.B) {
	text := shakespeare(b)
	toks := map[string]*Tokenizer{}
	for _, vocab := range []int{512, 4096} {
		tok, err := Train(context.Background(), text, vocab)
		if err != nil {
			b.Fatal(err)
		}
		toks[fmt.Sprintf("vocab=%d", vocab)] = tok
	}
	names := []string{"vocab=512", "vocab=4096"}
	if gpt2 := gpt2ForBench(b); gpt2 != nil {
		toks["gpt2"] = gpt2
		names = append(names, "gpt2")
	}
	for _, name := range names {
		tok := toks[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			n := 0
			for b.Loop() {
				n = len(tok.Encode(text))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(len(text))/float64(n), "bytes/token")
		})
	}
}

// gpt2ForBench is GPT-2's tokenizer if its files are at hand.
func gpt2ForBench(b *testing.B) *Tokenizer {
	var tok *Tokenizer
	b.Run("load-gpt2", func(b *testing.B) {
		for b.Loop() {
			tok = loadGPT2Files(b)
		}
	})
	return tok
}

// BenchmarkDecode decodes tiny Shakespeare's tokens.
func BenchmarkDecode(b *testing.B) {
	text := shakespeare(b)
	tok, err := Train(context.Background(), text, 4096)
	if err != nil {
		b.Fatal(err)
	}
	ids := tok.Encode(text)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
}
