package server

// This file is the only one that calls the minigpt library's generation
// API: everything else in the package speaks in terms of sampling,
// released tokens and results.

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"example.org/minigpt"
)

// engine generates for one model.
type engine struct {
	model *minigpt.Model
	vocab *minigpt.Vocab
	chars []rune
	// models holds one copy of the model per slot: Model.Generate keeps
	// its KV cache in the Model, so one copy serves one generation at a
	// time. The copies share nothing, and a generation's bits do not
	// depend on which copy runs it.
	models chan *minigpt.Model
	// scorers are copies of the model for scoring echoed prompts, made
	// on demand, at most one per slot kept.
	scorers chan *minigpt.Model
}

func newEngine(m *minigpt.Model, v *minigpt.Vocab, slots int) *engine {
	e := &engine{model: m, vocab: v, chars: v.Chars(), models: make(chan *minigpt.Model, slots), scorers: make(chan *minigpt.Model, slots)}
	e.models <- m
	for range slots - 1 {
		e.models <- m.Clone()
	}
	return e
}

// token is one generated token as the client sees it.
type token struct {
	id      int
	logprob float64    // natural log of its probability (with logprobs)
	top     []altProb  // the most likely alternatives (with logprobs)
	trace   *traceJSON // with trace
}

// altProb is a candidate token and its log-probability.
type altProb struct {
	id      int
	logprob float64
}

// result is one finished sample.
type result struct {
	tokens []token
	finish string // "length" or "stop"
	seed   uint64 // the sample's own seed (sampling only)
}

// unsupported names a field the library cannot honour yet, or "".
func (e *engine) unsupported(sp *sampling, echo bool) string {
	switch {
	case sp.minP != 0:
		return "min_p"
	case sp.presencePenalty != 0:
		return "presence_penalty"
	case sp.frequencyPenalty != 0:
		return "frequency_penalty"
	case len(sp.logitBias) > 0:
		return "logit_bias"
	case sp.noRepeatNgram != 0:
		return "no_repeat_ngram_size"
	case sp.logprobs >= 0 && sp.maxTokens > 0:
		return "logprobs"
	case sp.trace > 0:
		return "trace"
	case sp.numBeams > 1:
		return "num_beams"
	case sp.lengthPenalty != 0:
		return "length_penalty"
	}
	return ""
}

// errorParam reports whether a generation error is the request's fault,
// and which field it is about ("" if none in particular).
func (e *engine) errorParam(err error, sp *sampling) (string, bool) {
	switch {
	case errors.Is(err, minigpt.ErrNonFinite):
		// A tiny temperature or a large penalty overflowed the logits.
		return "temperature", true
	case errors.Is(err, minigpt.ErrBadOption):
		return "", true
	}
	return "", false
}

// complete generates sp.n samples continuing prompt. Sample i is exactly
// what cmd/generate prints for the same settings and seed sampleSeed(seed,
// i). release is called with each sample's tokens as soon as they are
// final (with stop strings, once they cannot begin one). On an error the
// results so far are returned with it.
func (e *engine) complete(ctx context.Context, text string, sp *sampling, release func(sample int, toks []token) error) ([]result, error) {
	prompt, err := e.vocab.Encode(text)
	if err != nil {
		return nil, err
	}
	m := <-e.models
	defer func() { e.models <- m }()
	results := make([]result, sp.n)
	for i := range sp.n {
		opts := minigpt.GenerateOptions{
			MaxNewTokens:      sp.maxTokens,
			Greedy:            sp.temperature == 0,
			Temperature:       sp.temperature,
			TopK:              sp.topK,
			TopP:              sp.topP,
			RepetitionPenalty: sp.repetitionPenalty,
			Rand:              rand.New(rand.NewPCG(sampleSeed(sp.seed, i), 0)),
		}
		st := stopper{stops: sp.stop, chars: e.chars}
		res := &results[i]
		res.seed = sampleSeed(sp.seed, i)
		opts.OnToken = func(id int) error {
			done := st.add(token{id: id})
			if out := st.release(done); len(out) > 0 {
				res.tokens = append(res.tokens, out...)
				if err := release(i, out); err != nil {
					return err
				}
			}
			if done {
				return errStopped
			}
			return nil
		}
		_, err := m.Generate(ctx, prompt, opts)
		switch {
		case errors.Is(err, errStopped):
			res.finish = "stop"
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return results[:i+1], err
		default:
			res.finish = "length"
			if out := st.release(true); len(out) > 0 {
				res.tokens = append(res.tokens, out...)
				if err := release(i, out); err != nil {
					return results[:i+1], err
				}
			}
			if err != nil {
				return results[:i+1], err
			}
		}
	}
	return results, nil
}

