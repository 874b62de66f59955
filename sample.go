package minigpt

// This file holds the sampler: the pipeline's stages in order over one
// row's logits, and the draw.

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"example.org/minigpt/internal/kernels"
)

// sampler turns one row of logits into a token id. Its buffers are
// allocated once per vocabulary size and reused for every step of every
// sequence of a call.
type sampler struct {
	row   []float64 // (V) filtered logits
	order []int     // (V) ids by descending value
	probs []float64 // (V) the final distribution
	mask  []bool    // (V) the tokens a constraint allows, made by the first constrained step

	// Trace buffers, allocated by the first traced step.
	raw    []float64            // (V) raw probabilities at temperature 1
	stages [numStages][]float64 // (numStages, V) probabilities after each stage
	at     [numStages][]float64 // at[s] is stages[s] or, for a stage that is off, the last one that ran
	active [numStages]bool      // which stages ran in the traced step
	cut    []Stage              // (V) the stage that removed each id
	picked []bool               // (V) scratch of the top-N selection
}

func newSampler(V int) sampler {
	return sampler{row: make([]float64, V), order: make([]int, V), probs: make([]float64, V)}
}

// seqState is what the pipeline needs to know of one sequence's past.
type seqState struct {
	seen   []bool  // (V) tokens anywhere in the sequence, prompt included
	counts []int32 // (V) occurrences in the generated tokens only
}

func (st *seqState) reset(prompt []int) {
	clear(st.seen)
	clear(st.counts)
	for _, id := range prompt {
		st.seen[id] = true
	}
}

func (st *seqState) add(id int) {
	st.seen[id] = true
	st.counts[id]++
}

// choose picks the next token of seq from logits (which it does not
// modify): greedy argmax, or the pipeline and one draw from r, among the
// tokens pl's constraint (if any) allows with left tokens to go. With tr
// not nil it also fills tr's token fields and candidates.
func (s *sampler) choose(logits []float64, seq []int, st *seqState, pl *place, left int, o *GenerateOptions, r *rand.Rand, tr *Step) (int, error) {
	var allowed []bool
	if pl.c != nil {
		if len(s.mask) != len(logits) {
			s.mask = make([]bool, len(logits))
		}
		if err := pl.allowed(left, s.mask); err != nil {
			return 0, err
		}
		allowed = s.mask
	}
	if !o.sampled() {
		row := logits
		if allowed != nil {
			row = s.row[:len(logits)]
			copy(row, logits)
			applyMask(row, allowed)
		}
		id := argmax(row)
		if math.IsInf(row[id], -1) {
			return 0, fmt.Errorf("%w: the constraint leaves no token", ErrBadOption) // AllowedWithin never does
		}
		if tr != nil {
			s.traceGreedy(logits, row, allowed != nil, id, o.TraceTopN, tr)
		}
		return id, nil
	}
	row, err := s.filter(logits, allowed, seq, st, o, tr != nil)
	if err != nil {
		return 0, err
	}
	maxv, sum := kernels.ExpShifted(s.probs, row) // softmax, spelled out for the log-probability
	probs := s.probs[:len(row)]
	for i := range probs {
		probs[i] /= sum
	}
	id := sampleIndex(probs, r.Float64())
	if tr != nil {
		s.trace(logits, id, float64(row[id]-maxv)-kernels.Log(sum), o.TraceTopN, tr)
	}
	return id, nil
}

// filter runs the stages of the pipeline (see GenerateOptions) in order,
// the first keeping only the allowed tokens (when allowed is not nil),
// and returns the filtered logits (-Inf for removed tokens). With trace,
// it records the distribution after each stage and which stage removed
// each token.
func (s *sampler) filter(logits []float64, allowed []bool, seq []int, st *seqState, o *GenerateOptions, trace bool) ([]float64, error) {
	row := s.row[:len(logits)]
	copy(row, logits)
	if trace {
		s.startTrace(logits)
	}
	after := func(stage Stage, on bool) {
		if trace {
			s.mark(stage, on, row)
		}
	}
	on := allowed != nil
	if on {
		applyMask(row, allowed)
	}
	after(stageGrammar, on)
	on = len(o.LogitBias) > 0
	if on {
		applyLogitBias(row, o.LogitBias)
	}
	after(stageLogitBias, on)
	on = o.PresencePenalty != 0 || o.FrequencyPenalty != 0
	if on {
		applyPresenceFrequency(row, st.counts, o.PresencePenalty, o.FrequencyPenalty)
	}
	after(stagePenalties, on)
	t := o.temperature()
	applyTemperature(row, row, t)
	after(stageTemperature, t != 1)
	on = o.RepetitionPenalty != 0 && o.RepetitionPenalty != 1
	if on {
		applyRepetitionPenalty(row, st.seen, o.RepetitionPenalty)
	}
	after(stageRepetitionPenalty, on)
	on = o.NoRepeatNGramSize > 0
	if on {
		applyNoRepeatNGram(row, seq, o.NoRepeatNGramSize)
	}
	after(stageNoRepeatNGram, on)
	on = o.TopK > 0 && o.TopK < len(row)
	if on {
		applyTopK(row, o.TopK, s.order)
	}
	after(stageTopK, on)
	on = o.TopP > 0 && o.TopP < 1
	if on {
		applyTopP(row, o.TopP, s.order, s.probs)
	}
	after(stageTopP, on)
	on = o.MinP > 0
	if on {
		applyMinP(row, o.MinP, s.probs)
	}
	after(stageMinP, on)

	best := math.Inf(-1)
	for _, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			// A tiny temperature or penalty can push a logit past the
			// largest float; the softmax would then be NaN.
			return nil, fmt.Errorf("%w: temperature %v with repetition penalty %v overflows the logits", ErrNonFinite, o.Temperature, o.RepetitionPenalty)
		}
		best = max(best, v)
	}
	if math.IsInf(best, -1) {
		if allowed != nil {
			return nil, fmt.Errorf("%w: the constraint, logit bias and no-repeat n-gram leave no token", ErrBadOption)
		}
		return nil, fmt.Errorf("%w: logit bias and no-repeat n-gram leave no token", ErrBadOption)
	}
	return row, nil
}

