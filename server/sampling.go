package server

// This file owns the knobs of one generation in the server's terms
// (sampling) and their rules that need no model: which combine, the rows
// a request takes, and whether a ban leaves a first token.

import (
	"slices"

	"example.org/minigpt/server/internal/api"
)

// sampling is every knob of one generation, in the server's terms; the
// adapter in engine.go maps it onto the library.
type sampling struct {
	maxTokens         int
	temperature       float64 // 0 means greedy
	topP              float64 // 1 means off
	topK              int     // 0 means off
	minP              float64 // 0 means off
	repetitionPenalty float64 // 1 means off
	presencePenalty   float64
	frequencyPenalty  float64
	logitBias         map[int]float64 // token id -> added to its logit
	noRepeatNgram     int             // 0 means off
	numBeams          int             // beam search with this many beams; 0 and 1 mean off
	lengthPenalty     float64         // beam search's length exponent
	stop              []string
	seed              uint64
	n                 int     // samples per prompt
	logprobs          int     // alternatives per token; -1 means no logprobs
	trace             int     // candidates per step in the playground trace; 0 means off
	attention         int     // with trace_attention: layers × heads × block size, the most weights a step holds; 0 means off
	format            *format // the output's format (guided.go); nil means free text
}

// rowsOf is the number of batch rows a generation with sp takes: one per
// beam, or per sample.
func rowsOf(sp *sampling) int {
	if sp.numBeams > 1 {
		return sp.numBeams
	}
	return sp.n
}

// rowsParam is the field that sets rowsOf(sp).
func rowsParam(sp *sampling) string {
	if sp.numBeams > 1 {
		return "num_beams"
	}
	return "n"
}

// unsupported returns a 400 for a combination of fields the library
// cannot honour, naming the field, or nil. A knob that would change the
// result but that the chosen decoding skips is refused rather than
// silently ignored: greedy decoding (temperature 0, as cmd/generate
// -greedy) takes the argmax of the raw logits, so the logits processors
// (bias, penalties, no-repeat n-gram) would be lost; beam search applies
// those processors to each beam, as Hugging Face does, but no warper
// (temperature, top-k, top-p, min-p). (The warpers are no-ops for greedy
// decoding: the most likely token always survives them.)
func unsupported(sp *sampling) *api.Error {
	logitKnob := func() string {
		switch {
		case len(sp.logitBias) > 0:
			return "logit_bias"
		case sp.presencePenalty != 0:
			return "presence_penalty"
		case sp.frequencyPenalty != 0:
			return "frequency_penalty"
		case sp.repetitionPenalty != 1:
			return "repetition_penalty"
		case sp.noRepeatNgram > 0:
			return "no_repeat_ngram_size"
		}
		return ""
	}
	if sp.numBeams > 1 {
		knob := ""
		switch {
		case sp.temperature != 1:
			knob = "temperature"
		case sp.topK > 0:
			knob = "top_k"
		case sp.topP < 1:
			knob = "top_p"
		case sp.minP > 0:
			knob = "min_p"
		}
		switch {
		case knob != "":
			return api.BadParam(knob, "unsupported_parameter", "%s has no effect with beam search (num_beams %d), which keeps the most likely sequences of the (biased and penalised) log-probabilities instead of sampling: leave it out", knob, sp.numBeams)
		case sp.logprobs >= 0 && sp.maxTokens > 0:
			return api.BadParam("logprobs", "unsupported_parameter", "logprobs %d is not available with beam search (num_beams %d): beams are scored as a whole", sp.logprobs, sp.numBeams)
		case sp.trace > 0:
			return api.BadParam("trace", "unsupported_parameter", "trace is not available with beam search (num_beams %d)", sp.numBeams)
		case sp.n > sp.numBeams:
			return api.BadParam("n", "invalid_value", "n %d is more than num_beams %d: beam search returns at most one sequence per beam", sp.n, sp.numBeams)
		}
		return nil
	}
	if sp.lengthPenalty != 0 {
		return api.BadParam("length_penalty", "unsupported_parameter", "length_penalty %v has no effect without beam search (num_beams > 1): leave it out", sp.lengthPenalty)
	}
	if knob := logitKnob(); knob != "" && sp.temperature == 0 {
		return api.BadParam(knob, "unsupported_parameter", "%s has no effect with temperature 0, which is greedy decoding of the raw logits (as cmd/generate -greedy); for the most likely character after %s, send temperature 1 with top_k 1", knob, knob)
	}
	return nil
}

// checkFirstToken returns a 400 when no first token is left to choose
// among the V of the vocabulary: every id banned by logit_bias, or by it
// and no_repeat_ngram_size after one of the prompts.
func checkFirstToken(sp *sampling, prompts [][]int, V int) *api.Error {
	left := make([]bool, V) // the ids logit_bias leaves, as the library applies it
	forced := false
	for _, b := range sp.logitBias {
		forced = forced || b >= 100
	}
	n := 0
	for id := range left {
		b, ok := sp.logitBias[id]
		left[id] = !(forced && (!ok || b < 100)) && !(ok && b <= -100)
		if left[id] {
			n++
		}
	}
	if n == 0 {
		return api.BadParam("logit_bias", "invalid_value", "logit_bias bans every token of the vocabulary (%d with -100): nothing is left to generate", V)
	}
	if sp.noRepeatNgram == 0 {
		return nil
	}
	for p, ids := range prompts {
		if noRepeatLeavesNone(left, ids, sp.noRepeatNgram) {
			return api.BadParam("no_repeat_ngram_size", "invalid_value", "no_repeat_ngram_size %d leaves no first token after prompt %d: every token (that logit_bias leaves) would repeat one of its %d-grams", sp.noRepeatNgram, p, sp.noRepeatNgram)
		}
	}
	return nil
}

// noRepeatLeavesNone reports whether the no-repeat n-gram rule bans every
// id left after seq: as the library, the ids that follow an earlier
// occurrence of seq's last n-1 ids (every id of seq for n = 1).
func noRepeatLeavesNone(left []bool, seq []int, n int) bool {
	if len(seq) < n {
		return false
	}
	banned := make([]bool, len(left))
	prefix := seq[len(seq)-(n-1):]
	for i := 0; i+n-1 < len(seq); i++ {
		if slices.Equal(seq[i:i+n-1], prefix) {
			banned[seq[i+n-1]] = true
		}
	}
	for id, ok := range left {
		if ok && !banned[id] {
			return false
		}
	}
	return true
}
