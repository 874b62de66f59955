package server

// Fuzzing the completion and chat completion request parsers.

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCompletionRequest feeds arbitrary bodies to POST /v1/completions:
// the server never panics and always answers with a completion or an
// OpenAI error object, with a status from the documented set.
func FuzzCompletionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"the ","max_tokens":4}`,
		`{"prompt":["the ","a "],"n":2,"stop":["e"],"logprobs":2,"echo":true}`,
		`{"prompt":"the ","stream":true,"stream_options":{"include_usage":true},"trace":3}`,
		`{"prompt":"the ","logit_bias":{"3":-100},"seed":18446744073709551615,"top_k":-1}`,
		`{"prompt":"the ","temperature":1e308,"top_p":1e-300,"min_p":1}`,
		`{"prompt":"","suffix":"x","best_of":2}`,
		`[]`, `null`, `{"prompt":"\u0000"}`, `{"prompt":"the ","max_tokens":1e999}`,
	} {
		f.Add(seed)
	}
	m, v := lanternBay()
	s, err := New(Config{Models: []Model{{Name: "lanternbay", Model: m, Vocab: v}}, Limits: Limits{MaxTokens: 8, MaxBodyBytes: 4096}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(w, r)
		switch w.Code {
		case 200:
			if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
				if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
					t.Fatalf("stream without [DONE] for %q", body)
				}
				return
			}
			var c completionJSON
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || c.Object != "text_completion" {
				t.Fatalf("200 with body %q for %q", w.Body, body)
			}
		case 400, 404, 413:
			var e errorJSON
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%d with body %q for %q", w.Code, w.Body, body)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}

// FuzzChatRequest feeds arbitrary bodies to POST /v1/chat/completions,
// on a model whose chat template writes the roles: the server never
// panics and always answers with a chat completion or an OpenAI error
// object, with a status from the documented set.
func FuzzChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"the "}],"max_tokens":4}`,
		`{"messages":[{"role":"system","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}],"n":2,"logprobs":true,"top_logprobs":2,"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}],"tools":[]}`,
		`{"messages":[{"role":"tool","content":"x","tool_call_id":"c"}],"max_completion_tokens":3,"max_tokens":3}`,
		`{"messages":[{"role":"user","content":"\u0000"}],"response_format":{"type":"json_object"}}`,
		`{"messages":[]}`, `{"messages":null}`, `[]`, `{"messages":[{"role":"user","content":"the "}],"modalities":["text"]}`,
	} {
		f.Add(seed)
	}
	m, v := lanternBay()
	s, err := New(Config{Models: []Model{{Name: "lanternbay", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}}{{.Role}} {{.Content}}. {{end}}"}},
		Limits: Limits{MaxTokens: 8, MaxBodyBytes: 4096, MaxPromptChars: 256}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(w, r)
		switch w.Code {
		case 200:
			if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
				if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
					t.Fatalf("stream without [DONE] for %q", body)
				}
				return
			}
			var c chatJSON
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || c.Object != "chat.completion" || len(c.Choices) == 0 || c.Choices[0].Message == nil {
				t.Fatalf("200 with body %q for %q", w.Body, body)
			}
		case 400, 404, 413:
			var e errorJSON
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%d with body %q for %q", w.Code, w.Body, body)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}
