package server

// This file and vocab.go are the only ones in the package that call the
// minigpt library: what the server derives from a model once (its shape,
// fingerprint and batch), encoding, generation through the batch,
// echo's and /v1/score's scoring, and the steps' traces. The rest of the
// package speaks in terms of sampling, released tokens and results, and
// holds library values only to hand them back here.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"example.org/minigpt"
	"example.org/minigpt/internal/grammar"
	"example.org/minigpt/server/internal/api"
)

// checkVocab refuses a model whose vocabulary does not match it.
func checkVocab(m Model) error {
	if v, c := m.Vocab.Size(), m.Model.Config().VocabSize; v != c {
		return fmt.Errorf("vocabulary has %d tokens, the model %d", v, c)
	}
	return nil
}

// newServedModel derives what the server needs of m (also for the models
// training jobs make).
func newServedModel(m Model, created int64) *servedModel {
	vc := newVocabulary(m.Model, m.Vocab)
	return &servedModel{
		name: m.Name, model: m.Model, lib: m.Vocab, vocab: vc, created: created,
		config: m.Model.Config(), params: m.Model.Config().NumParams(),
		fingerprint: fingerprint(m.Model, vc),
		chat:        defaultChat,
		engine:      newEngine(m.Model, m.Vocab, vc),
	}
}

