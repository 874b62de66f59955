package server

// This file owns POST /v1/score, an extension for the playground's Score
// tab: every token's log-probability under a model
// (minigpt.Model.Score), its surprisal in bits and the model's top
// predictions there, with the text's mean loss, perplexity and bits per
// token (cmd/eval's figures), and bits per character and per byte, which
// compare models over characters with models over BPE tokens.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// scoreFields are the fields POST /v1/score accepts.
var scoreFields = []string{"model", "text", "stride", "top_n"}

// maxScoreTop bounds top_n, as logprobs.
const maxScoreTop = maxLogprobs

// Bytes per scored token in the response (its fields, two float64s, the
// context and the offset) beside its form, per top_n entry beside its
// form, and the rest.
const (
	scoreTokenBytes = 150
	scoreTopBytes   = 50
	scoreHeadBytes  = 640
)

type scoreRequest struct {
	model  *servedModel
	text   string
	ids    []int
	stride int
	top    int
	size   int64
}

// scoreTokenJSON is one scored token (the shape of cmd/eval -jsonl), and
// the character of the text it begins in.
type scoreTokenJSON struct {
	Pos        int            `json:"pos"`
	Token      string         `json:"token"` // its form (vocabulary.display)
	TextOffset int            `json:"text_offset"`
	Logprob    float64        `json:"logprob"`
	Bits       float64        `json:"bits"`
	Context    int            `json:"context"`
	Top        []scoreTopJSON `json:"top,omitempty"`
}

type scoreTopJSON struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// scoreSummaryJSON sums a text's scores up: over the Tokens scored (every
// token but the first, which nothing predicts), their mean -log p in nats
// (Loss), its perplexity, and Σ -log2 p divided by the tokens
// (BitsPerToken), by the Characters and Bytes of the text they hold
// (BitsPerChar, BitsPerByte). For a character model a token is a
// character, and BitsPerChar is BitsPerToken.
type scoreSummaryJSON struct {
	Tokens       int     `json:"tokens"`
	Characters   int     `json:"characters"`
	Bytes        int     `json:"bytes"`
	Loss         float64 `json:"loss"`
	Perplexity   float64 `json:"perplexity"`
	BitsPerToken float64 `json:"bits_per_token"`
	BitsPerChar  float64 `json:"bits_per_char"`
	BitsPerByte  float64 `json:"bits_per_byte"`
}

func (s *Server) parseScore(w http.ResponseWriter, r *http.Request) (*scoreRequest, *api.Error) {
	f, aerr := api.ReadObject(w, r, s.limits.MaxBodyBytes, scoreFields, "POST /v1/score accepts "+strings.Join(scoreFields, ", "))
	if aerr != nil {
		return nil, aerr
	}
	req := &scoreRequest{}
	if req.model, aerr = s.requestModel(f); aerr != nil {
		return nil, aerr
	}
	raw, ok := f["text"]
	if !ok || api.IsNull(raw) {
		return nil, api.BadParam("text", "missing_parameter", "text is required: the text to score")
	}
	var text string
	if err := f.Str("text", &text); err != nil {
		return nil, err
	}
	vc := req.model.vocab
	switch n := utf8.RuneCountInString(text); {
	case n < 2 && vc.kind == kindChar:
		return nil, api.BadParam("text", "invalid_value", "text has %d characters: scoring needs at least 2 (the first has nothing to be predicted from)", n)
	case n > s.limits.MaxPromptChars:
		return nil, api.BadParam("text", "invalid_value", "text has %d characters, above this server's limit of %d", n, s.limits.MaxPromptChars)
	}
	ids, err := req.model.engine.encode(text)
	if err != nil {
		// Only a character vocabulary refuses text: BPE encodes any.
		return nil, api.BadParam("text", "unknown_character", "text: %v (model %s knows only %q)", err, req.model.name, vc.chars)
	}
	if len(ids) < 2 {
		return nil, api.BadParam("text", "invalid_value", "text is %d token of model %s (%s): scoring needs at least 2 (the first has nothing to be predicted from)", len(ids), req.model.name, vc.describe)
	}
	req.text, req.ids = text, ids
	c := req.model.config
	for _, err := range []*api.Error{
		f.Integer("stride", &req.stride, 0, c.BlockSize),
		f.Integer("top_n", &req.top, 0, min(maxScoreTop, c.VocabSize)),
	} {
		if err != nil {
			return nil, err
		}
	}
	form := int64(vc.longestForm)
	per := scoreTokenBytes + form + int64(req.top)*(scoreTopBytes+form)
	req.size = scoreHeadBytes + int64(len(ids))*per
	if req.size > s.limits.MaxResponseBytes {
		return nil, api.BadParam("top_n", "response_too_large", "this score's response could hold %d bytes, above this server's limit of %d per request: %d tokens at up to %d bytes each with top_n %d; ask for fewer (top_n first)",
			req.size, s.limits.MaxResponseBytes, len(ids), per, req.top)
	}
	return req, nil
}

