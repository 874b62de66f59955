package server

// This file owns the non-streamed answer: one JSON completion, written
// once the generation ends.

import (
	"net/http"

	"example.org/minigpt/server/internal/api"
)

// jsonWriter answers a request without "stream": it keeps each choice's
// tokens as they are released (ids alone when neither logprobs nor trace
// is asked for), and once the generation ends writes the completion choice
// by choice through a small buffer, never holding its encoding whole.
type jsonWriter struct {
	w       http.ResponseWriter
	out     *api.ClientWriter
	enc     encoder
	head    []byte
	keep    bool // keep whole tokens, not ids
	choices []*choiceState
}

func newJSONWriter(w http.ResponseWriter, out *api.ClientWriter, head []byte, req *completionRequest, choices []*choiceState) *jsonWriter {
	return &jsonWriter{
		w: w, out: out, head: head, choices: choices,
		keep: req.logprobs >= 0 || req.trace > 0,
		enc:  newEncoder(out, req),
	}
}

func (j *jsonWriter) tokens(c *choiceState, toks []token, finish string, incomplete bool) error {
	if j.keep {
		c.toks = append(c.toks, toks...)
		return nil
	}
	for _, t := range toks {
		c.ids = append(c.ids, int32(t.id))
	}
	return nil
}

func (j *jsonWriter) end(u usage) error {
	j.w.Header().Set("Content-Type", "application/json")
	j.w.WriteHeader(http.StatusOK)
	bw := j.enc.w
	bw.Write(j.head)
	for i, c := range j.choices {
		if i > 0 {
			bw.WriteByte(',')
		}
		end := ending{finish: c.finish, incomplete: c.incomplete, seed: c.seed}
		if end.finish == "" {
			end.finish = "length" // the request's time ran out
		}
		sp := span{echo: c.echo, scored: c.scored, toks: c.toks, ids: c.ids}
		if j.enc.chat {
			j.enc.chatChoice(c.index, sp, end, false, false)
		} else {
			j.enc.choice(c.index, sp, end)
		}
		c.toks, c.ids = nil, nil // written: the memory can go
		if j.out.Err() != nil {
			return j.out.Err()
		}
	}
	bw.WriteString(`],"usage":`)
	j.enc.usage(u)
	bw.WriteString("}\n")
	if err := bw.Flush(); err != nil {
		return err
	}
	return j.out.Err()
}

func (j *jsonWriter) fail(e *api.Error) { api.WriteError(j.w, e) }

func (j *jsonWriter) broken() bool { return j.out.Err() != nil }
