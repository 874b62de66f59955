package server

// This file is the only one that calls the minigpt library's generation
// API: everything else in the package speaks in terms of sampling,
// released tokens and results.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"example.org/minigpt"
)

// engine generates for one model, through one continuous batch: every
// request's samples (or beams) are rows of the same forward passes per
// step, and each gets the bits it would get alone.
type engine struct {
	model *minigpt.Model // Logits (echo's scores) is safe for concurrent use on it
	vocab *minigpt.Vocab
	chars []rune
	// alone makes every generation run by itself with Model.Complete
	// instead of in the batch: the serial reference of the tests.
	alone bool

	mu    sync.Mutex
	batch *minigpt.Batch // made by the first batchFor
}

func newEngine(m *minigpt.Model, v *minigpt.Vocab) *engine {
	return &engine{model: m, vocab: v, chars: v.Chars()}
}

// batchFor returns the model's batch, made with rows rows if there is
// none yet (New makes the given models' at once, so that a model too
// large for its rows is refused at the start; a fine-tuned model gets
// its own at its first request). An idle batch holds no goroutine: a
// deleted model's goes with it.
func (e *engine) batchFor(rows int) (*minigpt.Batch, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.batch == nil {
		b, err := minigpt.NewBatch(e.model, rows)
		if err != nil {
			return nil, err
		}
		e.batch = b
	}
	return e.batch, nil
}

// stats returns the batch's counters, and false if it has none yet.
func (e *engine) stats() (minigpt.BatchStats, bool) {
	e.mu.Lock()
	b := e.batch
	e.mu.Unlock()
	if b == nil {
		return minigpt.BatchStats{}, false
	}
	return b.Stats(), true
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

// token is one generated token as the client sees it.
type token struct {
	id      int
	logprob float64    // natural log of its raw probability (with logprobs)
	top     []altProb  // the most likely alternatives (with logprobs)
	trace   *traceJSON // with trace
}

// altProb is a candidate token and its log-probability.
type altProb struct {
	id      int
	logprob float64
}

// sampleSeed is sample i's own seed when tokens are drawn at random
// (seed + i, GenerateOptions.Seed's rule: a request with n = 1 and that
// seed gives the same text), or nil for greedy decoding and beam search,
// which draw nothing.
func (e *engine) sampleSeed(sp *sampling, i int) *uint64 {
	if sp.temperature == 0 || sp.numBeams > 1 {
		return nil
	}
	seed := sp.seed + uint64(i)
	return &seed
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
func (e *engine) unsupported(sp *sampling) *apiError {
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
			return badParam(knob, "unsupported_parameter", "%s has no effect with beam search (num_beams %d), which keeps the most likely sequences of the (biased and penalised) log-probabilities instead of sampling: leave it out", knob, sp.numBeams)
		case sp.logprobs >= 0 && sp.maxTokens > 0:
			return badParam("logprobs", "unsupported_parameter", "logprobs %d is not available with beam search (num_beams %d): beams are scored as a whole", sp.logprobs, sp.numBeams)
		case sp.trace > 0:
			return badParam("trace", "unsupported_parameter", "trace is not available with beam search (num_beams %d)", sp.numBeams)
		case sp.n > sp.numBeams:
			return badParam("n", "invalid_value", "n %d is more than num_beams %d: beam search returns at most one sequence per beam", sp.n, sp.numBeams)
		}
		return nil
	}
	if sp.lengthPenalty != 0 {
		return badParam("length_penalty", "unsupported_parameter", "length_penalty %v has no effect without beam search (num_beams > 1): leave it out", sp.lengthPenalty)
	}
	if knob := logitKnob(); knob != "" && sp.temperature == 0 {
		return badParam(knob, "unsupported_parameter", "%s has no effect with temperature 0, which is greedy decoding of the raw logits (as cmd/generate -greedy); for the most likely character after %s, send temperature 1 with top_k 1", knob, knob)
	}
	return nil
}

