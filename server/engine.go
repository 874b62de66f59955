package server

// This file is the only one in the package that calls the minigpt
// library: what the server derives from a model once (its shape,
// fingerprint and batch), encoding, generation through the batch,
// echo's and /v1/score's scoring, and the steps' traces. The rest of the
// package speaks in terms of sampling, released tokens and results, and
// holds library values only to hand them back here.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// checkVocab refuses a model whose vocabulary does not match it.
func checkVocab(m Model) error {
	if v, c := m.Vocab.Size(), m.Model.Config().VocabSize; v != c {
		return fmt.Errorf("vocabulary has %d characters, the model %d", v, c)
	}
	return nil
}

// newServedModel derives what the server needs of m (also for the models
// training jobs make).
func newServedModel(m Model, created int64) *servedModel {
	chars := m.Vocab.Chars()
	return &servedModel{
		name: m.Name, model: m.Model, vocab: m.Vocab, created: created,
		config: m.Model.Config(), params: m.Model.NumParams(), chars: chars,
		fingerprint: fingerprint(m.Model, m.Vocab),
		jsonChars:   jsonChars(chars),
		jsonBytes:   jsonBytes(chars),
		chat:        defaultChat,
		engine:      newEngine(m.Model, m.Vocab),
	}
}

// fingerprint hashes a model's configuration, weights and vocabulary: two
// servers with the same fingerprint and seed return the same text.
func fingerprint(m *minigpt.Model, v *minigpt.Vocab) string {
	h := sha256.New()
	c := m.Config()
	fmt.Fprintf(h, "%d %d %d %d %d %t\n", c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, c.TiedHead)
	var b [8]byte
	for _, x := range m.Params() {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	h.Write([]byte(string(v.Chars())))
	return "fp_" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Library constants the rest of the package bounds its fields with.
const (
	maxSamples = minigpt.MaxSamples     // samples (and choices) generated together
	numStages  = int(minigpt.NumStages) // the sampler's stages a trace reports
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
	if traced(sp) {
		// Steps come through OnStep (complete sets it), not Trace: with
		// Trace the library would keep every step of every sample for the
		// Completions it returns, which the server never reads.
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

// errorParam reports whether a generation error is the request's fault,
// and which field it is about ("" if none in particular).
func (e *engine) errorParam(err error, sp *sampling) (string, bool) {
	switch {
	case errors.Is(err, minigpt.ErrAllBanned):
		// check caught a ban by logit_bias alone: this one grew with the
		// text.
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
// -seed minigpt.SampleSeed(seed, i) and the same settings. release is
// called with each sample's tokens as soon as they are final (with stop
// strings, once they cannot begin one), and with its finish reason on its
// last call.
//
// With logprobs or trace, each step is turned into its token as it is
// chosen and waits, per sample, until a chunk releases it: a sample's
// chunks release its chosen tokens in order (the ones a stop string ate
// never), so only the tokens held back by a stop string wait.
func (e *engine) complete(ctx context.Context, prompt string, sp *sampling, batchRows int, release func(sample int, toks []token, finish string) error) error {
	batch, err := e.batchFor(batchRows)
	if err != nil {
		// The server's rows do not fit the model: not the request's fault.
		return fmt.Errorf("the model's batch of %d rows: %v", batchRows, err)
	}
	opts := e.options(sp)
	var pending [][]token // per sample: chosen, not yet released
	if traced(sp) {
		pending = make([][]token, sp.n)
		opts.OnStep = func(st *minigpt.Step) error {
			t := token{id: st.ID}
			e.fromStep(&t, st, sp)
			pending[st.Sample] = append(pending[st.Sample], t)
			return nil
		}
	}
	var toks []token
	opts.Stream = func(c *minigpt.Chunk) error {
		toks = toks[:0]
		if pending != nil {
			p := pending[c.Sample]
			if len(p) < len(c.IDs) {
				return fmt.Errorf("server: sample %d released %d tokens, %d were traced", c.Sample, len(c.IDs), len(p))
			}
			for j, id := range c.IDs {
				if p[j].id != id {
					return fmt.Errorf("server: sample %d released token %d where %d was traced", c.Sample, id, p[j].id)
				}
			}
			toks = append(toks, p[:len(c.IDs)]...)
			pending[c.Sample] = append(p[:0], p[len(c.IDs):]...)
		} else {
			for _, id := range c.IDs {
				toks = append(toks, token{id: id})
			}
		}
		if len(toks) == 0 && c.Finish == "" {
			return nil
		}
		return release(c.Sample, toks, string(c.Finish))
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
// sees it, and the top alternatives. The first token has no context and
// is left out. On an error it returns the tokens scored so far.
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
			return out, err
		}
		for j := 1; j < n; j++ {
			score(logits[(j-1)*V:j*V], prompt[j])
		}
	}
	// Every later token has its own window: the BlockSize tokens before it.
	idx := make([]int, scoreBatch*bs)
	for j0 := bs; j0 < len(prompt); j0 += scoreBatch {
		if err := ctx.Err(); err != nil {
			return out, err // a long prompt stops scoring when its time is up or its client goes
		}
		for b := range scoreBatch {
			j := min(j0+b, len(prompt)-1) // the last batch repeats its last window
			copy(idx[b*bs:(b+1)*bs], prompt[j-bs:j])
		}
		logits, err := m.Logits(idx, scoreBatch, bs)
		if err != nil {
			return out, err
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

// encode returns text's token ids.
func (e *engine) encode(text string) ([]int, error) { return e.vocab.Encode(text) }

// score scores a text (minigpt.Model.Score with stride and top
// predictions per character), and sums it up as cmd/eval does.
func (e *engine) score(ctx context.Context, ids []int, stride, top int) ([]minigpt.TokenScore, minigpt.Scores, error) {
	scores, err := e.model.Score(ctx, ids, minigpt.ScoreOptions{Stride: stride, TopN: top})
	if err != nil {
		return nil, minigpt.Scores{}, err
	}
	return scores, minigpt.Summarize(scores), nil
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
