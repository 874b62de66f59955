package server

// A model over BPE tokens served: its tokenizer in the model list, text
// streamed in whole characters, per-token fields that say exactly which
// bytes a token holds, text offsets in characters, bits per byte, any
// text accepted, and every response batched byte for byte as alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
)

func TestBPEModelList(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	var list struct {
		Data []struct {
			ID, Tokenizer, TokenizerDescription string
			VocabSize                           int `json:"vocab_size"`
			Vocab                               []string
		}
	}
	r := do(t, "GET", ts.URL+"/v1/models", "")
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	_, v := bpeServed()
	for i, want := range []struct {
		id, tokenizer, desc string
		size                int
	}{{"lanternbay", "char", "24 characters", 24}, {"bpe", "bpe", "byte-level BPE, 300 tokens (44 merges)", 300}} {
		m := list.Data[i]
		if m.ID != want.id || m.Tokenizer != want.tokenizer || m.VocabSize != want.size || len(m.Vocab) != want.size {
			t.Errorf("model %d: %s %s %d tokens, %d in vocab; want %+v", i, m.ID, m.Tokenizer, m.VocabSize, len(m.Vocab), want)
		}
	}
	// Tokenizer_description is the tag's JSON name: decode it as such.
	var desc struct {
		Data []struct {
			D string `json:"tokenizer_description"`
		}
	}
	json.Unmarshal(r.body, &desc)
	if desc.Data[1].D != v.String() || desc.Data[0].D != "24 characters" {
		t.Errorf("descriptions %+v", desc.Data)
	}
	// Byte tokens: 'a' is itself, 0xe2 (a three-byte character's first
	// byte) is OpenAI's bytes: form; every entry reads back to the
	// token's bytes.
	bpe := list.Data[1].Vocab
	if bpe['a'] != "a" || bpe[0xe2] != `bytes:\xe2` || bpe[0] != "\x00" {
		t.Errorf("vocab 'a' %q, 0xe2 %q, 0 %q", bpe['a'], bpe[0xe2], bpe[0])
	}
	for id, form := range bpe {
		if got := tokenBytes(t, form); string(got) != v.Token(id) {
			t.Errorf("token %d: form %q reads back as %q, the token is %q", id, form, got, v.Token(id))
		}
	}
}

// bpeJobs are servingJobs over the BPE model, with prompts that hold
// characters of several bytes, some split across tokens.
func bpeJobs(t testing.TB, seed uint64, n int) []servingJob {
	jobs := servingJobs(seed, n)
	prompts := []string{"the café’s ", "a naïve gull — ", "🙂", "the lamp keeper walks the shore at dusk. the boats come home when"}
	for i := range jobs {
		var f map[string]any
		if err := json.Unmarshal([]byte(jobs[i].body), &f); err != nil {
			t.Fatal(err)
		}
		f["model"] = "bpe"
		if _, two := f["prompt"].([]any); two {
			f["prompt"] = []string{prompts[i%4], prompts[(i+1)%4]}
		} else {
			f["prompt"] = prompts[i%4]
		}
		b, _ := json.Marshal(f)
		jobs[i].body = string(b)
	}
	return jobs
}

// TestBPEBatchedMatchesAlone is TestBatchedResponsesMatchSerial over the
// BPE model: every response, byte for byte, the one the same request
// gets alone.
func TestBPEBatchedMatchesAlone(t *testing.T) {
	n := 24
	if testing.Short() {
		n = 10
	}
	jobs := bpeJobs(t, 7, n)
	limits := func(c *Config) {
		withBPE(c)
		c.Limits.Queue, c.Limits.QueueTimeout, c.Limits.MaxTokens = n, time.Minute, 1000
	}
	ref, refTS := newTestServer(t, func(c *Config) { limits(c); c.Limits.Slots = 8 })
	ref.models[1].engine.alone = true
	want := make([]string, n)
	for i, j := range jobs {
		j.disconnect = 0
		status, body, err := serve(context.Background(), refTS.URL, j)
		if err != nil || status != 200 {
			t.Fatalf("job %d alone: %d %v %s\n%s", i, status, err, body, j.body)
		}
		want[i] = body
	}
	for _, rows := range []int{4, 16} {
		_, ts := newTestServer(t, func(c *Config) { limits(c); c.Limits.Slots = rows })
		got, errs := serveTogether(ts.URL, jobs)
		for i, j := range jobs {
			switch {
			case errs[i] != nil:
				t.Errorf("rows %d, job %d %s: %v", rows, i, j.body, errs[i])
			case j.disconnect > 0:
				if !strings.HasPrefix(want[i], got[i]) {
					t.Errorf("rows %d, job %d %s went away: read\n%s\nalone\n%s", rows, i, j.body, got[i], want[i])
				}
			case got[i] != want[i]:
				t.Errorf("rows %d, job %d %s: batched\n%s\nalone\n%s", rows, i, j.body, got[i], want[i])
			}
		}
	}
}