// fingerprint hashes a model's configuration, weights and vocabulary: two
// servers with the same fingerprint and seed return the same text.
func fingerprint(m *minigpt.Model, vc *vocabulary) string {
	h := sha256.New()
	c := m.Config()
	fmt.Fprintf(h, "%d %d %d %d %d %t\n", c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, c.TiedHead)
	var b [8]byte
	for _, x := range m.Params() {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	if vc.kind == kindChar {
		h.Write([]byte(vc.chars)) // the characters in id order, as ever
	} else {
		// Tokens of any length: each after its length, so that no two
		// vocabularies hash alike.
		h.Write([]byte("bpe\n"))
		for _, t := range vc.tokens {
			h.Write(binary.AppendUvarint(b[:0], uint64(len(t))))
			h.Write([]byte(t))
		}
	}
	return "fp_" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Library constants the rest of the package bounds its fields with.
const (
	maxSamples     = 128                            // samples (and choices) generated together: GenerateOptions.N's limit
	numStages      = len(minigpt.Candidate{}.Probs) // the sampler's stages a trace reports
	maxFormatBytes = grammar.MaxSource              // the longest pattern, grammar, schema or list of choices
	maxFormatCache = grammar.MaxCacheBytes          // the most a constraint's cache of states holds
)

// engine generates for one model, through one continuous batch: every
// request's samples (or beams) are rows of the same forward passes per
// step, and each gets the bits it would get alone.
type engine struct {
	model *minigpt.Model // Logits (echo's scores) is safe for concurrent use on it
	vocab *minigpt.Vocab
	vc    *vocabulary
	// alone makes every generation run by itself with Model.Complete
	// instead of in the batch: the serial reference of the tests.
	alone bool

	mu    sync.Mutex
	batch *minigpt.Batch // made by the first batchFor
}

func newEngine(m *minigpt.Model, v *minigpt.Vocab, vc *vocabulary) *engine {
	return &engine{model: m, vocab: v, vc: vc}
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
	if sp.format != nil {
		o.Constraint = sp.format.c
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
func (e *engine) check(sp *sampling, prompts [][]int) *api.Error {
	if err := e.options(sp).Validate(); err != nil {
		return api.BadParam("", "invalid_value", "%v", err)
	}
	return checkFirstToken(sp, prompts, e.vocab.Size())
}

// checkFormat returns the 400 for a compiled format whose shortest match
// is longer than max_tokens, naming max_tokens, or nil: refused before
// the request waits for rows, not once it runs.
func (e *engine) checkFormat(sp *sampling) *api.Error {
	if err := e.options(sp).Validate(); err != nil {
		if param, msg, ok := e.errorParam(err, sp); ok {
			return api.BadParam(param, "invalid_value", "%s", msg)
		}
		return api.BadParam("", "invalid_value", "%v", err)
	}
	return nil
}

// constrain compiles fm for the model's vocabulary into fm.c, or returns
// the 400 naming fm's field with the library's reason: where a malformed
// source goes wrong (its character index from 0, and line and column in
// text of several lines), or the characters the model cannot write that
// the format needs.
func (e *engine) constrain(fm *format, model string) *api.Error {
	c, err := minigpt.NewConstraint(e.vocab, fm.kind, fm.src...)
	if err == nil {
		fm.c = c
		return nil
	}
	code := "invalid_format"
	switch {
	case errors.Is(err, grammar.ErrUnsatisfiable):
		code = "unsatisfiable_format"
	case errors.Is(err, grammar.ErrUnsupported):
		code = "unsupported_format"
	case errors.Is(err, grammar.ErrTooLarge):
		code = "format_too_large"
	}
	msg := fm.param + ": " + libraryText(err)
	if code == "unsatisfiable_format" && e.vc.kind == kindChar && e.vc.size() <= 200 {
		msg += fmt.Sprintf(" (model %s writes only %q)", model, e.vc.chars)
	}
	return api.BadParam(fm.param, code, "%s", msg)
}

// libraryText is a library error's message without the sentinel's
// "invalid generate option: ", which says nothing a 400 does not.
func libraryText(err error) string {
	return strings.TrimPrefix(err.Error(), minigpt.ErrBadOption.Error()+": ")
}

// errorParam reports whether a generation error is the request's fault,
// which field it is about ("" if none in particular), and what to tell
// the client.
func (e *engine) errorParam(err error, sp *sampling) (param, msg string, fault bool) {
	param, fault = e.faultOf(err, sp)
	msg = err.Error()
	if fm := sp.format; fm != nil && fault {
		switch param {
		case "max_tokens":
			msg = fmt.Sprintf("max_tokens %d is too few for the format %s sets: %s", sp.maxTokens, fm.field, libraryText(err))
		case fm.param:
			msg = fm.param + ": " + libraryText(err)
		}
	}
	return param, msg, fault
}

// faultOf reports whether a generation error is the request's fault, and
// which field it is about.
func (e *engine) faultOf(err error, sp *sampling) (string, bool) {
	switch {
	case sp.format != nil && errors.Is(err, minigpt.ErrBadOption) && strings.Contains(err.Error(), "more than MaxNewTokens"):
		// The library refuses, before any work, a format whose shortest
		// match is longer than the tokens allowed.
		return "max_tokens", true
	case sp.format != nil && errors.Is(err, grammar.ErrTooComplex):
		// A state too ambiguous to follow: the grammar's fault.
		return sp.format.param, true
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
// strings, once they cannot begin one), and on its last call with its
// finish reason and whether its text fell short of the format (cut by a
// stop string). It returns, for the samples a cancellation cut, which
// have no last call, whether the text they released falls short of the
// format.
//
// With logprobs or trace, each released token comes with its step, which
// is turned into the token's logprobs and trace.
func (e *engine) complete(ctx context.Context, prompt string, sp *sampling, batchRows int, release func(sample int, toks []token, text string, finish string, incomplete bool) error) ([]bool, error) {
	batch, err := e.batchFor(batchRows)
	if err != nil {
		// The server's rows do not fit the model: not the request's fault.
		return nil, fmt.Errorf("the model's batch of %d rows: %v", batchRows, err)
	}
	opts := e.options(sp)
	var toks []token
	n := max(sp.n, sp.numBeams, 1)
	ended := make([]bool, n)    // its last part released, by sample (or beam)
	delivered := make([]int, n) // its tokens released
	opts.Stream = func(c *minigpt.Completion) error {
		if c.Index >= n {
			return fmt.Errorf("server: sample %d of %d released", c.Index, n)
		}
		ended[c.Index] = ended[c.Index] || c.Finish != ""
		delivered[c.Index] += len(c.IDs)
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
		if len(toks) == 0 && c.Text == "" && c.Finish == "" {
			return nil
		}
		// The text, not the tokens' bytes: a stop string may cut it inside
		// a token, which IDs then leave out.
		return release(c.Index, toks, c.Text, c.Finish, c.Incomplete)
	}
	var got []minigpt.Completion
	if e.alone {
		got, err = e.model.Complete(ctx, e.vocab, prompt, opts)
	} else {
		got, err = batch.Complete(ctx, e.vocab, prompt, opts)
	}
	// A beam search cut short (the request's time is up, the server is
	// closing) streams nothing more, but returns its best beams so far:
	// they are the answer, ended at "length".
	if ctx.Err() != nil && sp.numBeams > 1 {
		for i := range got {
			if got[i].Index < n && !ended[got[i].Index] {
				if rerr := opts.Stream(&got[i]); rerr != nil {
					return nil, rerr
				}
			}
		}
	}
	incomplete := make([]bool, n)
	for _, c := range got {
		if sp.format != nil && c.Index < n && !ended[c.Index] && delivered[c.Index] <= len(c.IDs) {
			// A call cut short may have released tokens it had not yet
			// delivered: the text judged is the one the client has.
			incomplete[c.Index] = !sp.format.c.Matches(c.IDs[:delivered[c.Index]])
		}
	}
	return incomplete, err
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
		tj := &traceJSON{Token: e.vc.display[st.Chosen.ID], Logprob: st.Logprob, RawLogprob: st.Chosen.Logprob}
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
			cj := candidateJSON{Token: e.vc.display[c.ID], ID: c.ID, Chosen: c.ID == st.Chosen.ID}
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

// encode returns text's token ids.
func (e *engine) encode(text string) ([]int, error) { return e.vocab.Encode(text) }

// score scores text, whose tokens are ids (minigpt.Model.Score with
// stride and top predictions per token), and sums it up as cmd/eval does:
// the mean of -Logprob in nats, summed in order, its perplexity exp(loss)
// and bits per token loss/ln 2; and the bits per character and per byte
// of the scored tokens' text (the text from the character the second
// token begins in), Σ -log2 p over each.
func (e *engine) score(ctx context.Context, text string, ids []int, stride, top int) ([]minigpt.Step, scoreSummaryJSON, error) {
	scores, err := e.model.Score(ctx, ids, stride, top)
	if err != nil {
		return nil, scoreSummaryJSON{}, err
	}
	s := scoreSummaryJSON{Tokens: len(scores)}
	if s.Tokens > 0 {
		total := 0.0
		for _, t := range scores {
			total -= t.Logprob
			s.Bytes += len(e.vc.tokens[t.Chosen.ID])
		}
		s.Loss = total / float64(s.Tokens)
		s.Perplexity = math.Exp(s.Loss)
		s.BitsPerToken = s.Loss / math.Ln2
		first := charOffsets(nil, text, ids[:2], e.vc.tokens, 0)[1]
		s.Characters = countChars(text) - first
		s.BitsPerChar = total / math.Ln2 / float64(s.Characters)
		if e.vc.kind == kindChar {
			s.BitsPerChar = s.BitsPerToken // one token a character: the same figure, as cmd/eval computes it
		}
		s.BitsPerByte = total / math.Ln2 / float64(s.Bytes)
	}
	return scores, s, nil
}

// nestAttention returns st's attention weights as [layer][head][s], or nil
// when the step carries none. The rows alias one array: a step's weights
// are copied once.
func nestAttention(st *minigpt.Step, c minigpt.Config) [][][]float64 {
	n := st.Context
	if n == 0 || len(st.Attention) != c.Layers*c.Heads*n {
		return nil
	}
	flat := append([]float64(nil), st.Attention...) // the Step's buffer is reused
	out := make([][][]float64, c.Layers)
	for l := range out {
		out[l] = make([][]float64, c.Heads)
		for h := range out[l] {
			i := (l*c.Heads + h) * n
			out[l][h] = flat[i : i+n : i+n]
		}
	}
	return out
}
