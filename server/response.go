package server

// This file owns a completion's content as it is generated (each choice's
// state), its JSON encoding, and the deadline-bound writes to the client;
// response_json.go and response_sse.go send it whole or as events.

import (
	"bufio"
	"encoding/json"
	"math"
	"strconv"

	"example.org/minigpt/server/internal/api"
)

// usage is OpenAI's token count of a response.
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
	// Attention, with trace_attention, is the attention weights of the
	// position that chose the token: [layer][head][s] over the s-th of the
	// characters before it that the model saw (the last len of them).
	Attention [][][]float64 `json:"attention,omitempty"`
}

type candidateJSON struct {
	Token  string    `json:"token"`
	ID     int       `json:"id"`
	Probs  []float64 `json:"probs"`            // after each stage, in Stages order
	CutBy  string    `json:"cut_by,omitempty"` // the stage that removed it
	Chosen bool      `json:"chosen,omitempty"`
}

// token is one generated token as the client sees it.
type token struct {
	id      int
	logprob float64    // natural log of its raw probability (with logprobs)
	top     []altProb  // the most likely alternatives (with logprobs)
	trace   *traceJSON // with trace
}

// altProb is a candidate token and its log-probability.
type altProb struct {
	id      int
	logprob float64
}

// choiceState is one choice as generated so far.
type choiceState struct {
	index    int
	promptID int
	seed     *uint64 // the sample's own seed, when sampling
	echo     []int   // the echoed prompt's ids (with echo)
	scored   []token // with echo and logprobs, scored[j-1] scores echo[j]; shorter if time ran out
	echoSent bool    // its echo has been streamed
	roleSent bool    // a chat stream: its first chunk, with the role, has been sent
	chars    int     // characters of its text so far, the echo included
	nTokens  int     // generated tokens released
	finish   string  // "" until the library's last chunk of the sample
	// incomplete: the text ended short of the request's format, cut by
	// a stop string or by the request's time
	incomplete bool
	toks       []token // generated tokens kept for a whole response, with logprobs or trace
	ids        []int32 // generated ids kept for a whole response, without
}

// completionWriter sends a completion to the client as it is generated.
type completionWriter interface {
	// tokens is called with a choice's released tokens, and on its last
	// call with its finish reason and whether its text fell short of the
	// format; c is as it was before them.
	tokens(c *choiceState, toks []token, finish string, incomplete bool) error
	// end sends the rest of the response, every choice as far as it got
	// (finish_reason "length" for those the time cut, format_incomplete
	// when their text falls short of the format).
	end(u usage) error
	// fail reports a generation error: with its status if nothing was
	// sent yet, otherwise as the stream's last event.
	fail(e *api.Error)
	// broken reports whether a write to the client failed.
	broken() bool
}

// jsonChars returns each character's JSON string content (escaped as
// encoding/json escapes it), so that a text is written character by
// character.
func jsonChars(chars []rune) []string {
	out := make([]string, len(chars))
	for i, r := range chars {
		b, _ := json.Marshal(string(r))
		out[i] = string(b[1 : len(b)-1])
	}
	return out
}

// jsonBytes returns each character's UTF-8 bytes as a JSON array
// ("[195,169]"), the "bytes" of chat logprobs.
func jsonBytes(chars []rune) []string {
	out := make([]string, len(chars))
	for i, r := range chars {
		b := []byte("[")
		for j, c := range []byte(string(r)) {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(c), 10)
		}
		out[i] = string(append(b, ']'))
	}
	return out
}

// head returns a completion object's opening up to its choices array:
// `{"id":…,"object":object,…,"seed":…,"choices":[`.
func head(object, id string, created int64, m *servedModel, seed uint64) []byte {
	b := []byte(`{"id":`)
	b = strconv.AppendQuote(b, id) // hex: no escape needed
	b = append(b, `,"object":"`+object+`","created":`...)
	b = strconv.AppendInt(b, created, 10)
	name, _ := json.Marshal(m.name)
	fp, _ := json.Marshal(m.fingerprint)
	b = append(append(append(b, `,"model":`...), name...), `,"system_fingerprint":`...)
	b = append(append(b, fp...), `,"seed":`...)
	b = strconv.AppendUint(b, seed, 10)
	return append(b, `,"choices":[`...)
}

// span is a run of a choice's characters to encode: its echoed prompt
// (with its scores), then generated tokens (toks, or ids when neither
// logprobs nor trace is asked for).
type span struct {
	echo   []int
	scored []token
	toks   []token
	ids    []int32
	offset int // text_offset of the span's first character
}

// encoder writes a model's choices as JSON to a buffered writer, in the
// legacy completion's shape (choice) or the chat completion's
// (chatChoice, response_chat.go).
type encoder struct {
	w        *bufio.Writer
	chars    []string // token id -> JSON string content
	bytes    []string // token id -> its UTF-8 bytes as a JSON array
	chat     bool     // a chat completion
	logprobs bool     // the request asked for logprobs
	top      int      // with logprobs, the alternatives per token
	scratch  []byte
}

