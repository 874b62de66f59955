package minigpt

// This file holds scoring: how probable the model finds each token of a
// given text.

import (
	"context"
	"fmt"
	"math"
)

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Stride is how far the context window moves between passes over a
	// text longer than the block (Hugging Face's perplexity stride): 0
	// means BlockSize, windows side by side, the cheapest; 1 gives every
	// token the most context the model can see, at the most cost. It
	// must be in [0, BlockSize].
	Stride int
	// TopN is the number of most probable tokens listed at each position
	// (TokenScore.Top), in [0, vocabulary size].
	TopN int
}

// TokenScore is the model's view of one token of a scored text.
type TokenScore struct {
	// Pos is the token's index in the text; ID is the token.
	Pos, ID int
	// Logprob is the natural log of the token's probability given the
	// Context tokens before it; its surprisal in bits is -Logprob/ln 2.
	Logprob float64
	// Context is the number of tokens the prediction saw (at most the
	// block size).
	Context int
	// Top lists the TopN most probable tokens at this position, most
	// probable first (ties to the lower id), with their log-probabilities.
	Top []TokenLogprob
}

// TokenLogprob is a token and its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float64
}

// Scores summarises a Score: over N tokens, the mean loss (the mean of
// -Logprob, in nats), its perplexity exp(loss), and bits per character,
// loss/ln 2.
type Scores struct {
	N                        int
	Loss, Perplexity, BitsPC float64
}

// Summarize returns the summary of scores.
func Summarize(scores []TokenScore) Scores {
	s := Scores{N: len(scores)}
	if s.N == 0 {
		return s
	}
	total := 0.0
	for _, t := range scores {
		total -= t.Logprob
	}
	s.Loss = total / float64(s.N)
	s.Perplexity = math.Exp(s.Loss)
	s.BitsPC = s.Loss / math.Ln2
	return s
}

// scoreBatch is the number of context windows scored in one pass.
const scoreBatch = 8

// Score returns, for every token of ids but the first, its
// log-probability under the model given the tokens before it, as many as
// the context window holds. A text longer than the block is read in
// windows of BlockSize tokens moving by opts.Stride, each token scored
// once, in the first window that predicts it (as Hugging Face's
// perplexity computation does); with Stride = BlockSize the mean of
// -Logprob equals Model.Loss over the windows laid side by side.
// Cancelling ctx stops between passes.
func (m *Model) Score(ctx context.Context, ids []int, opts ScoreOptions) ([]TokenScore, error) {
	T, V := m.cfg.BlockSize, m.cfg.VocabSize
	switch {
	case opts.Stride < 0 || opts.Stride > T:
		return nil, fmt.Errorf("%w: stride %d is outside [0, block size %d]", ErrBadOption, opts.Stride, T)
	case opts.TopN < 0 || opts.TopN > V:
		return nil, fmt.Errorf("%w: top-n %d is outside [0, vocabulary size %d]", ErrBadOption, opts.TopN, V)
	}
	if err := m.checkTokens(ids, "text"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	stride := opts.Stride
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
	out := make([]TokenScore, 0, max(len(ids)-1, 0))
	d := newDecoder(m.cfg, scoreBatch)
	s := newSampler(V)
	var order []int
	for w0 := 0; w0 < len(windows); w0 += scoreBatch {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		d.begin()
		ws := windows[w0:min(w0+scoreBatch, len(windows))]
		for i, w := range ws {
			// Positions from-b-1 .. to-b-2 of the window give the logits.
			d.add(rowSeq{slot: i, ids: ids[w.b : w.to-1], t0: 0, t1: w.to - 1 - w.b, out0: w.from - 1 - w.b})
		}
		d.run(m)
		for i, w := range ws {
			sq := &d.seqs[i]
			for tok := w.from; tok < w.to; tok++ {
				r := sq.outRow + tok - 1 - w.b - sq.out0
				logits := d.a.logits[r*V : (r+1)*V]
				lp := LogSoftmax(s.row, logits)
				ts := TokenScore{Pos: tok, ID: ids[tok], Logprob: lp[ids[tok]], Context: tok - w.b}
				if opts.TopN > 0 {
					if order == nil {
						order = make([]int, V)
					}
					sortByValue(order, logits)
					for _, id := range order[:opts.TopN] {
						ts.Top = append(ts.Top, TokenLogprob{id, lp[id]})
					}
				}
				out = append(out, ts)
			}
		}
	}
	return out, nil
}