// TestBPEStreamsWholeCharacters: streamed, a BPE model's text comes in
// whole characters: no chunk ends inside a character of the text, though
// its tokens often do (bytes that begin a character a later token cannot
// finish are a character of their own, a U+FFFD); each chunk's text is its tokens' bytes (each byte
// that begins no valid character as U+FFFD), the chunks together the
// whole response's text, and each token's text_offset the number of
// characters before the one it begins in.
func TestBPEStreamsWholeCharacters(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	splits, bad := 0, 0
	for seed := range 24 {
		body := fmt.Sprintf(`{"model":"bpe","prompt":"a naïve gull ate the café","max_tokens":40,"temperature":1.3,"seed":%d,"logprobs":0}`, seed)
		whole := post(t, ts, body).completion(t).Choices[0]
		s := streamed(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
		var all []byte // the generated bytes
		var starts, offsets, ends []int
		var text strings.Builder
		for k, c := range s.chunks {
			ch := c.Choices[0]
			var got []byte
			for j, form := range ch.Logprobs.Tokens {
				starts = append(starts, len(all)+len(got))
				offsets = append(offsets, ch.Logprobs.TextOffset[j])
				tok := tokenBytes(t, form)
				if j > 0 && continuesRune(got) && !utf8.RuneStart(tok[0]) {
					splits++ // a character split across two tokens, held back together
				}
				got = append(got, tok...)
			}
			ends = append(ends, len(all)+len(got))
			if ch.Text != validUTF8(got) {
				t.Errorf("seed %d: chunk %d's text %q, its tokens' %q", seed, k, ch.Text, validUTF8(got))
			}
			all = append(all, got...)
			text.WriteString(ch.Text)
		}
		// Every chunk ends where a character of the whole text ends.
		for k, end := range ends {
			if end < len(all) && charAt(all, end-1) == charAt(all, end) {
				t.Errorf("seed %d: chunk %d ends inside a character: %q | %q", seed, k, all[:end], all[end:])
			}
		}
		for i, at := range starts {
			if want := charAt(all, at); offsets[i] != want {
				t.Errorf("seed %d: token %d at character %d, want %d (bytes %q)", seed, i, offsets[i], want, all)
			}
		}
		if text.String() != whole.Text || whole.Text != validUTF8(all) {
			t.Errorf("seed %d: streamed %q, whole %q, tokens %q", seed, text.String(), whole.Text, all)
		}
		if !utf8.Valid(all) {
			bad++
		}
	}
	// The case is tested: characters split across tokens, and bytes that
	// make no character (an untrained model writes some).
	if splits == 0 || bad == 0 {
		t.Errorf("%d characters split across tokens, %d texts with bytes that begin no character: the cases are not tested", splits, bad)
	}
}

// charAt is the index of the character of text that byte at is in:
// text's characters are utf8.DecodeRune's steps, and the answer is how
// many of them start at or before at, less one.
func charAt(text []byte, at int) int {
	n := 0
	for i := 0; i < len(text) && i <= at; {
		_, size := utf8.DecodeRune(text[i:])
		i += size
		n++
	}
	if at >= len(text) {
		return n
	}
	return n - 1
}

// partialRune is the length of the first bytes of a valid character at
// the end of b (a character a token began and did not finish), or 0.
func partialRune(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		tail := b[len(b)-k:]
		if utf8.RuneStart(tail[0]) {
			if !utf8.FullRune(tail) {
				return k
			}
			return 0
		}
	}
	return 0
}

// continuesRune reports whether b ends with the first bytes of a valid
// character.
func continuesRune(b []byte) bool { return partialRune(b) > 0 }