// newEncoder returns req's encoder, writing to out through a small
// buffer: each write must be accepted within WriteTimeout, so a client
// reading slowly but steadily never misses one.
func newEncoder(out *api.ClientWriter, req *completionRequest) encoder {
	m := req.model
	return encoder{w: bufio.NewWriterSize(out, 4<<10), chars: m.jsonChars, bytes: m.jsonBytes,
		chat: req.chat, logprobs: req.logprobs >= 0, top: req.logprobs}
}

// ending is what follows a choice's content: why it ended ("" in a
// stream's chunk before its last), whether its text fell short of the
// request's format, and the sample's seed (nil for none, or before the
// last chunk).
type ending struct {
	finish     string
	incomplete bool
	seed       *uint64
}

// choice writes one choice object: OpenAI's text, index, logprobs (null
// unless asked for) and finish_reason, then the extensions
// format_incomplete, seed and trace when present.
func (e *encoder) choice(index int, s span, end ending) {
	w := e.w
	w.WriteString(`{"text":"`)
	for _, id := range s.echo {
		w.WriteString(e.chars[id])
	}
	for _, t := range s.toks {
		w.WriteString(e.chars[t.id])
	}
	for _, id := range s.ids {
		w.WriteString(e.chars[id])
	}
	w.WriteString(`","index":`)
	e.int(index)
	w.WriteString(`,"logprobs":`)
	if e.logprobs {
		e.logprobsObject(s)
	} else {
		w.WriteString("null")
	}
	e.ending(end)
	if len(s.toks) > 0 && s.toks[0].trace != nil {
		w.WriteString(`,"trace":[`)
		for i, t := range s.toks {
			if i > 0 {
				w.WriteByte(',')
			}
			b, _ := json.Marshal(t.trace) // finite floats only: probabilities and log-probabilities of finite logits
			w.Write(b)
		}
		w.WriteByte(']')
	}
	w.WriteByte('}')
}

// logprobsObject writes OpenAI's legacy logprobs object, one entry per
// character: an echoed prompt's first character, and any the time left
// unscored, have null log-probabilities.
func (e *encoder) logprobsObject(s span) {
	w := e.w
	n := len(s.echo) + len(s.toks) + len(s.ids)
	sep := func(i int) {
		if i > 0 {
			w.WriteByte(',')
		}
	}
	// at returns character i's token (nil for an unscored echo).
	at := func(i int) (id int, t *token) {
		if i < len(s.echo) {
			if i == 0 || i-1 >= len(s.scored) {
				return s.echo[i], nil
			}
			return s.echo[i], &s.scored[i-1]
		}
		t = &s.toks[i-len(s.echo)]
		return t.id, t
	}
	w.WriteString(`{"tokens":[`)
	for i := range n {
		sep(i)
		id, _ := at(i)
		w.WriteString(`"` + e.chars[id] + `"`)
	}
	w.WriteString(`],"token_logprobs":[`)
	for i := range n {
		sep(i)
		if _, t := at(i); t == nil {
			w.WriteString("null")
		} else {
			e.float(t.logprob)
		}
	}
	w.WriteString(`],"top_logprobs":[`)
	for i := range n {
		sep(i)
		_, t := at(i)
		if t == nil {
			w.WriteString("null")
			continue
		}
		w.WriteByte('{') // most probable first, as a Go map would not be
		for j, a := range t.top {
			sep(j)
			w.WriteString(`"` + e.chars[a.id] + `":`)
			e.float(a.logprob)
		}
		w.WriteByte('}')
	}
	w.WriteString(`],"text_offset":[`)
	for i := range n {
		sep(i)
		e.int(s.offset + i)
	}
	w.WriteString("]}")
}

// ending writes a choice's "finish_reason" (null before its last chunk),
// then "format_incomplete": true when its text fell short of the format
// (an extension, absent otherwise), and its "seed" if it has one.
func (e *encoder) ending(end ending) {
	w := e.w
	w.WriteString(`,"finish_reason":`)
	if end.finish == "" {
		w.WriteString("null")
	} else {
		w.WriteString(`"` + end.finish + `"`) // "length" or "stop"
	}
	if end.incomplete {
		w.WriteString(`,"format_incomplete":true`)
	}
	if end.seed != nil {
		w.WriteString(`,"seed":`)
		e.scratch = strconv.AppendUint(e.scratch[:0], *end.seed, 10)
		w.Write(e.scratch)
	}
}

func (e *encoder) int(v int) {
	e.scratch = strconv.AppendInt(e.scratch[:0], int64(v), 10)
	e.w.Write(e.scratch)
}

// float writes x as encoding/json writes a float64. JSON has no infinity:
// a log-probability of −Inf (probability zero) is written as the most
// negative float64, as OpenAI-compatible servers write a finite stand-in
// (−9999 in vLLM).
func (e *encoder) float(x float64) {
	if math.IsNaN(x) {
		e.w.WriteString("null")
		return
	}
	if math.IsInf(x, 0) {
		x = math.Copysign(math.MaxFloat64, x)
	}
	f := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	b := strconv.AppendFloat(e.scratch[:0], x, f, -1, 64)
	if n := len(b); f == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 -> e-7, as encoding/json
		b = b[:n-1]
	}
	e.scratch = b
	e.w.Write(b)
}

// usage writes a usage object.
func (e *encoder) usage(u usage) {
	b, _ := json.Marshal(u)
	e.w.Write(b)
}
