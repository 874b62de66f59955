package server

// This file is the only one that calls the minigpt library's generation
// API: everything else in the package speaks in terms of sampling,
// released tokens and results.

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"

	"example.org/minigpt"
)

// engine generates for one model.
type engine struct {
	vocab *minigpt.Vocab
	chars []rune
	// models holds one copy of the model per slot: Model.Generate keeps
	// its KV cache in the Model, so one copy serves one generation at a
	// time. The copies share nothing, and a generation's bits do not
	// depend on which copy runs it.
	models chan *minigpt.Model
}

func newEngine(m *minigpt.Model, v *minigpt.Vocab, slots int) *engine {
	e := &engine{vocab: v, chars: v.Chars(), models: make(chan *minigpt.Model, slots)}
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
	case sp.logprobs >= 0:
		return "logprobs"
	case sp.trace > 0:
		return "trace"
	}
	return ""
}

// complete generates sp.n samples continuing prompt. Sample i is exactly
// what cmd/generate prints for the same settings and seed sampleSeed(seed,
// i). release is called with each sample's tokens as soon as they are
// final (with stop strings, once they cannot begin one). On an error the
// results so far are returned with it.
func (e *engine) complete(ctx context.Context, prompt []int, sp *sampling, release func(sample int, toks []token) error) ([]result, error) {
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