// options maps a request's knobs onto the library's.
func (e *engine) options(sp *sampling) minigpt.GenerateOptions {
	o := minigpt.GenerateOptions{
		Stop:         sp.stop,
		MaxNewTokens: sp.maxTokens,
		N:            sp.n,
		Seed:         sp.seed,
		// OpenAI's temperature 0 is greedy; the library's zero
		// Temperature means 1, and greedy is asked for by name.
		Greedy:            sp.temperature == 0,
		Temperature:       sp.temperature,
		RepetitionPenalty: sp.repetitionPenalty,
		PresencePenalty:   sp.presencePenalty,
		FrequencyPenalty:  sp.frequencyPenalty,
		LogitBias:         sp.logitBias,
		NoRepeatNGramSize: sp.noRepeatNgram,
		TopK:              sp.topK,
		TopP:              sp.topP,
		MinP:              sp.minP,
		NumBeams:          sp.numBeams,
		LengthPenalty:     sp.lengthPenalty,
	}
	if traced(sp) {
		// Steps come with the streamed parts (complete streams), so the
		// library keeps none it has delivered.
		o.Trace = true
		o.TraceTopN = max(sp.logprobs, sp.trace)
		o.TraceAttention = sp.attention > 0
	}
	return o
}

// traced reports whether sp needs each token's step: for logprobs or the
// trace (beam search has neither).
func traced(sp *sampling) bool { return (sp.logprobs >= 0 || sp.trace > 0) && sp.numBeams <= 1 }

