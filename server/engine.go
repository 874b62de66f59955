package server

// This file is the only one that calls the minigpt library's generation
// API: everything else in the package speaks in terms of sampling,
// released tokens and results.

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"example.org/minigpt"
)

// engine generates for one model.
type engine struct {
	model *minigpt.Model // generation is safe for concurrent use on it
	vocab *minigpt.Vocab
	chars []rune
}

func newEngine(m *minigpt.Model, v *minigpt.Vocab) *engine {
	return &engine{model: m, vocab: v, chars: v.Chars()}
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
// (minigpt.SampleSeed: a request with n = 1 and that seed gives the same
// text), or nil for greedy decoding and beam search, which draw nothing.
func (e *engine) sampleSeed(sp *sampling, i int) *uint64 {
	if sp.temperature == 0 || sp.numBeams > 1 {
		return nil
	}
	seed := minigpt.SampleSeed(sp.seed, i)
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
	if knob := logitKnob(); knob != "" && sp.temperature == 0 {
		return badParam(knob, "unsupported_parameter", "%s has no effect with temperature 0, which is greedy decoding of the raw logits (as cmd/generate -greedy); for the most likely character after %s, send temperature 1 with top_k 1", knob, knob)
	}
	return nil
}

// options maps a request's knobs onto the library's.
func (e *engine) options(sp *sampling) minigpt.CompleteOptions {
	o := minigpt.CompleteOptions{Stop: sp.stop}
	o.GenerateOptions = minigpt.GenerateOptions{
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
	if (sp.logprobs >= 0 || sp.trace > 0) && sp.numBeams <= 1 {
		o.Trace = true
		o.TraceTopN = max(sp.logprobs, sp.trace)
	}
	return o
}

// errorParam reports whether a generation error is the request's fault,
// and which field it is about ("" if none in particular).
func (e *engine) errorParam(err error, sp *sampling) (string, bool) {
	switch {
	case errors.Is(err, minigpt.ErrAllBanned):
		if len(sp.logitBias) == 0 {
			return "no_repeat_ngram_size", true
		}
		return "logit_bias", true
	case errors.Is(err, minigpt.ErrNonFinite):
		// A tiny temperature or a large penalty overflowed the logits.
		return "temperature", true
	case errors.Is(err, minigpt.ErrBadOption):
		return "", true
	}
	return "", false
}

// complete generates sp.n samples continuing prompt with
// minigpt.Model.Complete: sample i is the text cmd/generate prints with
// -seed minigpt.SampleSeed(seed, i) and the same settings. release is
// called with each sample's tokens as soon as they are final (with stop
// strings, once they cannot begin one), and with its finish reason on its
// last call.
func (e *engine) complete(ctx context.Context, prompt string, sp *sampling, release func(sample int, toks []token, finish string) error) error {
	opts := e.options(sp)
	var toks []token
	opts.Stream = func(c *minigpt.Chunk) error {
		toks = toks[:0]
		for j, id := range c.IDs {
			t := token{id: id}
			if opts.Trace {
				e.fromStep(&t, &c.Steps[j], sp)
			}
			toks = append(toks, t)
		}
		if len(toks) == 0 && c.Finish == "" {
			return nil
		}
		return release(c.Sample, toks, string(c.Finish))
	}
	_, err := e.model.Complete(ctx, e.vocab, prompt, opts)
	return err
}

// fromStep fills a token's logprobs and trace from the library's step.
func (e *engine) fromStep(t *token, st *minigpt.Step, sp *sampling) {
	if sp.logprobs >= 0 {
		// Raw log-probabilities (the model's distribution at temperature
		// 1), as vLLM reports by default and as echo scores the prompt:
		// they describe the model, whatever the sampling settings.
		t.logprob = st.RawLogprob
		// log p(c) = logit(c) − logsumexp(logits), and the step gives the
		// chosen token's log p: its logsumexp follows, so every
		// alternative's value is computed like the token's own (which is
		// reported exactly).
		lse := st.Chosen.Logit - st.RawLogprob
		in := false
		for _, c := range st.Top[:min(sp.logprobs, len(st.Top))] {
			lp := c.Logit - lse
			if c.ID == st.ID {
				lp, in = st.RawLogprob, true
			}
			t.top = append(t.top, altProb{c.ID, lp})
		}
		if !in && sp.logprobs > 0 {
			// As OpenAI: the sampled token is listed even when it is not
			// among the most likely.
			t.top = append(t.top, altProb{st.ID, st.RawLogprob})
		}
	}
	if sp.trace > 0 {
		tj := &traceJSON{Token: string(e.chars[st.ID]), Logprob: st.Logprob, RawLogprob: st.RawLogprob}
		var active []minigpt.Stage
		for s := range minigpt.NumStages {
			if st.Active[s] {
				active = append(active, s)
				tj.Stages = append(tj.Stages, s.String())
			}
		}
		cands := st.Top[:min(sp.trace, len(st.Top))]
		chosenIn := false
		for _, c := range cands {
			chosenIn = chosenIn || c.ID == st.ID
		}
		if !chosenIn {
			cands = append(cands[:len(cands):len(cands)], st.Chosen)
		}
		for _, c := range cands {
			cj := candidateJSON{Token: string(e.chars[c.ID]), ID: c.ID, Chosen: c.ID == st.ID}
			for _, s := range active {
				cj.Probs = append(cj.Probs, c.Probs[s])
			}
			if c.CutBy != minigpt.StageRaw {
				cj.CutBy = c.CutBy.String()
			}
			tj.Candidates = append(tj.Candidates, cj)
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
// sees it, and the top alternatives. The first token has no context and
// is left out.
func (e *engine) promptLogprobs(ctx context.Context, prompt []int, top int) ([]token, error) {
	m := e.model // Logits is safe for concurrent use
	bs, V := m.Config().BlockSize, m.Config().VocabSize
	out := make([]token, 0, len(prompt)-1)
	var lp []float64
	var order []int
	score := func(row []float64, id int) {
		lp = minigpt.LogSoftmax(lp, row) // reused across the prompt's tokens
		out = append(out, logprobToken(lp, row, id, top, &order))
	}
	// Tokens 1..BlockSize-1 share one window starting at 0.
	if n := min(len(prompt), bs); n > 1 {
		logits, err := m.Logits(prompt[:n], 1, n)
		if err != nil {
			return nil, err
		}
		for j := 1; j < n; j++ {
			score(logits[(j-1)*V:j*V], prompt[j])
		}
	}
	// Every later token has its own window: the BlockSize tokens before it.
	idx := make([]int, scoreBatch*bs)
	for j0 := bs; j0 < len(prompt); j0 += scoreBatch {
		if err := ctx.Err(); err != nil {
			return nil, err // a long prompt stops scoring when its client goes
		}
		for b := range scoreBatch {
			j := min(j0+b, len(prompt)-1) // the last batch repeats its last window
			copy(idx[b*bs:(b+1)*bs], prompt[j-bs:j])
		}
		logits, err := m.Logits(idx, scoreBatch, bs)
		if err != nil {
			return nil, err
		}
		for b := range min(scoreBatch, len(prompt)-j0) {
			last := (b*bs + bs - 1) * V
			score(logits[last:last+V], prompt[j0+b])
		}
	}
	return out, nil
}

// logprobToken is token id with its log-probability from lp (row's
// log-softmax, the same bits on every platform) and its top alternatives
// (ties to the lower id); *order is scratch for the ranking, grown once.
func logprobToken(lp, row []float64, id, top int, order *[]int) token {
	t := token{id: id, logprob: lp[id]}
	if top > 0 {
		if len(*order) != len(row) {
			*order = make([]int, len(row))
		}
		order := *order
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(row[b], row[a]) })
		for _, a := range order[:min(top, len(order))] {
			t.top = append(t.top, altProb{a, lp[a]})
		}
	}
	return t
}
