package server

// Streams refused like plain requests before their first token, and text
// offsets streamed or whole.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestFirstTokenRefusalsStreamLikePlain: a request the library refuses at
// its first token gets the same 400 streamed as not, before any event
// (issue 26, defect 5: a stream answered 200 with an error event), with
// echo too, and when only a later prompt is refused.
func TestFirstTokenRefusalsStreamLikePlain(t *testing.T) {
	_, ts := newTestServer(t, nil)
	_, vocab := lanternBay()
	var ban []string
	for id := range vocab.Size() {
		ban = append(ban, fmt.Sprintf(`"%d":-100`, id))
	}
	var all strings.Builder
	for id := range vocab.Size() {
		all.WriteString(vocab.Token(id))
	}
	every, _ := json.Marshal(all.String()) // a prompt holding every character
	for _, tc := range []struct{ fields, param string }{
		{`"prompt":"the ","logit_bias":{` + strings.Join(ban, ",") + `}`, "logit_bias"},
		{`"prompt":` + string(every) + `,"no_repeat_ngram_size":1`, "no_repeat_ngram_size"},
		{`"prompt":"the t","no_repeat_ngram_size":2,"logit_bias":{"` + id(t, "h") + `":100}`, "no_repeat_ngram_size"},
		{`"prompt":["the ",` + string(every) + `],"no_repeat_ngram_size":1`, "no_repeat_ngram_size"},
		{`"prompt":"the ","repetition_penalty":1e-320`, "repetition_penalty"},
	} {
		for _, extra := range []string{``, `,"echo":true`, `,"echo":true,"logprobs":2`} {
			body := `{"max_tokens":5,` + tc.fields + extra + `}`
			plain := post(t, ts, body)
			streamed := post(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
			if plain.status != 400 || streamed.status != 400 {
				t.Errorf("%s: status %d, streamed %d: %s", body, plain.status, streamed.status, streamed.body)
				continue
			}
			if !bytes.Equal(plain.body, streamed.body) || plain.apiError(t).Error.Param == nil || *plain.apiError(t).Error.Param != tc.param {
				t.Errorf("%s: %s, streamed %s, want param %s", body, plain.body, streamed.body, tc.param)
			}
		}
	}
}

// id is the token id of a character of the embedded model, as a string.
func id(t *testing.T, ch string) string {
	_, vocab := lanternBay()
	ids, err := vocab.Encode(ch)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(ids[0])
}

// TestTextOffsets: each logprobs token sits at its text_offset in its
// choice's text, offsets in characters: with echo they run on from the
// prompt into the generated text (issue 30: restarting at 0 for the
// generated tokens went unnoticed), streamed or not, and with several
// prompts, samples and a stop string holding characters back.
func TestTextOffsets(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, body := range []string{
		`{"prompt":"the ","max_tokens":20,"echo":true,"logprobs":1,"seed":3}`,
		`{"prompt":"the ","max_tokens":20,"logprobs":0,"seed":3}`,
		`{"prompt":["the keeper ","a "],"n":2,"max_tokens":30,"echo":true,"logprobs":2,"stop":["the b","at "],"seed":5}`,
	} {
		c := post(t, ts, body).completion(t)
		st := streamed(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
		offsets := map[int][]int{}
		tokens := map[int][]string{}
		for _, ch := range st.chunks {
			for _, c := range ch.Choices {
				if c.Logprobs != nil {
					offsets[c.Index] = append(offsets[c.Index], c.Logprobs.TextOffset...)
					tokens[c.Index] = append(tokens[c.Index], c.Logprobs.Tokens...)
				}
			}
		}
		for _, ch := range c.Choices {
			text := []rune(ch.Text)
			lp := ch.Logprobs
			if len(lp.Tokens) != len(text) || len(lp.TextOffset) != len(text) {
				t.Fatalf("%s: choice %d: %d tokens, %d offsets for %d characters", body, ch.Index, len(lp.Tokens), len(lp.TextOffset), len(text))
			}
			for i, tok := range lp.Tokens {
				off := lp.TextOffset[i]
				if off < 0 || off >= len(text) || string(text[off]) != tok || (i > 0 && off != lp.TextOffset[i-1]+1) {
					t.Errorf("%s: choice %d token %d %q at text_offset %d of %q", body, ch.Index, i, tok, off, ch.Text)
				}
			}
			if fmt.Sprint(offsets[ch.Index]) != fmt.Sprint(lp.TextOffset) || fmt.Sprint(tokens[ch.Index]) != fmt.Sprint(lp.Tokens) {
				t.Errorf("%s: choice %d streamed offsets %v tokens %q, whole %v %q", body, ch.Index, offsets[ch.Index], tokens[ch.Index], lp.TextOffset, lp.Tokens)
			}
		}
	}
}

// TestStreamErrorIsFollowedByDone: once a stream has begun, a failure is
// its last event, an OpenAI error object, and "data: [DONE]" follows it,
// as the package documentation and docs/serving.md promise. Here the
// only characters logit_bias leaves are 'a' and 'b', and
// no_repeat_ngram_size 1 bans each once it is written: the third
// character has nothing left to choose, after two have been streamed.
func TestStreamErrorIsFollowedByDone(t *testing.T) {
	_, ts := newTestServer(t, nil)
	body := `{"prompt":"the ","max_tokens":10,"stream":true,"no_repeat_ngram_size":1,"logit_bias":{"` + id(t, "a") + `":100,"` + id(t, "b") + `":100}}`
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		if path != "/v1/completions" {
			body = strings.Replace(body, `"prompt":"the "`, `"messages":[{"role":"user","content":"the "}]`, 1)
		}
		r := do(t, "POST", ts.URL+path, body)
		if r.status != 200 {
			t.Fatalf("%s: status %d: %s", path, r.status, r.body)
		}
		events := sseEvents(t, r.body)
		n := len(events)
		if n < 4 || events[n-1] != "[DONE]" {
			t.Fatalf("%s: the stream does not end with [DONE]: %q", path, events)
		}
		var e errorJSON
		if err := json.Unmarshal([]byte(events[n-2]), &e); err != nil || e.Error.Param == nil || *e.Error.Param != "no_repeat_ngram_size" {
			t.Errorf("%s: the event before [DONE] is not the error: %q", path, events[n-2])
		}
		for _, ev := range events[:n-2] {
			if strings.Contains(ev, `"error"`) {
				t.Errorf("%s: an error before the last event: %q", path, ev)
			}
		}
	}
}