// check returns a 400 for what the library would refuse, naming the
// field, or nil: an option its Validate refuses (the parser's ranges
// should leave none), and a first token with nothing left to choose
// (every id banned by logit_bias, or by it and no_repeat_ngram_size on
// some prompt), which would fail only once generating.
func (e *engine) check(sp *sampling, prompts [][]int) *apiError {
	if err := e.options(sp).Validate(); err != nil {
		return badParam("", "invalid_value", "%v", err)
	}
	V := e.model.Config().VocabSize
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
		return badParam("logit_bias", "invalid_value", "logit_bias bans every token of the vocabulary (%d with -100): nothing is left to generate", V)
	}
	if sp.noRepeatNgram == 0 {
		return nil
	}
	for p, ids := range prompts {
		if noRepeatLeavesNone(left, ids, sp.noRepeatNgram) {
			return badParam("no_repeat_ngram_size", "invalid_value", "no_repeat_ngram_size %d leaves no first token after prompt %d: every token (that logit_bias leaves) would repeat one of its %d-grams", sp.noRepeatNgram, p, sp.noRepeatNgram)
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

// errorParam reports whether a generation error is the request's fault,
// and which field it is about ("" if none in particular).
func (e *engine) errorParam(err error, sp *sampling) (string, bool) {
	switch {
	case errors.Is(err, minigpt.ErrBadOption) && strings.Contains(err.Error(), "leave no token"):
		// Every token banned: check caught a ban by logit_bias alone, so
		// this one grew with the text.
		if sp.noRepeatNgram == 0 {
			return "logit_bias", true
		}
		return "no_repeat_ngram_size", true
	case errors.Is(err, minigpt.ErrNonFinite):
		// Dividing a positive logit by a tiny repetition penalty (or
		// temperature) overflowed it; with neither, the model itself gave
		// a NaN or an infinity, which is not the request's fault.
		switch {
		case sp.repetitionPenalty < 1:
			return "repetition_penalty", true
		case sp.temperature != 0 && sp.temperature < 1:
			return "temperature", true
		}
		return "", false
	case errors.Is(err, minigpt.ErrBadOption):
		// What check cannot see: the memory the rows need for the model
		// (the request's rows fit the batch: the parser made sure).
		if rowsOf(sp) > 1 {
			return rowsParam(sp), true
		}
		return "", true
	}
	return "", false
}

// complete generates sp.n samples continuing prompt in the model's
// batch of batchRows rows (minigpt.Batch.Complete, which gives
// minigpt.Model.Complete's bits whatever else runs): sample i is the text cmd/generate prints with
// -seed seed+i and the same settings. release is
// called with each sample's tokens as soon as they are final (with stop
// strings, once they cannot begin one), and with its finish reason on its
// last call.
//
// With logprobs or trace, each released token comes with its step, which
// is turned into the token's logprobs and trace.
func (e *engine) complete(ctx context.Context, prompt string, sp *sampling, batchRows int, release func(sample int, toks []token, finish string) error) error {
	batch, err := e.batchFor(batchRows)
	if err != nil {
		// The server's rows do not fit the model: not the request's fault.
		return fmt.Errorf("the model's batch of %d rows: %v", batchRows, err)
	}
	opts := e.options(sp)
	var toks []token
	opts.Stream = func(c *minigpt.Completion) error {
		toks = toks[:0]
		for j, id := range c.IDs {
			t := token{id: id}
			if opts.Trace {
				if len(c.Steps) != len(c.IDs) {
					return fmt.Errorf("server: sample %d released %d tokens with %d steps", c.Index, len(c.IDs), len(c.Steps))
				}
				e.fromStep(&t, &c.Steps[j], sp)
			}
			toks = append(toks, t)
		}
		if len(toks) == 0 && c.Finish == "" {
			return nil
		}
		return release(c.Index, toks, c.Finish)
	}
	if e.alone {
		_, err = e.model.Complete(ctx, e.vocab, prompt, opts)
	} else {
		_, err = batch.Complete(ctx, e.vocab, prompt, opts)
	}
	return err
}

// fromStep fills a token's logprobs and trace from the library's step.
func (e *engine) fromStep(t *token, st *minigpt.Step, sp *sampling) {
	if sp.logprobs >= 0 {
		// Raw log-probabilities (the model's distribution at temperature
		// 1), as vLLM reports by default and as echo scores the prompt:
		// they describe the model, whatever the sampling settings.
		t.logprob = st.Chosen.Logprob
		in := false
		for _, c := range st.Top[:min(sp.logprobs, len(st.Top))] {
			in = in || c.ID == st.Chosen.ID
			t.top = append(t.top, altProb{c.ID, c.Logprob})
		}
		if !in && sp.logprobs > 0 {
			// As OpenAI: the sampled token is listed even when it is not
			// among the most likely.
			t.top = append(t.top, altProb{st.Chosen.ID, st.Chosen.Logprob})
		}
	}
	if sp.trace > 0 {
		tj := &traceJSON{Token: string(e.chars[st.Chosen.ID]), Logprob: st.Logprob, RawLogprob: st.Chosen.Logprob}
		var active []minigpt.Stage
		for s, on := range st.Active {
			if on {
				active = append(active, minigpt.Stage(s))
				tj.Stages = append(tj.Stages, minigpt.Stage(s).String())
			}
		}
		cands := st.Top[:min(sp.trace, len(st.Top))]
		chosenIn := false
		for _, c := range cands {
			chosenIn = chosenIn || c.ID == st.Chosen.ID
		}
		if !chosenIn {
			cands = append(cands[:len(cands):len(cands)], st.Chosen)
		}
		for _, c := range cands {
			cj := candidateJSON{Token: string(e.chars[c.ID]), ID: c.ID, Chosen: c.ID == st.Chosen.ID}
			for _, s := range active {
				cj.Probs = append(cj.Probs, c.Probs[s])
			}
			if c.CutBy != minigpt.StageRaw {
				cj.CutBy = c.CutBy.String()
			}
			tj.Candidates = append(tj.Candidates, cj)
		}
		if sp.attention > 0 {
			tj.Attention = nestAttention(st, e.model.Config())
		}
		t.trace = tj
	}
}

// scoreBatch is the number of context windows scored together: enough to
// amortise a forward pass, few enough that a scorer's activations stay
// small for larger models.
const scoreBatch = 8

// promptLogprobs scores a prompt for echo with logprobs: token j (j >= 1)
// gets its log-probability under the model's raw distribution (temperature
// 1, no filter) given the BlockSize tokens before it, as the generator
// sees it (Model.Score with stride 1), and the top alternatives. The first
// token has no context and is left out. On an error it returns the tokens
// scored so far.
func (e *engine) promptLogprobs(ctx context.Context, prompt []int, top int) ([]token, error) {
	steps, err := e.model.Score(ctx, prompt, 1, min(top, e.model.Config().VocabSize))
	out := make([]token, len(steps))
	for i, s := range steps {
		out[i] = token{id: s.Chosen.ID, logprob: s.Logprob}
		for _, c := range s.Top {
			out[i].top = append(out[i].top, altProb{c.ID, c.Logprob})
		}
	}
	return out, err
}
