package minigpt

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"example.org/minigpt/internal/kernels"
)

// beamSearch runs Hugging Face's beam search (num_beams = o.NumBeams,
// length_penalty = o.LengthPenalty, early_stopping=False) on the raw
// log-probabilities and returns the n best hypotheses, best first. A
// stop string plays the part of Hugging Face's end-of-sequence token: a
// beam that completes one becomes a finished hypothesis of its length.
func (m *Model) beamSearch(ctx context.Context, prompt []int, o *GenerateOptions, stop []string, chars []rune, n int) ([]Completion, error) {
	var stops [][]int
	if len(stop) > 0 {
		stops = newStopper(stop, chars, 0, false).stops
	}
	return m.beamSearchK(ctx, prompt, max(o.NumBeams, 1), o.MaxNewTokens, o.LengthPenalty, stops, n, o.noCache, o)
}

// hypothesis is a finished beam.
type hypothesis struct {
	ids    []int // generated tokens, the stop string included
	score  float64
	finish FinishReason
	stop   int // length of the stop string at the end of ids
}

// beamSearchK searches with K beams. Like Hugging Face, it runs the
// logits processors of o (when not nil: logit bias, presence/frequency
// penalties, repetition penalty, no-repeat n-gram, in the pipeline's
// order) on each beam's log-probabilities; the sampling warpers
// (temperature, top-k, top-p, min-p) do not apply.
func (m *Model) beamSearchK(ctx context.Context, prompt []int, K, maxNew int, lengthPenalty float64, stops [][]int, n int, noCache bool, o *GenerateOptions) ([]Completion, error) {
	m.use.RLock()
	defer m.use.RUnlock()
	V, P := m.cfg.VocabSize, len(prompt)
	dec := newDecoder(m.cfg, K)
	seqs, next := make([][]int, K), make([][]int, K)
	for b := range seqs {
		seqs[b] = append(make([]int, 0, P+maxNew), prompt...)
		next[b] = make([]int, 0, P+maxNew)
	}
	// Every beam starts as the prompt; only beam 0 may be continued at the
	// first step, so that the K beams are K different sequences (Hugging
	// Face starts the others at -1e9).
	scores := make([]float64, K)
	for b := 1; b < K; b++ {
		scores[b] = math.Inf(-1)
	}
	logp := make([]float64, K*V)
	order := make([]int, K*V)
	parents, tokens, nextScores := make([]int, K), make([]int, K), make([]float64, K)
	var finished []hypothesis
	// score of a hypothesis of sum log-probability sum and length L.
	score := func(sum float64, L int) float64 {
		if L == 0 {
			return sum
		}
		return sum / math.Pow(float64(L), lengthPenalty)
	}
	addHyp := func(h hypothesis) {
		finished = append(finished, h)
		slices.SortStableFunc(finished, func(a, b hypothesis) int { return cmp.Compare(b.score, a.score) })
		if len(finished) > K {
			finished = finished[:K]
		}
	}
	endsWithStop := func(gen []int) int {
		for _, s := range stops {
			if len(gen) >= len(s) && slices.Equal(gen[len(gen)-len(s):], s) {
				return len(s)
			}
		}
		return 0
	}
	// The deterministic stages of the pipeline, on one beam's
	// log-probabilities.
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	process := func(lp []float64, seq []int) {
		st.reset(seq)
		for _, id := range seq[P:] {
			st.counts[id]++
		}
		if len(o.LogitBias) > 0 {
			applyLogitBias(lp, o.LogitBias)
		}
		if o.PresencePenalty != 0 || o.FrequencyPenalty != 0 {
			applyPresenceFrequency(lp, st.counts, o.PresencePenalty, o.FrequencyPenalty)
		}
		if o.RepetitionPenalty != 0 && o.RepetitionPenalty != 1 {
			applyRepetitionPenalty(lp, st.seen, o.RepetitionPenalty)
		}
		if o.NoRepeatNGramSize > 0 {
			applyNoRepeatNGram(lp, seq, o.NoRepeatNGramSize)
		}
	}
	running := true
	for step := 0; step < maxNew && running; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		logits := dec.next(m, seqs, noCache)
		if !isFinite(logits) {
			return nil, fmt.Errorf("%w at position %d", ErrNonFinite, len(seqs[0]))
		}
		for b := range K {
			row := logits[b*V : (b+1)*V]
			maxv, sum := math.Inf(-1), 0.0
			for _, v := range row {
				maxv = max(maxv, v)
			}
			for _, v := range row {
				sum += kernels.Exp(v - maxv)
			}
			lse := kernels.Log(sum)
			lp := logp[b*V : (b+1)*V]
			for v, x := range row {
				lp[v] = float64(x-maxv) - lse
			}
			if o != nil {
				process(lp, seqs[b])
			}
			for v := range lp {
				lp[v] += scores[b]
			}
		}
		// Candidates (beam·V + token) by descending score, the lower
		// (beam, token) first among equals.
		sortByValue(order, logp)
		filled := 0
		for rank, c := range order[:min(2*K, len(order))] {
			b, tok := c/V, c%V
			if math.IsInf(logp[c], -1) {
				break
			}
			gen := append(seqs[b][P:len(seqs[b]):len(seqs[b])], tok) // a copy: the cap forces it
			if s := endsWithStop(gen); s > 0 {
				// Hugging Face keeps an end-of-sequence candidate only if it
				// ranks among the best num_beams.
				if rank < K {
					addHyp(hypothesis{ids: gen, score: score(logp[c], len(gen)), finish: FinishStop, stop: s})
				}
				continue
			}
			parents[filled], tokens[filled], nextScores[filled] = b, tok, logp[c]
			if filled++; filled == K {
				break
			}
		}
		if filled == 0 {
			if len(finished) == 0 {
				return nil, fmt.Errorf("%w at position %d: logit bias and no-repeat n-gram leave no token for any beam", ErrAllBanned, len(seqs[0]))
			}
			break // every live beam is banned: the finished ones are the answer
		}
		if filled < K {
			// Fewer than K live continuations (a tiny vocabulary): keep
			// the rest dead.
			for b := filled; b < K; b++ {
				parents[b], tokens[b], nextScores[b] = parents[0], tokens[0], math.Inf(-1)
			}
		}
		for b := range K {
			next[b] = append(append(next[b][:0], seqs[parents[b]]...), tokens[b])
		}
		seqs, next = next, seqs
		copy(scores, nextScores)
		dec.reorder(parents[:K])
		// Hugging Face's stopping rule (early_stopping=False): done once K
		// hypotheses are finished and the best running beam, at its
		// current length, cannot beat the worst of them.
		if len(finished) == K {
			L := len(seqs[0]) - P
			running = score(scores[0], L) > finished[K-1].score
		}
	}
	if running {
		for b := range K {
			if !math.IsInf(scores[b], -1) {
				addHyp(hypothesis{ids: slices.Clone(seqs[b][P:]), score: score(scores[b], len(seqs[b])-P), finish: FinishLength})
			}
		}
	}
	if len(finished) > n {
		finished = finished[:n]
	}
	res := make([]Completion, len(finished))
	for i, h := range finished {
		res[i] = Completion{Index: i, IDs: h.ids[:len(h.ids)-h.stop], Finish: h.finish, Score: h.score}
	}
	return res, nil
}