func TestBPEAcceptsAnyText(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	odd := "KÖNIG €5 🙂\u2028<b>"
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/score"} {
		var body string
		switch path {
		case "/v1/completions":
			body = fmt.Sprintf(`{"model":%%q,"prompt":%q,"max_tokens":3}`, odd)
		case "/v1/chat/completions":
			body = fmt.Sprintf(`{"model":%%q,"messages":[{"role":"user","content":%q}],"max_tokens":3}`, odd)
		default:
			body = fmt.Sprintf(`{"model":%%q,"text":%q}`, odd)
		}
		if r := do(t, "POST", ts.URL+path, fmt.Sprintf(body, "bpe")); r.status != 200 {
			t.Errorf("%s on bpe: %d %s", path, r.status, r.body)
		}
		r := do(t, "POST", ts.URL+path, fmt.Sprintf(body, "lanternbay"))
		if e := r.apiError(t).Error; r.status != 400 || *e.Code != "unknown_character" || !strings.Contains(e.Message, `'K'`) {
			t.Errorf("%s on lanternbay: %d %s", path, r.status, r.body)
		}
	}
	// A one-token text has nothing to score.
	r := do(t, "POST", ts.URL+"/v1/score", `{"model":"bpe","text":" the"}`)
	if e := r.apiError(t).Error; r.status != 400 || !strings.Contains(e.Message, "text is 1 token of model bpe") {
		t.Errorf("one token scored: %d %s", r.status, r.body)
	}
}

