package server

// This file owns the streamed answer: Server-Sent Events in OpenAI's
// chunk format.

import (
	"encoding/json"
	"net/http"

	"example.org/minigpt/server/internal/api"
)

// sseWriter answers a request with "stream": one event per released piece
// of a choice's text, a finish_reason for each choice, optionally a usage
// chunk, then "data: [DONE]". Each event is one "data:" line holding a JSON
// value (JSON never holds a raw newline) and a blank line, flushed at once
// so the client sees every token as it is generated. Nothing is sent, not
// even the status line, before the generation's first tokens: an echoed
// prompt waits for them, so that a request the library refuses at its
// first token gets the same error status as without "stream".
type sseWriter struct {
	w            http.ResponseWriter
	out          *api.ClientWriter
	enc          encoder
	head         []byte
	choices      []*choiceState
	n            int // choices per prompt
	includeUsage bool
	started      bool
}

func newSSEWriter(w http.ResponseWriter, out *api.ClientWriter, head []byte, req *completionRequest, choices []*choiceState) *sseWriter {
	return &sseWriter{
		w: w, out: out, head: head, choices: choices, n: req.n, includeUsage: req.includeUsage,
		enc: newEncoder(out, req),
	}
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a reverse proxy must not buffer the stream
	s.w.WriteHeader(http.StatusOK)
}

// event sends one chunk: the completion head, the choice write adds (if
// any), and the usage if u is not nil.
func (s *sseWriter) event(write func(), u *usage) error {
	s.start()
	bw := s.enc.w
	bw.WriteString("data: ")
	bw.Write(s.head)
	if write != nil {
		write()
	}
	bw.WriteByte(']')
	if u != nil {
		bw.WriteString(`,"usage":`)
		s.enc.usage(*u)
	}
	bw.WriteString("}\n\n")
	return s.flush()
}

func (s *sseWriter) flush() error {
	if err := s.enc.w.Flush(); err != nil {
		return err
	}
	return s.out.Flush()
}

// sendEcho streams the echoed prompt of prompt p's choices, once.
func (s *sseWriter) sendEcho(p int) error {
	for _, c := range s.choices[p*s.n : (p+1)*s.n] {
		if c.echoSent || c.echo == nil {
			continue
		}
		c.echoSent = true
		if err := s.event(func() { s.enc.choice(c.index, span{echo: c.echo, scored: c.scored}, ending{}) }, nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *sseWriter) tokens(c *choiceState, toks []token, finish string, incomplete bool) error {
	if err := s.sendEcho(c.promptID); err != nil {
		return err
	}
	end := ending{finish: finish}
	if finish != "" {
		// With the sample's last chunk, as its finish_reason.
		end.incomplete, end.seed = incomplete, c.seed
	}
	return s.choiceEvent(c, span{toks: toks, offset: c.chars}, end)
}

// choiceEvent sends one chunk of choice c: its span s, and its ending.
func (s *sseWriter) choiceEvent(c *choiceState, sp span, end ending) error {
	if s.enc.chat {
		role := !c.roleSent
		c.roleSent = true
		return s.event(func() { s.enc.chatChoice(c.index, sp, end, true, role) }, nil)
	}
	return s.event(func() { s.enc.choice(c.index, sp, end) }, nil)
}

func (s *sseWriter) end(u usage) error {
	for p := range len(s.choices) / s.n {
		if err := s.sendEcho(p); err != nil {
			return err
		}
	}
	for _, c := range s.choices {
		if c.finish != "" {
			continue
		}
		// The request's time ran out before the sample finished.
		if err := s.choiceEvent(c, span{offset: c.chars}, ending{finish: "length", incomplete: c.incomplete, seed: c.seed}); err != nil {
			return err
		}
	}
	if s.includeUsage {
		if err := s.event(nil, &u); err != nil {
			return err
		}
	}
	return s.done()
}

// done sends OpenAI's end-of-stream marker.
func (s *sseWriter) done() error {
	s.start()
	s.enc.w.WriteString("data: [DONE]\n\n")
	return s.flush()
}

// fail answers with e's status if nothing was sent yet; otherwise the
// status line is gone, and e goes out as an event, as OpenAI-compatible
// servers do, before the stream ends.
func (s *sseWriter) fail(e *api.Error) {
	if !s.started {
		api.WriteError(s.w, e)
		return
	}
	b, _ := json.Marshal(struct {
		Error *api.Error `json:"error"`
	}{e})
	s.enc.w.WriteString("data: ")
	s.enc.w.Write(b)
	s.enc.w.WriteString("\n\n")
	if s.flush() == nil {
		s.done()
	}
}

func (s *sseWriter) broken() bool { return s.out.Err() != nil }
