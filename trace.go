package minigpt

// This file holds the per-token trace: the Step of each generated (or
// scored) token, its Candidates and the pipeline's Stages.

// Stage names a step of the sampling pipeline (see GenerateOptions), in
// the order the stages run, by their String names: raw, grammar (the
// Constraint), logit-bias, penalties (presence and frequency), temperature, repetition-penalty,
// no-repeat-ngram, top-k, top-p, min-p. Candidate.Probs is indexed by
// Stage.
type Stage uint8

// StageRaw is the model's distribution at temperature 1 before any stage;
// as Candidate.CutBy it means "not removed". The stages after it are
// numbered in pipeline order, the last one len(Candidate.Probs)-1.
const (
	StageRaw Stage = iota
	stageGrammar
	stageLogitBias
	stagePenalties
	stageTemperature
	stageRepetitionPenalty
	stageNoRepeatNGram
	stageTopK
	stageTopP
	stageMinP
	numStages // the number of stages, StageRaw included
)

var stageNames = [numStages]string{"raw", "grammar", "logit-bias", "penalties", "temperature", "repetition-penalty", "no-repeat-ngram", "top-k", "top-p", "min-p"}

// String returns the stage's name as the CLI flags spell it ("top-k").
func (s Stage) String() string {
	if s < numStages {
		return stageNames[s]
	}
	return "stage?"
}

// Candidate is one token of a step's trace.
type Candidate struct {
	// ID is the token id.
	ID int
	// Logprob is the natural log of the token's probability under the
	// model's raw distribution at temperature 1.
	Logprob float64
	// Probs[s] is its probability after stage s (Probs[StageRaw] the raw
	// distribution's; a stage that is off repeats the one before, 0 once
	// the token is removed); the last is the distribution drawn from.
	Probs [numStages]float64
	// CutBy is the stage that removed the token, or StageRaw if it
	// survived them all.
	CutBy Stage
}

// Step is the trace of one generated token, or of one scored one
// (Model.Score: no stage runs). A streamed Step's slices are valid only
// during the Stream call; Clone copies.
type Step struct {
	// Pos is the token's index in the sequence, prompt included.
	Pos int
	// Chosen is the chosen token's candidate record: its ID, and its
	// Logprob under the raw distribution.
	Chosen Candidate
	// Logprob is the natural log of the chosen token's probability under
	// the final, filtered distribution it was drawn from. Greedy decoding
	// and scoring report the raw distribution's (no stage runs).
	Logprob float64
	// Active reports which stages ran (Active[StageRaw] is always true).
	Active [numStages]bool
	// Attention, with GenerateOptions.TraceAttention, holds the weights of
	// the position that chose the token over the Context positions of the
	// window it saw: Attention[(l*Heads+h)*Context+s] is layer l head h's
	// weight on position s (0 the window's first).
	Attention []float64
	// Context is the number of positions the prediction saw: with
	// TraceAttention in generation, and in scoring; 0 otherwise.
	Context int
	// Top lists the most probable tokens under the raw distribution
	// (GenerateOptions.TraceTopN, Score's topN of them), most probable
	// first (ties to the lower id).
	Top []Candidate
}

// setAttention sets s's attention weights to those of a pass over a
// window of n positions: att holds, per layer and head, BlockSize (T)
// weights of which the first n are the window's.
func (s *Step) setAttention(att []float64, n, T int) {
	s.Context = n
	s.Attention = s.Attention[:0]
	for lh := 0; lh*T < len(att); lh++ {
		s.Attention = append(s.Attention, att[lh*T:lh*T+n]...)
	}
}

// Clone returns a deep copy of s.
func (s *Step) Clone() Step {
	c := *s
	c.Top = append([]Candidate(nil), s.Top...)
	c.Attention = append([]float64(nil), s.Attention...)
	return c
}

// copyStep copies src into dst, reusing dst's Top buffer.
func copyStep(dst, src *Step) {
	top, att := dst.Top, dst.Attention
	*dst = *src
	dst.Top = append(top[:0], src.Top...)
	dst.Attention = append(att[:0], src.Attention...)
	if src.Attention == nil {
		dst.Attention = nil
	}
}
