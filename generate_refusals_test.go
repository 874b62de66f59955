package minigpt

// Tests of what generation refuses: bad options, logits that overflow or
// are not finite, and callbacks that fail.

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestGenerateRejectsBadOptions(t *testing.T) {
	m, _ := NewModel(tinyConfig(false), 1)
	vocab, _ := NewVocab("abcdefg")
	for _, tc := range []struct {
		name   string
		prompt string
		o      GenerateOptions
		want   string
	}{
		{"negative tokens", "ab", GenerateOptions{MaxNewTokens: -1, Greedy: true}, "new token count -1"},
		{"negative temperature", "ab", GenerateOptions{Temperature: -0.5}, "temperature -0.5"},
		{"NaN temperature", "ab", GenerateOptions{Temperature: math.NaN()}, "temperature NaN"},
		{"infinite temperature", "ab", GenerateOptions{Temperature: math.Inf(1)}, "temperature +Inf"},
		{"negative k", "ab", GenerateOptions{Temperature: 1, TopK: -2}, "top-k -2"},
		{"p above 1", "ab", GenerateOptions{Temperature: 1, TopP: 1.5}, "top-p 1.5"},
		{"negative p", "ab", GenerateOptions{Temperature: 1, TopP: -0.1}, "top-p -0.1"},
		{"NaN p", "ab", GenerateOptions{Temperature: 1, TopP: math.NaN()}, "top-p NaN"},
		{"negative penalty", "ab", GenerateOptions{Temperature: 1, RepetitionPenalty: -1}, "repetition penalty -1"},
		{"infinite penalty", "ab", GenerateOptions{Temperature: 1, RepetitionPenalty: math.Inf(1)}, "repetition penalty +Inf"},
		{"empty prompt", "", GenerateOptions{Greedy: true}, "empty prompt"},
		{"unknown character", "abz", GenerateOptions{Greedy: true}, `'z' (U+007A) at character 2 (counting from 0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Complete(context.Background(), vocab, tc.prompt, tc.o)
			if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Complete error = %v, want ErrBadOption mentioning %q", err, tc.want)
			}
			// Generate takes the same options and refuses them alike.
			ids, encErr := vocab.Encode(tc.prompt)
			if encErr != nil {
				return
			}
			_, err = m.Generate(context.Background(), ids, tc.o)
			if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate error = %v, want ErrBadOption mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := m.Complete(context.Background(), nil, "ab", GenerateOptions{Greedy: true}); !errors.Is(err, ErrBadOption) {
		t.Fatalf("nil vocabulary: error %v", err)
	}
	// A huge token count is not allocated up front: cancel after a few.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	if _, err := m.Generate(ctx, []int{1}, GenerateOptions{MaxNewTokens: 1 << 62, Greedy: true, Stream: func(c *Completion) error {
		if n += len(c.IDs); n >= 5 {
			cancel()
		}
		return nil
	}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("huge token count: error %v", err)
	}
	if _, err := m.Generate(context.Background(), []int{1, 9}, GenerateOptions{Greedy: true}); err == nil || !strings.Contains(err.Error(), "token id 9 at index 1 (counting from 0)") {
		t.Fatalf("out-of-range prompt id: error %v", err)
	}
}

func TestGenerateStopsOnCallbackErrorAndCancel(t *testing.T) {
	m := randomizedModel(t, tinyConfig(false), 1)
	stop := errors.New("enough")
	var got []int
	out, err := m.Generate(context.Background(), []int{1}, GenerateOptions{MaxNewTokens: 10, Greedy: true, Stream: func(c *Completion) error {
		got = append(got, c.IDs...)
		if len(got) == 3 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) || len(out) != 1 || len(out[0].IDs) != 3 || !slices.Equal(out[0].IDs, got) {
		t.Fatalf("callback stop: out %v, streamed %v, err %v", out, got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, []int{1}, GenerateOptions{MaxNewTokens: 10, Greedy: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err %v", err)
	}
}

func TestGenerateRefusesOverflowingTemperature(t *testing.T) {
	m := randomizedModel(t, tinyConfig(false), 1)
	for _, o := range []GenerateOptions{
		{MaxNewTokens: 3, Temperature: 5e-324, Seed: 1},
		{MaxNewTokens: 3, Temperature: 1, RepetitionPenalty: 1e-320, Seed: 1},
	} {
		_, err := m.Generate(context.Background(), []int{1, 2, 3, 4, 5, 6}, o)
		if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "overflows the logits") {
			t.Errorf("temperature %v, penalty %v: err = %v, want ErrNonFinite", o.Temperature, o.RepetitionPenalty, err)
		}
	}
}

func TestGenerateRefusesNonFiniteLogits(t *testing.T) {
	m := randomizedModel(t, tinyConfig(false), 1)
	m.Params()[len(m.Params())-1] = math.Inf(1) // a head bias
	_, err := m.Generate(context.Background(), []int{1}, GenerateOptions{MaxNewTokens: 3, Greedy: true})
	if !errors.Is(err, ErrNonFinite) {
		t.Fatalf("err = %v, want ErrNonFinite", err)
	}
}
