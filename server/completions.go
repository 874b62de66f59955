package server

// This file owns the POST /v1/completions handler and what it shares with
// POST /v1/chat/completions: admission, the request's deadlines, running
// its prompts through the engine, and how a generation's end becomes an
// answer.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"example.org/minigpt/server/internal/api"
)

// serveCompletions answers POST /v1/completions.
func (s *Server) serveCompletions(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	req, aerr := s.parseCompletion(w, r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	s.serveGeneration(w, r, req, arrived)
}

// serveGeneration admits a parsed request (a completion or a chat
// completion), generates it and answers, streamed or whole, in its
// route's shape.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, req *completionRequest, arrived time.Time) {
	if !s.admit() {
		api.WriteError(w, api.ShuttingDown())
		return
	}
	defer s.leave()
	ctx := r.Context()
	rows := rowsOf(&req.sampling)
	waited, err := s.slots.acquire(ctx, s.base, &req.model.rows, rows, req.size, s.limits.QueueTimeout)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			// The client went away while queued: nobody to answer.
		case errors.Is(err, errClosed):
			api.WriteError(w, api.ShuttingDown())
		default:
			e := api.NewError(http.StatusTooManyRequests, "rate_limit_error", "server_busy", "%v (%d rows per model, %d bytes in flight, %d queued): retry later",
				err, s.limits.Slots, s.limits.MaxInFlightBytes, max(s.limits.Queue, 0))
			e.RetryAfter = 1
			api.WriteError(w, e)
		}
		return
	}
	s.metrics.waited(waited)
	defer s.slots.releaseBytes(req.size)
	generating := true
	doneGenerating := func() {
		if generating {
			generating = false
			s.slots.releaseRows(&req.model.rows, rows)
		}
	}
	defer doneGenerating()

	// The generation ends when the client goes away, when the request's
	// time is up, or when the server is closed (which ends it as the time
	// does); the response's writes get WriteTimeout more at most.
	end := time.Now().Add(s.limits.RequestTimeout)
	cctx, closed := context.WithCancelCause(ctx)
	defer closed(nil)
	stop := context.AfterFunc(s.base, func() { closed(errClosed) })
	defer stop()
	gctx, cancel := context.WithDeadline(cctx, end)
	defer cancel()

	w.Header().Set("Minigpt-Seed", strconv.FormatUint(req.seed, 10))
	out := api.NewClientWriter(w, s.limits.WriteTimeout, end.Add(s.limits.WriteTimeout))
	h := head(req.object(), api.NewID(req.idPrefix()), time.Now().Unix(), req.model, req.seed)
	choices := s.newChoices(req)
	var cw completionWriter
	if req.stream {
		cw = newSSEWriter(w, out, h, req, choices)
	} else {
		cw = newJSONWriter(w, out, h, req, choices)
	}
	if s.generationStart != nil {
		s.generationStart(gctx)
	}
	err = s.generate(gctx, req, choices, cw, arrived)
	if s.generationDone != nil {
		s.generationDone(err)
	}
	doneGenerating()
	switch {
	case ctx.Err() != nil || cw.broken():
		// The client went away, or stopped reading for WriteTimeout.
		s.metrics.cancel()
	case err == nil || errors.Is(err, context.DeadlineExceeded) || context.Cause(cctx) == errClosed:
		if cw.end(usageOf(req, choices)) != nil {
			s.metrics.cancel()
		}
	default:
		cw.fail(generationError(req, err))
	}
}

// newChoices returns req's choices in OpenAI's order (prompt-major, then
// sample), each with its echoed prompt.
func (s *Server) newChoices(req *completionRequest) []*choiceState {
	n := req.n
	choices := make([]*choiceState, len(req.prompts)*n)
	for p, ids := range req.promptIDs {
		for i := range n {
			c := &choiceState{index: p*n + i, promptID: p, seed: req.model.engine.sampleSeed(&req.sampling, i)}
			if req.echo {
				c.echo, c.chars = ids, len(ids)
			}
			choices[c.index] = c
		}
	}
	return choices
}

// generate runs every prompt of req in turn, handing each choice's tokens
// to out as soon as they are final, and counts the time from the
// request's arrival to its first token. It returns the first error: the
// context's when the time is up, out's when the client is gone.
func (s *Server) generate(ctx context.Context, req *completionRequest, choices []*choiceState, out completionWriter, arrived time.Time) error {
	e := req.model.engine
	n := req.n
	first := true
	for p, prompt := range req.prompts {
		group := choices[p*n : (p+1)*n]
		if req.echo && req.logprobs >= 0 {
			scored, err := e.promptLogprobs(ctx, req.promptIDs[p], req.logprobs)
			for _, c := range group {
				c.scored = scored // shared: the prompt is scored once for its n choices
			}
			if err != nil {
				return err
			}
		}
		incomplete, err := e.complete(ctx, prompt, &req.sampling, s.limits.Slots, func(i int, toks []token, finish string, incomplete bool) error {
			c := group[i]
			if first && len(toks) > 0 {
				first = false
				s.metrics.firstTokenAfter(time.Since(arrived))
			}
			err := out.tokens(c, toks, finish, incomplete)
			c.chars += len(toks)
			c.nTokens += len(toks)
			if finish != "" {
				c.finish, c.incomplete = finish, incomplete
			}
			return err
		})
		for i, c := range group {
			if c.finish == "" && i < len(incomplete) {
				c.incomplete = incomplete[i] // cut by the request's time
			}
		}
		generated := 0
		for _, c := range group {
			generated += c.nTokens
		}
		s.metrics.tokens(req.model.name, len(req.promptIDs[p]), generated)
		if err != nil {
			return err
		}
	}
	return nil
}

func usageOf(req *completionRequest, choices []*choiceState) usage {
	var u usage
	for _, ids := range req.promptIDs {
		u.PromptTokens += len(ids)
	}
	for _, c := range choices {
		u.CompletionTokens += c.nTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// generationError turns a library error into an API error: a 400 naming
// the field when the settings are at fault, a 500 otherwise.
func generationError(req *completionRequest, err error) *api.Error {
	if param, msg, ok := req.model.engine.errorParam(err, &req.sampling); ok {
		return api.BadParam(param, "invalid_value", "%s", msg)
	}
	return api.NewError(http.StatusInternalServerError, "server_error", "generation_failed", "generation failed: %v", err)
}
