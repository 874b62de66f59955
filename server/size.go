package server

// This file owns a request's size: the bound on its response computed
// before it runs, and the 400 for a request above Limits.MaxResponseBytes.

import (
	"fmt"

	"example.org/minigpt/server/internal/api"
)

// Upper bounds on the bytes a non-streamed response spends per character
// of a choice (the same content streams in chunks), which also bound what
// the server holds per character until the response is written.
const (
	textBytes    = 8  // the character in "text" ("\u001f" is the longest escape), or its kept id with a growing slice's slack
	logprobBytes = 48 // its entries in tokens (9), token_logprobs (25, a float64 and a comma), text_offset (11), and top_logprobs' braces and comma
	altBytes     = 34 // one top_logprobs entry: the key (9), a float64 (24), a comma
	stepBytes    = 80 // a trace step's keys, token and two float64s
	stageBytes   = 21 // one stage name in a trace step ("repetition-penalty",)
	candBytes    = 90 // a trace candidate's keys, token, id and cut_by
	floatBytes   = 25 // a float64 and a comma
	attnBytes    = 16 // a trace step's "attention" key
	choiceBytes  = 160
	formatBytes  = 25 // a choice's ,"format_incomplete":true

	// formatTokenBytes is what a request's format may hold per token it
	// generates: the engine's cache of the states its samples reach, each
	// new state with its mask and successors. Measured at 480 bytes a
	// token for (a|b)*a(a|b){20}, whose every step is a new state
	// (n 16 × 4096 tokens: 30 MiB); doubled.
	formatTokenBytes = 1 << 10
	headBytes        = 512

	// A chat completion's character with logprobs: its entry in
	// logprobs.content, {"token", "logprob", "bytes" (up to 4 bytes),
	// "top_logprobs"}, and each of at most top_logprobs alternatives
	// with the same keys but the last; and a chat choice's own keys
	// (message, role, refusal, the logprobs object).
	chatLogprobBytes = 100
	chatAltBytes     = 80
	chatChoiceBytes  = 64
)

// perChar bounds the bytes of one character of a choice with sp's
// logprobs and trace: every legacy top_logprobs object lists at most
// logprobs+1 alternatives (the chosen token is added when it is not among
// them), a chat one at most logprobs; every trace step at most trace+1
// candidates over at most NumStages stages.
func perChar(sp *sampling, chat bool) int64 {
	b := int64(textBytes)
	switch {
	case sp.logprobs >= 0 && chat:
		b += chatLogprobBytes + chatAltBytes*int64(sp.logprobs)
	case sp.logprobs >= 0:
		b += logprobBytes + altBytes*int64(sp.logprobs+1)
	}
	if sp.trace > 0 {
		stages := int64(numStages)
		b += stepBytes + stageBytes*stages + int64(sp.trace+1)*(candBytes+floatBytes*stages)
		// Each weight, and the brackets: 2(layers × heads + layers + 1)
		// of them, at most 6 per weight.
		if sp.attention > 0 {
			b += attnBytes + int64(sp.attention)*(floatBytes+6)
		}
	}
	return b
}

// responseSize bounds the bytes of req's response with sp's settings and
// echo: Σ over its choices of (echoed prompt + max_tokens) characters ×
// perChar, plus each choice's and the response's own fields.
func responseSize(req *completionRequest, sp *sampling, echo bool) (size, chars int64) {
	for _, ids := range req.promptIDs {
		c := int64(sp.maxTokens)
		if echo {
			c += int64(len(ids))
		}
		chars += int64(sp.n) * c
	}
	choices := int64(len(req.promptIDs) * sp.n)
	per := int64(choiceBytes)
	if req.chat {
		per += chatChoiceBytes
	}
	if sp.format != nil {
		per += formatBytes
	}
	return headBytes + choices*per + chars*perChar(sp, req.chat), chars
}

// formatCharge bounds the memory req's format may hold while it
// generates: formatTokenBytes a token of every row, at most the engine's
// cache cap, and never so much that the request could not run within
// Limits.MaxInFlightBytes beside its response's size.
func (s *Server) formatCharge(req *completionRequest, size int64) int64 {
	sp := &req.sampling
	if sp.format == nil {
		return 0
	}
	c := int64(len(req.promptIDs)*rowsOf(sp)) * int64(sp.maxTokens+1) * formatTokenBytes
	return max(0, min(c, maxFormatCache, s.limits.MaxInFlightBytes-size))
}

// checkSize sets req.size (its response's size bound and what its format
// may hold), or refuses a request whose response could exceed
// Limits.MaxResponseBytes with a 400 that names every field in the
// bound; its param is the field that alone shrinks it most.
func (s *Server) checkSize(req *completionRequest) *api.Error {
	sp := &req.sampling
	size, chars := responseSize(req, sp, req.echo)
	req.size = size + s.formatCharge(req, size)
	limit := s.limits.MaxResponseBytes
	if size <= limit {
		return nil
	}
	param, best := "", size
	try := func(name string, edit func(*sampling) bool, echo bool) {
		t := *sp
		if !edit(&t) {
			return
		}
		if v, _ := responseSize(req, &t, echo); v < best {
			param, best = name, v
		}
	}
	try("max_tokens", func(t *sampling) bool { t.maxTokens = 0; return sp.maxTokens > 0 }, req.echo)
	try("n", func(t *sampling) bool { t.n = 1; return sp.n > 1 }, req.echo)
	try("logprobs", func(t *sampling) bool { t.logprobs = -1; return sp.logprobs >= 0 }, req.echo)
	try("trace", func(t *sampling) bool { t.trace = 0; return sp.trace > 0 }, req.echo)
	try("echo", func(*sampling) bool { return req.echo }, false)
	if param == "" {
		param = "prompt" // a single long echoed prompt, nothing else to cut
	}
	if req.chat {
		if param == "logprobs" && sp.logprobs > 0 {
			param = "top_logprobs"
		}
		lp := "no logprobs"
		if sp.logprobs >= 0 {
			lp = fmt.Sprintf("logprobs and top_logprobs %d", sp.logprobs)
		}
		return api.BadParam(param, "response_too_large",
			"this chat completion's response could hold %d bytes, above this server's limit of %d per request: n %d × max_tokens %d (or max_completion_tokens; the server's limit when neither is given) = %d characters, at up to %d bytes each with %s; ask for fewer (%s first)",
			size, limit, sp.n, sp.maxTokens, chars, perChar(sp, true), lp, param)
	}
	lp := "no logprobs"
	if sp.logprobs >= 0 {
		lp = fmt.Sprintf("logprobs %d", sp.logprobs)
	}
	e := api.BadParam(param, "response_too_large",
		"this request's response could hold %d bytes, above this server's limit of %d per request: %d choices (prompts × n %d) × (echo %t: the prompt's characters, + max_tokens %d) = %d characters, at up to %d bytes each with %s and trace %d; ask for fewer (%s first)",
		size, limit, len(req.promptIDs)*sp.n, sp.n, req.echo, sp.maxTokens, chars, perChar(sp, req.chat), lp, sp.trace, param)
	return e
}
