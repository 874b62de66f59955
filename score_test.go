package minigpt

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestScoreMatchesReference: every token's log-probability from Score is
// the log-softmax of a plain reference forward pass (refForward) over the
// window that predicts it, within 1e-10, for texts shorter and longer
// than the block at several strides, tied and untied; every token but
// the first is scored exactly once, with the context its window gives;
// and the top-N list is the N most probable.
func TestScoreMatchesReference(t *testing.T) {
	for _, tied := range []bool{false, true} {
		m := randomizedModel(t, tinyConfig(tied), 41)
		T, V := m.Config().BlockSize, m.Config().VocabSize
		for _, n := range []int{2, T, T + 1, 3*T + 2} {
			ids := randomTokens(seeded(uint64(n)), n, V)
			for _, stride := range []int{0, 1, 2, T} {
				scores, err := m.Score(context.Background(), ids, stride, 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(scores) != n-1 {
					t.Fatalf("n %d stride %d: %d scores, want %d", n, stride, len(scores), n-1)
				}
				for k, s := range scores {
					if s.Pos != k+1 || s.Chosen.ID != ids[k+1] || s.Context < 1 || s.Context > T {
						t.Fatalf("n %d stride %d: score %d is %+v", n, stride, k, s)
					}
					if stride == 1 && s.Context != min(s.Pos, T) {
						t.Fatalf("stride 1: token %d saw %d tokens, want %d", s.Pos, s.Context, min(s.Pos, T))
					}
					_, logits := refForward(m, ids[s.Pos-s.Context:s.Pos])
					row := logits[(s.Context-1)*V:]
					lse := math.Inf(-1)
					for _, z := range row[:V] {
						lse = math.Max(lse, z)
					}
					sum := 0.0
					for _, z := range row[:V] {
						sum += math.Exp(z - lse)
					}
					want := row[s.Chosen.ID] - lse - math.Log(sum)
					if math.Abs(s.Logprob-want) > 1e-10 {
						t.Fatalf("tied %v n %d stride %d token %d: logprob %v, reference %v", tied, n, stride, s.Pos, s.Logprob, want)
					}
					for j, c := range s.Top {
						if j > 0 && c.Logprob > s.Top[j-1].Logprob {
							t.Fatalf("top list not in order: %v", s.Top)
						}
						if c.ID == s.Chosen.ID && (c.Logprob != s.Logprob || c.Logprob != s.Chosen.Logprob) {
							t.Fatalf("top list's own token %v, score %v", c, s.Logprob)
						}
					}
				}
			}
		}
	}
}

// TestScoreAgreesWithLoss: with the stride of the block the windows lie
// side by side, and the mean of -Logprob is the loss over them.
func TestScoreAgreesWithLoss(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	T := m.Config().BlockSize
	ids, _ := vocab.Encode(LanternBay[:4*T+1])
	scores, err := m.Score(context.Background(), ids, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	x, y := make([]int, 0, 4*T), make([]int, 0, 4*T)
	for b := 0; b < 4; b++ {
		x = append(x, ids[b*T:(b+1)*T]...)
		y = append(y, ids[b*T+1:(b+1)*T+1]...)
	}
	loss, err := m.loss(x, y, 4, T)
	if err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for _, s := range scores {
		mean -= s.Logprob
	}
	mean /= float64(len(scores))
	if len(scores) != 4*T || math.Abs(mean-loss) > 1e-12 {
		t.Fatalf("Score: %d tokens, mean loss %v; the loss over the windows %v", len(scores), mean, loss)
	}
}

// TestScoreRefusesBadOptions: strides and top-n outside their range and
// ids outside the vocabulary are ErrBadOption.
func TestScoreRefusesBadOptions(t *testing.T) {
	m, _, _ := DefaultModel()
	T, V := m.Config().BlockSize, m.Config().VocabSize
	for _, tc := range []struct {
		ids          []int
		stride, topN int
	}{
		{[]int{1, 2}, -1, 0},
		{[]int{1, 2}, T + 1, 0},
		{[]int{1, 2}, 0, V + 1},
		{[]int{1, V}, 0, 0},
	} {
		if _, err := m.Score(context.Background(), tc.ids, tc.stride, tc.topN); !errors.Is(err, ErrBadOption) {
			t.Errorf("Score(%v, %d, %d) = %v, want ErrBadOption", tc.ids, tc.stride, tc.topN, err)
		}
	}
}