// TestBPEBitsPerByte: /v1/score's and echo's bits per byte are the
// library's log-probabilities summed and divided by the scored tokens'
// bytes; a character model's per-character figure on ASCII text is its
// per-byte one.
func TestBPEBitsPerByte(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	m, v := bpeServed()
	text := "the café’s gull — 🙂 at dusk"
	ids, _ := v.Encode(text)
	want, err := m.Score(context.Background(), ids, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	nats := 0.0
	for _, w := range want {
		nats -= w.Logprob
	}
	first := len(v.Token(ids[0]))
	bytesScored := len(text) - first // the text but its first token
	r := do(t, "POST", ts.URL+"/v1/score", fmt.Sprintf(`{"model":"bpe","text":%q,"stride":1}`, text))
	var got scoreView
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sum := got.Summary
	if sum.Tokens != len(ids)-1 || sum.Bytes != bytesScored || sum.Characters != utf8.RuneCountInString(text[first:]) {
		t.Errorf("summary %+v: want %d tokens, %d bytes, %d characters", sum, len(ids)-1, bytesScored, utf8.RuneCountInString(text[first:]))
	}
	if !near(sum.BitsPerByte, nats/math.Ln2/float64(bytesScored)) || !near(sum.BitsPerToken, nats/math.Ln2/float64(len(ids)-1)) ||
		!near(sum.BitsPerChar, nats/math.Ln2/float64(sum.Characters)) {
		t.Errorf("summary %+v, Σ -ln p = %v", sum, nats)
	}
	// Each scored token's offset: the characters before it.
	for i, tk := range got.Tokens {
		start := 0
		for _, id := range ids[:tk.Pos] {
			start += len(v.Token(id))
		}
		if want := utf8.RuneCountInString(text[:start]); utf8.RuneStart(text[start]) && tk.TextOffset != want {
			t.Errorf("token %d at character %d, want %d", i, tk.TextOffset, want)
		}
	}
	// Echo with logprobs scores the prompt the same way, and says so.
	body := fmt.Sprintf(`{"model":"bpe","prompt":%q,"max_tokens":0,"echo":true,"logprobs":0}`, text)
	var echo struct {
		Choices []struct {
			PromptScore struct {
				Tokens       int     `json:"tokens"`
				Bytes        int     `json:"bytes"`
				BitsPerToken float64 `json:"bits_per_token"`
				BitsPerByte  float64 `json:"bits_per_byte"`
			} `json:"prompt_score"`
		}
	}
	for _, stream := range []bool{false, true} {
		b := body
		if stream {
			b = strings.Replace(body, "{", `{"stream":true,`, 1)
		}
		r := post(t, ts, b)
		payload := r.body
		if stream {
			payload = []byte(sseEvents(t, r.body)[0])
		}
		if err := json.Unmarshal(payload, &echo); err != nil || len(echo.Choices) != 1 {
			t.Fatalf("stream %t: %s", stream, r.body)
		}
		ps := echo.Choices[0].PromptScore
		if ps.Tokens != len(ids)-1 || ps.Bytes != bytesScored || !near(ps.BitsPerByte, sum.BitsPerByte) || !near(ps.BitsPerToken, sum.BitsPerToken) {
			t.Errorf("stream %t: prompt_score %+v, score's summary %+v", stream, ps, sum)
		}
	}
	// On ASCII a character model's bits per character are its bits per
	// byte.
	r = do(t, "POST", ts.URL+"/v1/score", `{"text":"the lamp keeper walks the shore"}`)
	json.Unmarshal(r.body, &got)
	if got.Summary.Bytes != 30 || !near(got.Summary.BitsPerByte, got.Summary.BitsPerChar) {
		t.Errorf("lanternbay: %+v", got.Summary)
	}
}

// near reports whether a and b agree to 1e-12, relatively: sums in
// another order.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestBPETraceAndChatLogprobs: a trace names each token by its form, with
// its text offset; chat logprobs give each token's bytes exactly.
func TestBPETraceAndChatLogprobs(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	c := post(t, ts, `{"model":"bpe","prompt":"a naïve ","max_tokens":20,"seed":5,"trace":4,"temperature":1.2}`).completion(t).Choices[0]
	var all []byte
	var starts []int
	for i, st := range c.Trace {
		starts = append(starts, len(all))
		chosen := 0
		for _, cd := range st.Candidates {
			tokenBytes(t, cd.Token) // a form that reads back
			if cd.Chosen {
				chosen++
				if cd.Token != st.Token {
					t.Errorf("step %d: chosen %q, step's token %q", i, cd.Token, st.Token)
				}
			}
		}
		if chosen != 1 {
			t.Errorf("step %d: %d chosen", i, chosen)
		}
		all = append(all, tokenBytes(t, st.Token)...)
	}
	if c.Text != validUTF8(all) {
		t.Errorf("text %q, the trace's tokens %q", c.Text, all)
	}
	for i, at := range starts {
		if want := charAt(all, at); c.Trace[i].TextOffset != want {
			t.Errorf("step %d at character %d, want %d", i, c.Trace[i].TextOffset, want)
		}
	}
	r := postChat(t, ts, `{"model":"bpe","messages":[{"role":"user","content":"the café"}],"max_tokens":20,"seed":2,"logprobs":true,"top_logprobs":2}`)
	var chat struct {
		Choices []struct {
			Message  struct{ Content string }
			Logprobs struct {
				Content []struct {
					Token string
					Bytes []int
					Top   []struct {
						Token string
						Bytes []int
					} `json:"top_logprobs"`
				}
			}
		}
	}
	if err := json.Unmarshal(r.body, &chat); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	all = all[:0]
	for _, e := range chat.Choices[0].Logprobs.Content {
		b := toBytes(e.Bytes)
		if !bytes.Equal(tokenBytes(t, e.Token), b) || len(e.Top) != 2 {
			t.Errorf("entry %+v", e)
		}
		for _, a := range e.Top {
			if !bytes.Equal(tokenBytes(t, a.Token), toBytes(a.Bytes)) {
				t.Errorf("alternative %+v", a)
			}
		}
		all = append(all, b...)
	}
	if chat.Choices[0].Message.Content != validUTF8(all) {
		t.Errorf("content %q, its tokens' bytes %q", chat.Choices[0].Message.Content, all)
	}
}

// TestBPEStopInsideAToken: a stop string may end the text inside a token
// (the library leaves that token out of the ids but keeps the text
// before the stop string): the server's text is the library's, whole and
// streamed, and usage counts the tokens the library kept.
func TestBPEStopInsideAToken(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	m, v := bpeServed()
	inside := 0
	for seed := range 12 {
		for _, stop := range []string{"o", "he", "’"} {
			opts := minigpt.GenerateOptions{MaxNewTokens: 30, Temperature: 1, Seed: uint64(seed), Stop: []string{stop}}
			res, err := m.Complete(context.Background(), v, "the boats ", opts)
			if err != nil {
				t.Fatal(err)
			}
			want := res[0]
			if decoded, _ := v.Decode(want.IDs); decoded != want.Text {
				inside++ // cut inside a token
			}
			body := fmt.Sprintf(`{"model":"bpe","prompt":"the boats ","max_tokens":30,"seed":%d,"stop":%q}`, seed, stop)
			c := post(t, ts, body).completion(t)
			s := streamed(t, ts, strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1))
			if c.Choices[0].Text != validUTF8([]byte(want.Text)) || s.text[0] != c.Choices[0].Text ||
				c.Usage.CompletionTokens != len(want.IDs) || s.usage.CompletionTokens != len(want.IDs) {
				t.Errorf("seed %d, stop %q: text %q streamed %q (%d, %d tokens); the library's %q (%d)",
					seed, stop, c.Choices[0].Text, s.text[0], c.Usage.CompletionTokens, s.usage.CompletionTokens, want.Text, len(want.IDs))
			}
		}
	}
	if inside == 0 {
		t.Error("no stop string cut inside a token: the case is not tested")
	}
}