// serveScore scores a text: POST /v1/score. It takes a row of its model's
// batch as a one-sample completion does (scoring is the same forward
// pass, run beside the batch), and counts as a request in progress for
// draining and for training jobs, which wait.
func (s *Server) serveScore(w http.ResponseWriter, r *http.Request) {
	req, aerr := s.parseScore(w, r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	if !s.admit() {
		api.WriteError(w, api.ShuttingDown())
		return
	}
	defer s.leave()
	ctx := r.Context()
	if _, err := s.slots.acquire(ctx, s.base, &req.model.rows, 1, req.size, s.limits.QueueTimeout); err != nil {
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errClosed):
			api.WriteError(w, api.ShuttingDown())
		default:
			e := api.NewError(http.StatusTooManyRequests, "rate_limit_error", "server_busy", "%v (%d rows per model, %d queued): retry later", err, s.limits.Slots, max(s.limits.Queue, 0))
			e.RetryAfter = 1
			api.WriteError(w, e)
		}
		return
	}
	defer s.slots.releaseBytes(req.size)
	cctx, closed := context.WithCancelCause(ctx)
	defer closed(nil)
	stop := context.AfterFunc(s.base, func() { closed(errClosed) })
	defer stop()
	sctx, cancel := context.WithTimeout(cctx, s.limits.RequestTimeout)
	defer cancel()
	scores, sum, err := req.model.engine.score(sctx, req.text, req.ids, req.stride, req.top)
	s.slots.releaseRows(&req.model.rows, 1)
	switch {
	case ctx.Err() != nil:
		return // the client went away
	case context.Cause(cctx) == errClosed:
		api.WriteError(w, api.ShuttingDown())
		return
	case errors.Is(err, context.DeadlineExceeded):
		api.WriteError(w, api.NewError(http.StatusServiceUnavailable, "service_unavailable", "timeout",
			"scoring %d tokens took longer than this server's request timeout (%v): send a shorter text or a larger stride", len(req.ids), s.limits.RequestTimeout))
		return
	case err != nil:
		api.WriteError(w, api.NewError(http.StatusInternalServerError, "server_error", "scoring_failed", "scoring failed: %v", err))
		return
	}
	if math.IsNaN(sum.Loss) || math.IsInf(sum.Loss, 0) {
		api.WriteError(w, api.NewError(http.StatusInternalServerError, "server_error", "scoring_failed", "the model gave a non-finite loss (%v)", sum.Loss))
		return
	}
	s.writeScore(w, req, scores, sum)
}

// writeScore writes the response token by token through a small buffer,
// under the write deadlines a completion has.
func (s *Server) writeScore(w http.ResponseWriter, req *scoreRequest, scores []minigpt.Step, sum scoreSummaryJSON) {
	out := api.NewClientWriter(w, s.limits.WriteTimeout, time.Now().Add(s.limits.WriteTimeout+s.limits.RequestTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(out, 4<<10)
	m := req.model
	stride := req.stride
	if stride == 0 {
		stride = m.config.BlockSize
	}
	head, _ := json.Marshal(struct {
		Object            string           `json:"object"`
		Model             string           `json:"model"`
		SystemFingerprint string           `json:"system_fingerprint"`
		ContextLength     int              `json:"context_length"`
		Stride            int              `json:"stride"`
		Summary           scoreSummaryJSON `json:"summary"`
	}{"score", m.name, m.fingerprint, m.config.BlockSize, stride,
		sum})
	bw.Write(head[:len(head)-1]) // without its closing brace
	bw.WriteString(`,"tokens":[`)
	vc := m.vocab
	offsets := charOffsets(nil, req.text, req.ids, vc.tokens, 0)
	for i, sc := range scores {
		if i > 0 {
			bw.WriteByte(',')
		}
		t := scoreTokenJSON{Pos: sc.Pos, Token: vc.display[sc.Chosen.ID], TextOffset: offsets[sc.Pos], Logprob: sc.Logprob, Bits: -sc.Logprob / math.Ln2, Context: sc.Context}
		for _, c := range sc.Top {
			t.Top = append(t.Top, scoreTopJSON{vc.display[c.ID], c.Logprob})
		}
		b, _ := json.Marshal(t) // finite: the loss was
		bw.Write(b)
		if out.Err() != nil {
			return
		}
	}
	bw.WriteString("]}\n")
	bw.Flush()
}