// applyMask removes (-Inf) every token allowed does not allow.
func applyMask(row []float64, allowed []bool) {
	for id, ok := range allowed {
		if !ok {
			row[id] = math.Inf(-1)
		}
	}
}

// argmax returns the index of the largest value, the lowest on ties
// (NumPy's argmax).
func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// applyLogitBias adds bias[id] to row[id]. A bias of -100 bans the token
// (-Inf); if any bias is +100, every token without +100 is banned, so
// that the forced tokens are the only candidates (OpenAI's "ban or
// exclusive selection", made exact).
func applyLogitBias(row []float64, bias map[int]float64) {
	force := false
	for id, b := range bias {
		switch {
		case b >= 100:
			force = true
		case b <= -100:
			row[id] = math.Inf(-1)
		default:
			row[id] += b
		}
	}
	if force {
		for id := range row {
			if bias[id] < 100 {
				row[id] = math.Inf(-1)
			}
		}
	}
}

// applyPresenceFrequency is OpenAI's penalty on the generated tokens'
// counts: logit -= presence·[count > 0] + frequency·count.
func applyPresenceFrequency(row []float64, counts []int32, presence, frequency float64) {
	for id, c := range counts {
		if c > 0 {
			row[id] -= float64(float64(c)*frequency) + presence
		}
	}
}

// applyTemperature: row = logits / temperature (row may be logits).
func applyTemperature(row, logits []float64, temperature float64) {
	for i, v := range logits {
		row[i] = v / temperature
	}
}

// applyRepetitionPenalty divides the positive logits of seen tokens by
// penalty and multiplies their negative logits by it (exercise 1).
func applyRepetitionPenalty(row []float64, seen []bool, penalty float64) {
	for id, was := range seen {
		if !was {
			continue
		}
		if row[id] > 0 {
			row[id] /= penalty
		} else {
			row[id] *= penalty
		}
	}
}

// applyNoRepeatNGram bans (-Inf) every token that would complete an
// n-gram already in seq: the token after each earlier occurrence of seq's
// last n-1 tokens (Hugging Face's NoRepeatNGramLogitsProcessor; n = 1
// bans every token of seq).
func applyNoRepeatNGram(row []float64, seq []int, n int) {
	if len(seq) < n {
		return
	}
	prefix := seq[len(seq)-(n-1):]
	for i := 0; i+n-1 < len(seq); i++ {
		if slices.Equal(seq[i:i+n-1], prefix) {
			row[seq[i+n-1]] = math.Inf(-1)
		}
	}
}

// sortByValue fills order with the ids of row by descending value, lower
// id first among equals, so that every cut is deterministic.
func sortByValue(order []int, row []float64) {
	order = order[:len(row)]
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(row[b], row[a]); c != 0 {
			return c
		}
		return a - b
	})
}

// applyTopK keeps exactly the k largest logits (ties at the boundary to
// the lower id) and sets the rest to -Inf.
func applyTopK(row []float64, k int, order []int) {
	sortByValue(order, row)
	for _, id := range order[k:len(row)] {
		row[id] = math.Inf(-1)
	}
}

// applyTopP keeps the smallest prefix of tokens, by descending
// probability, whose cumulative probability reaches p (the lessons'
// searchsorted(csum, p) + 1: the token that crosses p is kept), and sets
// the rest to -Inf.
func applyTopP(row []float64, p float64, order []int, probs []float64) {
	sortByValue(order, row)
	probs = probs[:len(row)]
	kernels.Softmax(probs, row)
	cum := 0.0
	keep := len(row)
	for i, id := range order[:len(row)] {
		cum += probs[id]
		if cum >= p {
			keep = i + 1
			break
		}
	}
	for _, id := range order[keep:len(row)] {
		row[id] = math.Inf(-1)
	}
}

