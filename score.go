package minigpt

// This file holds scoring: how probable the model finds each token of a
// given text.

import (
	"context"
	"fmt"

	"example.org/minigpt/internal/kernels"

	"example.org/minigpt/internal/decode"
)

// scoreBatch is the number of context windows scored in one pass.
const scoreBatch = 8

// Score returns, for every token of ids but the first, its Step: the
// token (Chosen.ID) at Pos, its log-probability (Logprob, and
// Chosen.Logprob) under the model's raw distribution given the Context
// tokens before it, as many as the context window holds, and the topN
// most probable tokens there (Top, most probable first, ties to the lower
// id; topN in [0, vocabulary size]). Every stage's probability in a
// Candidate is the raw one, and only StageRaw is Active: no stage runs.
//
// A text longer than the block is read in windows of BlockSize tokens
// moving by stride (Hugging Face's perplexity stride), each token scored
// once, in the first window that predicts it: stride 0 means BlockSize,
// windows side by side, the cheapest, whose mean -Logprob is the mean
// cross-entropy of those windows; 1 gives every token the most context
// the model can see, at the most cost. It must be in [0, BlockSize].
// Cancelling ctx stops between passes.
func (m *Model) Score(ctx context.Context, ids []int, stride, topN int) ([]Step, error) {
	if err := checkCall(m, ctx); err != nil {
		return nil, err
	}
	T, V := m.cfg.BlockSize, m.cfg.VocabSize
	switch {
	case stride < 0 || stride > T:
		return nil, fmt.Errorf("%w: stride %d is outside [0, block size %d]", ErrBadOption, stride, T)
	case topN < 0 || topN > V:
		return nil, fmt.Errorf("%w: top-n %d is outside [0, vocabulary size %d]", ErrBadOption, topN, V)
	}
	if err := m.checkTokens(ids, "text"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	if stride == 0 {
		stride = T
	}
	m.use.RLock()
	defer m.use.RUnlock()
	// The windows: inputs ids[b:b+T] predict tokens b+1 .. b+T; each
	// scores the tokens after the last one an earlier window scored.
	type window struct{ b, from, to int } // scores tokens [from, to)
	var windows []window
	for b, next := 0, 1; next < len(ids); b += stride {
		to := min(b+T, len(ids)-1) + 1
		if to > next {
			windows = append(windows, window{b, next, to})
			next = to
		}
	}
	out := make([]Step, 0, max(len(ids)-1, 0))
	d, p := m.cfg.newDecoder(scoreBatch), &pass{m: m}
	var order []int
	for w0 := 0; w0 < len(windows); w0 += scoreBatch {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		d.Begin()
		ws := windows[w0:min(w0+scoreBatch, len(windows))]
		for i, w := range ws {
			// Positions from-b-1 .. to-b-2 of the window give the logits.
			d.Add(decode.Seq{Cache: d.KV.Slot(i), IDs: ids[w.b : w.to-1], T0: 0, T1: w.to - 1 - w.b, Out0: w.from - 1 - w.b})
		}
		d.Run(p)
		for i, w := range ws {
			for tok := w.from; tok < w.to; tok++ {
				logits := d.LogitsAt(i, tok-1-w.b)
				maxv, lse := logNormalizer(logits)
				candidate := func(id int) Candidate {
					c := Candidate{ID: id, Logprob: float64(logits[id]-maxv) - lse}
					p := kernels.Exp(c.Logprob)
					for st := range c.Probs {
						c.Probs[st] = p
					}
					return c
				}
				st := Step{Pos: tok, Chosen: candidate(ids[tok]), Context: tok - w.b, Active: [numStages]bool{StageRaw: true}}
				st.Logprob = st.Chosen.Logprob
				if topN > 0 {
					if order == nil {
						order = make([]int, V)
					}
					sortByValue(order, logits)
					st.Top = make([]Candidate, topN)
					for j, id := range order[:topN] {
						st.Top[j] = candidate(id)
					}
				}
				out = append(out, st)
			}
		}
	}
	return out, nil
}
