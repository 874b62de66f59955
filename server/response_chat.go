package server

// This file owns a chat completion's choices as JSON: the message of a
// whole response, the delta of a stream's chunk, and logprobs in the chat
// format.

// chatChoice writes one choice of a chat completion: with delta, a
// stream chunk's {"index", "delta", "logprobs", "finish_reason"}, the
// delta holding the role on the choice's first chunk (role) and the text
// of s; otherwise a whole response's {"index", "message": {"role",
// "content", "refusal"}, "logprobs", "finish_reason"}. The extensions
// format_incomplete and the choice's own seed follow, when given.
func (e *encoder) chatChoice(index int, s span, end ending, delta, role bool) {
	w := e.w
	w.WriteString(`{"index":`)
	e.int(index)
	n := len(s.toks) + len(s.ids)
	switch {
	case !delta:
		w.WriteString(`,"message":{"role":"assistant","content":"`)
		e.text(s)
		w.WriteString(`","refusal":null}`)
	case role:
		w.WriteString(`,"delta":{"role":"assistant","content":"`)
		e.text(s)
		w.WriteString(`"}`)
	case n > 0:
		w.WriteString(`,"delta":{"content":"`)
		e.text(s)
		w.WriteString(`"}`)
	default:
		w.WriteString(`,"delta":{}`)
	}
	w.WriteString(`,"logprobs":`)
	if e.logprobs && (n > 0 || !delta) {
		e.chatLogprobs(s)
	} else {
		w.WriteString("null")
	}
	e.ending(end)
	w.WriteByte('}')
}

// text writes the characters of s's generated tokens as JSON string
// content.
func (e *encoder) text(s span) {
	for _, t := range s.toks {
		e.w.WriteString(e.chars[t.id])
	}
	for _, id := range s.ids {
		e.w.WriteString(e.chars[id])
	}
}

// chatLogprobs writes OpenAI's chat logprobs object, {"content": [...],
// "refusal": null}: per generated character its token, logprob, UTF-8
// bytes and the top_logprobs most likely characters with theirs.
func (e *encoder) chatLogprobs(s span) {
	w := e.w
	entry := func(id int, lp float64) {
		w.WriteString(`{"token":"` + e.chars[id] + `","logprob":`)
		e.float(lp)
		w.WriteString(`,"bytes":` + e.bytes[id])
	}
	w.WriteString(`{"content":[`)
	for i, t := range s.toks {
		if i > 0 {
			w.WriteByte(',')
		}
		entry(t.id, t.logprob)
		w.WriteString(`,"top_logprobs":[`)
		// The top alternatives only: the chosen token is the entry's own.
		for j, a := range t.top[:min(e.top, len(t.top))] {
			if j > 0 {
				w.WriteByte(',')
			}
			entry(a.id, a.logprob)
			w.WriteByte('}')
		}
		w.WriteString("]}")
	}
	w.WriteString(`],"refusal":null}`)
}