// applyMinP keeps the tokens whose probability is at least minP times
// the largest (Hugging Face's MinPLogitsWarper: remove probs < min_p ·
// max prob), which always keeps the most probable token.
func applyMinP(row []float64, minP float64, probs []float64) {
	probs = probs[:len(row)]
	kernels.Softmax(probs, row)
	top := 0.0
	for _, p := range probs {
		top = max(top, p)
	}
	threshold := float64(minP * top)
	for id, p := range probs {
		if p < threshold {
			row[id] = math.Inf(-1)
		}
	}
}

// sampleIndex picks an index from probs with one uniform number u in
// [0, 1), like NumPy's Generator.choice: the first index whose normalised
// cumulative probability is strictly above u (searchsorted(cdf, u,
// side='right')). Zero-probability entries are never chosen.
func sampleIndex(probs []float64, u float64) int {
	total := 0.0
	for _, p := range probs {
		total += p
	}
	cum, last := 0.0, 0
	for i, p := range probs {
		if p == 0 {
			continue
		}
		cum += p
		last = i
		if cum/total > u {
			return i
		}
	}
	return last // u within rounding of 1
}

// startTrace computes the raw distribution and resets the stage records.
func (s *sampler) startTrace(logits []float64) {
	V := len(logits)
	if len(s.raw) != V {
		s.raw = make([]float64, V)
		for i := range s.stages {
			s.stages[i] = make([]float64, V)
		}
		s.cut = make([]Stage, V)
		s.picked = make([]bool, V)
	}
	kernels.Softmax(s.raw, logits)
	s.at[StageRaw] = s.raw
	s.active = [numStages]bool{StageRaw: true}
	clear(s.cut)
}

// mark records the distribution after stage (recomputed only if the
// stage ran) and the tokens it removed.
func (s *sampler) mark(stage Stage, on bool, row []float64) {
	s.active[stage] = on
	if !on {
		s.at[stage] = s.at[stage-1]
		return
	}
	kernels.Softmax(s.stages[stage], row)
	s.at[stage] = s.stages[stage]
	for id, v := range row {
		if math.IsInf(v, -1) && s.cut[id] == StageRaw {
			s.cut[id] = stage
		}
	}
}

// trace fills tr for the chosen id after a sampled step.
func (s *sampler) trace(logits []float64, id int, logprob float64, topN int, tr *Step) {
	tr.Logprob = logprob
	tr.Active = s.active
	s.candidates(logits, id, topN, tr)
}

// traceGreedy fills tr after a greedy step, which chose id from row: the
// logits themselves, or, when constrained, them masked (the one stage
// greedy decoding runs).
func (s *sampler) traceGreedy(logits, row []float64, constrained bool, id, topN int, tr *Step) {
	s.startTrace(logits)
	s.mark(stageGrammar, constrained, row)
	for st := stageLogitBias; st < numStages; st++ {
		s.at[st] = s.at[stageGrammar]
	}
	tr.Active = s.active
	s.candidates(logits, id, topN, tr)
	maxv, lse := logNormalizer(row)
	tr.Logprob = float64(row[id]-maxv) - lse
}

// logNormalizer returns max(logits) and log Σ exp(x - max), the sum in
// index order with the deterministic exp and log.
func logNormalizer(logits []float64) (maxv, lse float64) {
	maxv = math.Inf(-1)
	for _, v := range logits {
		maxv = max(maxv, v)
	}
	sum := 0.0
	for _, v := range logits {
		sum += kernels.Exp(v - maxv)
	}
	return maxv, kernels.Log(sum)
}

// candidates fills tr.Chosen (id's record) and tr.Top (the topN most
// probable ids under the raw distribution, ties to the lower id) from the
// recorded stages.
func (s *sampler) candidates(logits []float64, id, topN int, tr *Step) {
	maxv, lse := logNormalizer(logits)
	fill := func(c *Candidate, id int) {
		c.ID, c.Logprob, c.CutBy = id, float64(logits[id]-maxv)-lse, s.cut[id]
		for st := range c.Probs {
			c.Probs[st] = s.at[st][id]
		}
	}
	fill(&tr.Chosen, id)
	if cap(tr.Top) < topN {
		tr.Top = make([]Candidate, topN, len(logits))
	}
	tr.Top = tr.Top[:topN]
	clear(s.picked)
	for j := range tr.Top {
		best := -1
		for id, p := range s.raw {
			if !s.picked[id] && (best < 0 || p > s.raw[best]) {
				best = id
			}
		}
		s.picked[best] = true
		fill(&tr.Top[j], best)
	}
}
