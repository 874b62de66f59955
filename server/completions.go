package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// completion is the response body of POST /v1/completions, and (with
// Usage nil until the end) of each streamed chunk.
type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Seed              uint64   `json:"seed"` // extension: the seed used, chosen or given
	Choices           []choice `json:"choices"`
	Usage             *usage   `json:"usage,omitempty"`
}

type choice struct {
	Text         string      `json:"text"`
	Index        int         `json:"index"`
	Logprobs     *logprobs   `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
	Seed         *uint64     `json:"seed,omitempty"`  // extension: this sample's own seed (n = 1 with it gives the same text)
	Trace        []traceJSON `json:"trace,omitempty"` // extension, for the playground
}

// logprobs is OpenAI's legacy logprobs object: one entry per token.
type logprobs struct {
	Tokens        []string       `json:"tokens"`
	TokenLogprobs []*float64     `json:"token_logprobs"` // null for the first prompt token with echo
	TopLogprobs   []orderedProbs `json:"top_logprobs"`
	TextOffset    []int          `json:"text_offset"` // in characters (code points) of the choice's text
}

// orderedProbs is a {token: logprob} object written most probable first
// (a Go map would be written in key order).
type orderedProbs []altJSON

type altJSON struct {
	token   string
	logprob float64
}

// MarshalJSON writes the object in order.
func (o orderedProbs) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, a := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(a.token)
		b.Write(k)
		b.WriteByte(':')
		b.Write(jsonFloat(a.logprob))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonFloat writes x; JSON has no infinity, so a log-probability of -Inf
// (a token with probability zero) is written as the most negative finite
// float, as OpenAI-compatible servers do (-9999 in vLLM).
func jsonFloat(x float64) []byte {
	if math.IsInf(x, -1) {
		x = -math.MaxFloat64
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64)
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// traceJSON is one generated character's step in the playground trace:
// the stages that ran and the most likely candidates under the raw
// distribution, each with its probability after every stage.
type traceJSON struct {
	Token      string          `json:"token"`
	Logprob    float64         `json:"logprob"`     // of the token, under the distribution it was drawn from
	RawLogprob float64         `json:"raw_logprob"` // of the token, under the model's raw distribution
	Stages     []string        `json:"stages"`
	Candidates []candidateJSON `json:"candidates"`
}

type candidateJSON struct {
	Token  string    `json:"token"`
	ID     int       `json:"id"`
	Probs  []float64 `json:"probs"`            // after each stage, in Stages order
	CutBy  string    `json:"cut_by,omitempty"` // the stage that removed it
	Chosen bool      `json:"chosen,omitempty"`
}

// choiceState accumulates one choice's text and logprobs.
type choiceState struct {
	index    int
	text     []rune // the choice's text so far (the prompt with echo)
	lp       *logprobs
	trace    []traceJSON
	finish   string
	nTokens  int     // generated tokens released
	promptID int     // which prompt
	seed     *uint64 // the sample's own seed, when sampling
}

func newCompletionID() string {
	var b [12]byte
	rand.Read(b[:])
	return "cmpl-" + hex.EncodeToString(b[:])
}

func (s *Server) serveCompletions(w http.ResponseWriter, r *http.Request) {
	req, aerr := s.parseCompletion(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if e := req.model.engine.unsupported(&req.sampling); e != nil {
		writeError(w, e)
		return
	}
	ctx := r.Context()
	if err := s.slots.acquire(ctx, s.limits.QueueTimeout); err != nil {
		if ctx.Err() != nil {
			return // the client went away while queued: nobody to answer
		}
		e := errorWithStatus(http.StatusTooManyRequests, "rate_limit_error", "server_busy", "%v (%d slots, %d queued): retry later", err, s.limits.Slots, max(s.limits.Queue, 0))
		e.retryAfter = 1
		writeError(w, e)
		return
	}
	defer s.slots.release()
	if !s.enter() {
		e := errorWithStatus(http.StatusServiceUnavailable, "service_unavailable", "shutting_down", "the server is shutting down and takes no new requests")
		e.retryAfter = 1
		writeError(w, e)
		return
	}
	defer s.active.Done()

	// The generation stops when the client goes away, when the request's
	// time is up, or when the server is closed.
	gctx, cancel := context.WithTimeout(ctx, s.limits.RequestTimeout)
	defer cancel()
	stop := context.AfterFunc(s.base, cancel)
	defer stop()

	resp := completion{
		ID: newCompletionID(), Object: "text_completion", Created: time.Now().Unix(),
		Model: req.model.name, SystemFingerprint: req.model.fingerprint, Seed: req.seed,
	}
	w.Header().Set("Minigpt-Seed", strconv.FormatUint(req.seed, 10))
	if s.generationStart != nil {
		s.generationStart(gctx)
	}
	if req.stream {
		s.stream(gctx, w, req, &resp)
	} else {
		s.complete(gctx, w, req, &resp)
	}
}

// enter registers a request inside a slot, unless the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// generate runs every prompt of req in turn; emit is called for each
// piece of text as soon as it is final. It returns the choices, in
// OpenAI's order (prompt-major, then sample).
func (s *Server) generate(ctx context.Context, req *completionRequest, emit func(c *choiceState, from mark, finish string) error) ([]*choiceState, error) {
	n := req.n
	choices := make([]*choiceState, len(req.prompts)*n)
	for p, prompt := range req.prompts {
		for i := range n {
			c := &choiceState{index: p*n + i, promptID: p, seed: req.model.engine.sampleSeed(&req.sampling, i)}
			if req.logprobs >= 0 {
				c.lp = &logprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []orderedProbs{}, TextOffset: []int{}}
			}
			if req.echo {
				c.text = []rune(prompt)
			}
			choices[c.index] = c
		}
		if req.echo {
			if req.logprobs >= 0 {
				scored, err := req.model.engine.promptLogprobs(ctx, req.promptIDs[p], req.logprobs)
				if err != nil {
					if errors.Is(err, context.DeadlineExceeded) {
						// Not a partial answer (the echoed text would lack
						// its logprobs): a failure, reported as such.
						err = fmt.Errorf("scoring prompt %d ran out of time (the server's request timeout)", p)
					}
					return choices, err
				}
				for i := range n {
					s.echoLogprobs(choices[p*n+i], req, scored)
				}
			}
			for i := range n {
				if err := emit(choices[p*n+i], mark{}, ""); err != nil {
					return choices, err
				}
			}
		}
		err := req.model.engine.complete(ctx, prompt, &req.sampling, func(i int, toks []token, finish string) error {
			c := choices[p*n+i]
			from := c.mark()
			s.appendTokens(c, req, toks)
			c.finish = finish
			return emit(c, from, finish)
		})
		s.metrics.tokens(req.model.name, len(req.promptIDs[p]), countTokens(choices[p*n:(p+1)*n]))
		if err != nil {
			return choices, err
		}
	}
	return choices, nil
}

// mark is a position in a choice: lengths of its text, logprobs and trace.
type mark struct{ text, tokens, trace int }

func (c *choiceState) mark() mark {
	m := mark{text: len(c.text), trace: len(c.trace)}
	if c.lp != nil {
		m.tokens = len(c.lp.Tokens)
	}
	return m
}

func countTokens(cs []*choiceState) int {
	n := 0
	for _, c := range cs {
		n += c.nTokens
	}
	return n
}

// appendTokens adds released tokens to a choice's text, logprobs and trace.
func (s *Server) appendTokens(c *choiceState, req *completionRequest, toks []token) {
	chars := req.model.engine.chars
	for _, t := range toks {
		if c.lp != nil {
			lp := t.logprob
			c.lp.Tokens = append(c.lp.Tokens, string(chars[t.id]))
			c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, &lp)
			top := make(orderedProbs, 0, len(t.top))
			for _, a := range t.top {
				top = append(top, altJSON{string(chars[a.id]), a.logprob})
			}
			c.lp.TopLogprobs = append(c.lp.TopLogprobs, top)
			c.lp.TextOffset = append(c.lp.TextOffset, len(c.text))
		}
		if t.trace != nil {
			c.trace = append(c.trace, *t.trace)
		}
		c.text = append(c.text, chars[t.id])
		c.nTokens++
	}
}

// echoLogprobs adds the echoed prompt's tokens to a choice's logprobs:
// the first has no context, so its logprob and alternatives are null, as
// in OpenAI's API.
func (s *Server) echoLogprobs(c *choiceState, req *completionRequest, scored []token) {
	chars := req.model.engine.chars
	for i, id := range req.promptIDs[c.promptID] {
		c.lp.Tokens = append(c.lp.Tokens, string(chars[id]))
		c.lp.TextOffset = append(c.lp.TextOffset, i)
		if i == 0 {
			c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, nil)
			c.lp.TopLogprobs = append(c.lp.TopLogprobs, nil)
			continue
		}
		t := scored[i-1]
		lp := t.logprob
		c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, &lp)
		top := make(orderedProbs, 0, len(t.top))
		for _, a := range t.top {
			top = append(top, altJSON{string(chars[a.id]), a.logprob})
		}
		c.lp.TopLogprobs = append(c.lp.TopLogprobs, top)
	}
}

// complete answers a non-streaming request.
func (s *Server) complete(ctx context.Context, w http.ResponseWriter, req *completionRequest, resp *completion) {
	choices, err := s.generate(ctx, req, func(*choiceState, mark, string) error { return nil })
	s.finished(err)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		if ctx.Err() != nil {
			s.metrics.cancel()
			return // the client is gone
		}
		writeError(w, generationError(req, err))
		return
	}
	u := usage{}
	for p := range req.prompts {
		u.PromptTokens += len(req.promptIDs[p])
	}
	for _, c := range choices {
		finish := c.finish
		if finish == "" {
			finish = "length" // the request's time ran out
		}
		resp.Choices = append(resp.Choices, choice{Text: string(c.text), Index: c.index, Logprobs: c.lp, FinishReason: &finish, Seed: c.seed, Trace: c.trace})
		u.CompletionTokens += c.nTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp.Usage = &u
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// finished reports a generation's end to the test hook.
func (s *Server) finished(err error) {
	if s.generationDone != nil {
		s.generationDone(err)
	}
}

// generationError turns a library error into an API error: a 400 naming
// the field when the settings are at fault, a 500 otherwise.
func generationError(req *completionRequest, err error) *apiError {
	if param, ok := req.model.engine.errorParam(err, &req.sampling); ok {
		return badParam(param, "invalid_value", "%v", err)
	}
	return errorWithStatus(http.StatusInternalServerError, "server_error", "generation_failed", "generation failed: %v", err)
}

// stream answers a streaming request with Server-Sent Events in OpenAI's
// chunk format: one chunk per released piece of text of one choice, a
// chunk with the finish_reason for each choice, optionally a usage chunk,
// then "data: [DONE]".
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req *completionRequest, resp *completion) {
	sse := newEventWriter(w)
	chunk := func(c choice) error {
		out := *resp
		out.Choices = []choice{c}
		return sse.data(out)
	}
	choices, err := s.generate(ctx, req, func(c *choiceState, from mark, finish string) error {
		part := choice{Text: string(c.text[from.text:]), Index: c.index, Trace: c.trace[from.trace:]}
		if finish != "" {
			// The library's last chunk of a sample: its text (if any) and
			// why it ended go out together.
			part.FinishReason, part.Seed = &finish, c.seed
		}
		if c.lp != nil {
			part.Logprobs = &logprobs{
				Tokens: c.lp.Tokens[from.tokens:], TokenLogprobs: c.lp.TokenLogprobs[from.tokens:],
				TopLogprobs: c.lp.TopLogprobs[from.tokens:], TextOffset: c.lp.TextOffset[from.tokens:],
			}
		}
		return chunk(part)
	})
	s.finished(err)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		if ctx.Err() != nil || sse.err != nil {
			s.metrics.cancel()
			return // the client is gone
		}
		// The status line is gone already: report the error as an event,
		// as OpenAI-compatible servers do, and end the stream.
		e := generationError(req, err)
		sse.data(struct {
			Error *apiError `json:"error"`
		}{e})
		sse.done()
		return
	}
	u := usage{}
	for p := range req.prompts {
		u.PromptTokens += len(req.promptIDs[p])
	}
	for _, c := range choices {
		if c.finish == "" {
			// The request's time ran out before the sample finished.
			finish := "length"
			if chunk(choice{Index: c.index, FinishReason: &finish, Seed: c.seed}) != nil {
				return
			}
		}
		u.CompletionTokens += c.nTokens
	}
	if req.includeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		out := *resp
		out.Choices = []choice{}
		out.Usage = &u
		sse.data(out)
	}
	sse.done()
}