// sampleSeed is the seed of sample i of a request with seed seed.
func sampleSeed(seed uint64, i int) uint64 { return seed + uint64(i) }

var errStopped = errors.New("stop string reached")

// stopper holds back generated tokens that may begin a stop string and
// cuts the text before the first stop string that appears.
type stopper struct {
	stops    []string
	chars    []rune
	text     []rune  // every generated character
	held     []token // tokens not yet released
	released int     // characters released
	found    bool    // a stop string ends text
	cut      int     // with found: the characters before the stop string
}

// add appends a token and reports whether a stop string now ends the text.
func (s *stopper) add(t token) bool {
	s.text = append(s.text, s.chars[t.id])
	s.held = append(s.held, t)
	str := string(s.text)
	for _, stop := range s.stops {
		if strings.HasSuffix(str, stop) {
			s.found, s.cut = true, len(s.text)-len([]rune(stop))
			return true
		}
	}
	return false
}

// release returns the tokens that are now final: up to the stop string
// once one is found, all of them when done, and otherwise those that
// cannot begin a stop string.
func (s *stopper) release(done bool) []token {
	keep := len(s.text)
	switch {
	case s.found:
		keep = s.cut
	case !done:
		for _, stop := range s.stops {
			r := []rune(stop)
			for k := min(len(r)-1, len(s.text)); k > 0; k-- {
				if string(s.text[len(s.text)-k:]) == string(r[:k]) {
					keep = min(keep, len(s.text)-k)
					break
				}
			}
		}
	}
	n := max(keep-s.released, 0)
	out := s.held[:n:n]
	s.held = s.held[n:]
	s.released += n
	return out
}

// scoreBatch is the number of context windows scored together.
const scoreBatch = 16

// promptLogprobs scores a prompt for echo with logprobs: token j (j >= 1)
// gets its log-probability under the model's raw distribution (temperature
// 1, no filter) given the BlockSize tokens before it, as the generator
// sees it, and the top alternatives. The first token has no context and
// is left out.
func (e *engine) promptLogprobs(prompt []int, top int) ([]token, error) {
	m := e.scorer()
	defer e.putScorer(m)
	bs, V := m.Config.BlockSize, m.Config.VocabSize
	out := make([]token, 0, len(prompt)-1)
	score := func(row []float64, id int) {
		out = append(out, logprobToken(row, id, top))
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

// logprobToken is the log-softmax of row at id, and its top alternatives
// (ties to the lower id).
func logprobToken(row []float64, id, top int) token {
	mx := math.Inf(-1)
	for _, x := range row {
		mx = max(mx, x)
	}
	sum := 0.0
	for _, x := range row {
		sum += math.Exp(x - mx)
	}
	lse := mx + math.Log(sum)
	t := token{id: id, logprob: row[id] - lse}
	if top > 0 {
		order := make([]int, len(row))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(row[b], row[a]) })
		for _, a := range order[:min(top, len(order))] {
			t.top = append(t.top, altProb{a, row[a] - lse})
		}
	}
	return t
}

// scorer lends a copy of the model for Logits, which keeps its buffers in
// the Model and so needs one copy per concurrent caller.
func (e *engine) scorer() *minigpt.Model {
	select {
	case m := <-e.scorers:
		return m
	default:
		return e.model.Clone()
	}
}

func (e *engine) putScorer(m *minigpt.Model) {
	select {
	case e.scorers <- m:
	default:
	}
}
