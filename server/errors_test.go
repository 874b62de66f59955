package server

// Refusals: each bad field's status, param, code and message; every numeric
// field naming itself.

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestBadRequests: every refusal is an OpenAI error object with the right
// status, type, param and code, and a message naming the value.
func TestBadRequests(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) {
		c.Limits.MaxTokens = 500
		c.Limits.MaxPromptChars = 50
		c.Limits.MaxChoices = 4
	})
	for _, tc := range []struct {
		name, body string
		status     int
		param      string // "" means null
		code       string
		message    []string // substrings of the message
	}{
		{"temperature too low", `{"prompt":"the ","temperature":-0.5}`, 400, "temperature", "invalid_value", []string{"temperature -0.5", "0 (greedy) or in [1e-6, 1e6]"}},
		{"temperature tiny", `{"prompt":"the ","temperature":1e-9}`, 400, "temperature", "invalid_value", []string{"temperature 1e-09", "0 (greedy) or in [1e-6, 1e6]"}},
		{"temperature string", `{"prompt":"the ","temperature":"hot"}`, 400, "temperature", "invalid_type", []string{"temperature must be a number", `"hot"`}},
		{"top_p zero", `{"prompt":"the ","top_p":0}`, 400, "top_p", "invalid_value", []string{"top_p 0", "(0, 1]"}},
		{"top_p above one", `{"prompt":"the ","top_p":1.5}`, 400, "top_p", "invalid_value", []string{"top_p 1.5"}},
		{"top_k negative", `{"prompt":"the ","top_k":-2}`, 400, "top_k", "invalid_value", []string{"top_k -2"}},
		{"top_k fraction", `{"prompt":"the ","top_k":2.5}`, 400, "top_k", "invalid_type", []string{"top_k must be an integer", "2.5"}},
		{"min_p", `{"prompt":"the ","min_p":1.2}`, 400, "min_p", "invalid_value", []string{"min_p 1.2"}},
		{"repetition_penalty", `{"prompt":"the ","repetition_penalty":0}`, 400, "repetition_penalty", "invalid_value", []string{"repetition_penalty 0", "in (0, 1e6]"}},
		{"repetition_penalty above its limit", `{"prompt":"the ","repetition_penalty":1e7}`, 400, "repetition_penalty", "invalid_value", []string{"repetition_penalty 1e7", "in (0, 1e6]"}},
		{"presence_penalty", `{"prompt":"the ","presence_penalty":3}`, 400, "presence_penalty", "invalid_value", []string{"presence_penalty 3", "[-2, 2]"}},
		{"frequency_penalty", `{"prompt":"the ","frequency_penalty":-2.5}`, 400, "frequency_penalty", "invalid_value", []string{"frequency_penalty -2.5"}},
		{"max_tokens over the cap", `{"prompt":"the ","max_tokens":501}`, 400, "max_tokens", "invalid_value", []string{"max_tokens 501", "[0, 500]"}},
		{"max_tokens negative", `{"prompt":"the ","max_tokens":-1}`, 400, "max_tokens", "invalid_value", []string{"max_tokens -1"}},
		{"n zero", `{"prompt":"the ","n":0}`, 400, "n", "invalid_value", []string{"n 0"}},
		{"n times prompts", `{"prompt":["a","b","c"],"n":2}`, 400, "n", "too_many_choices", []string{"3 prompts × n 2 = 6", "4"}},
		{"logprobs too many", `{"prompt":"the ","logprobs":21}`, 400, "logprobs", "invalid_value", []string{"logprobs 21"}},
		{"stream not bool", `{"prompt":"the ","stream":"yes"}`, 400, "stream", "invalid_type", []string{"stream must be true or false"}},
		{"echo not bool", `{"prompt":"the ","echo":1}`, 400, "echo", "invalid_type", []string{"echo must be true or false"}},
		{"unknown character", `{"prompt":"the Keeper"}`, 400, "prompt", "unknown_character", []string{"'K' (U+004B) at character 4 (counting from 0)"}},
		{"unknown character in the second prompt", `{"prompt":["the ","a bXy"]}`, 400, "prompt", "unknown_character", []string{"prompt[1]", "'X' (U+0058) at character 3 (counting from 0)"}},
		{"empty prompt", `{"prompt":""}`, 400, "prompt", "invalid_value", []string{"prompt is empty"}},
		{"no prompt", `{"max_tokens":5}`, 400, "prompt", "missing_parameter", []string{"prompt is required"}},
		{"empty prompt array", `{"prompt":[]}`, 400, "prompt", "invalid_value", []string{"empty array"}},
		{"token prompt", `{"prompt":[1,2,3]}`, 400, "prompt", "invalid_type", []string{"token-id prompts are not supported"}},
		{"prompt too long", `{"prompt":"` + strings.Repeat("a", 51) + `"}`, 400, "prompt", "invalid_value", []string{"51 characters", "limit of 50"}},
		{"suffix", `{"prompt":"the ","suffix":" end"}`, 400, "suffix", "unsupported_parameter", []string{"suffix", "not supported"}},
		{"best_of above n", `{"prompt":"the ","best_of":3}`, 400, "best_of", "unsupported_parameter", []string{"best_of 3", "n (1)"}},
		{"unknown field", `{"prompt":"the ","temprature":0.5}`, 400, "temprature", "unknown_parameter", []string{`"temprature"`}},
		{"stop too many", `{"prompt":"the ","stop":["a","b","c","d","e"]}`, 400, "stop", "invalid_value", []string{"5 strings"}},
		{"stop empty", `{"prompt":"the ","stop":[""]}`, 400, "stop", "invalid_value", []string{"stop[0]"}},
		{"stop number", `{"prompt":"the ","stop":5}`, 400, "stop", "invalid_type", []string{"stop must be a string or an array"}},
		{"seed negative", `{"prompt":"the ","seed":-1}`, 400, "seed", "invalid_value", []string{"seed -1"}},
		{"seed fraction", `{"prompt":"the ","seed":1.5}`, 400, "seed", "invalid_value", []string{"seed 1.5"}},
		{"seed too big", `{"prompt":"the ","seed":18446744073709551616}`, 400, "seed", "invalid_value", []string{"seed 18446744073709551616"}},
		{"logit_bias key", `{"prompt":"the ","logit_bias":{"a":5}}`, 400, "logit_bias", "invalid_value", []string{`key "a"`, "0 to 23"}},
		{"logit_bias id", `{"prompt":"the ","logit_bias":{"24":5}}`, 400, "logit_bias", "invalid_value", []string{`key "24"`}},
		{"logit_bias value", `{"prompt":"the ","logit_bias":{"3":101}}`, 400, "logit_bias", "invalid_value", []string{`logit_bias["3"] 101`}},
		{"stream_options without stream", `{"prompt":"the ","stream_options":{"include_usage":true}}`, 400, "stream_options", "invalid_value", []string{"stream: true"}},
		{"stream_options unknown", `{"prompt":"the ","stream":true,"stream_options":{"x":1}}`, 400, "stream_options.x", "unknown_parameter", nil},
		{"trace with n", `{"prompt":"the ","trace":3,"n":2}`, 400, "trace", "invalid_value", []string{"single choice"}},
		{"not JSON", `{"prompt":`, 400, "", "invalid_json", []string{"not a JSON object"}},
		{"JSON array", `[1,2]`, 400, "", "invalid_json", []string{"JSON array, want an object"}},
		{"JSON null", `null`, 400, "", "invalid_json", []string{"null"}},
		{"trailing data", `{"prompt":"the "} {}`, 400, "", "invalid_json", []string{"after the JSON object"}},
		{"invalid UTF-8", "{\"prompt\":\"the \xff\"}", 400, "", "invalid_json", []string{"UTF-8"}},
		{"unknown model", `{"model":"gpt-4","prompt":"the "}`, 404, "model", "model_not_found", []string{`"gpt-4"`, "lanternbay"}},
		{"too large", `{"prompt":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "", "request_too_large", []string{"1048576 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ts, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := r.apiError(t).Error
			param := ""
			if e.Param != nil {
				param = *e.Param
			}
			if param != tc.param {
				t.Errorf("param %q, want %q", param, tc.param)
			}
			if e.Code == nil || *e.Code != tc.code {
				t.Errorf("code %v, want %q", e.Code, tc.code)
			}
			wantType := "invalid_request_error"
			if e.Type != wantType {
				t.Errorf("type %q, want %q", e.Type, wantType)
			}
			for _, m := range tc.message {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not contain %q", e.Message, m)
				}
			}
		})
	}
}

// TestAcceptedVariants: values other servers' clients send are accepted.
func TestAcceptedVariants(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, body := range []string{
		`{"prompt":"the ","top_k":-1}`,                     // vLLM's "off"
		`{"prompt":"the ","top_k":0,"min_p":0}`,            // explicit offs
		`{"prompt":"the ","best_of":1,"n":1}`,              // best_of equal to n
		`{"prompt":"the ","suffix":null,"user":"someone"}`, // null suffix, user
		`{"prompt":"the ","suffix":""}`,                    // empty suffix
		`{"prompt":"the ","temperature":null,"stop":null}`, // nulls mean absent
		`{"prompt":"the ","max_tokens":5.0,"n":1.0}`,       // integral floats
		`{"prompt":"the ","logit_bias":{}}`,                // empty bias
		`{"prompt":"the ","presence_penalty":0,"frequency_penalty":0}`,
	} {
		if r := post(t, ts, body); r.status != 200 {
			t.Errorf("%s: status %d: %s", body, r.status, r.body)
		}
	}
}

func TestRoutes(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
		allow        string
	}{
		{"GET", "/v1/completions", 405, "method_not_allowed", "POST"},
		{"PUT", "/v1/models", 405, "method_not_allowed", "GET, HEAD"},
		{"DELETE", "/health", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/engines", 404, "unknown_url", ""},
		{"POST", "/v1/embeddings", 404, "unknown_url", ""},
		{"GET", "/nope", 404, "unknown_url", ""},
		{"GET", "/v1/models/gpt-4", 404, "model_not_found", ""},
		{"GET", "/playground/missing.js", 404, "unknown_url", ""},
		{"GET", "/playground/../server.go", 404, "unknown_url", ""},
		{"POST", "/v1/chat/completions", 400, "invalid_value", ""}, // messages is empty
		{"GET", "/v1/chat/completions", 405, "method_not_allowed", "POST"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := do(t, tc.method, ts.URL+tc.path, `{"model":"lanternbay","messages":[]}`)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := r.apiError(t).Error
			if e.Code == nil || *e.Code != tc.code {
				t.Errorf("code %v, want %s", e.Code, tc.code)
			}
			if got := r.header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

// TestEveryNumericFieldNamesItself sends every numeric field with values
// of every kind (wrong types, each side of its range, overflowing
// numbers, subnormals, fractions), alone, with greedy decoding and with
// beam search, streamed and not: each request is either served (without
// an error event) or refused with the same status and a param that names
// the field itself, never another (issue 26, defect 6: repetition_penalty
// 1e-320 was refused as "temperature").
func TestEveryNumericFieldNamesItself(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.MaxTokens = 64 })
	fields := []string{"max_tokens", "temperature", "top_p", "n", "presence_penalty", "frequency_penalty", "min_p",
		"repetition_penalty", "no_repeat_ngram_size", "num_beams", "length_penalty", "trace", "top_k", "logprobs",
		"best_of", "seed", "logit_bias"}
	values := []string{`"1"`, `true`, `[1]`, `{}`, `-1e999`, `-1e308`, `-101`, `-3`, `-1`, `-1e-320`, `0`, `-0`, `1e-320`,
		`1e-7`, `0.5`, `1`, `1.5`, `2`, `3`, `16`, `17`, `24`, `25`, `64`, `65`, `100`, `101`, `1e6`, `1e7`, `1e308`, `1e999`,
		`18446744073709551616`}
	if testing.Short() {
		values = []string{`"1"`, `-1`, `0`, `1e-320`, `0.5`, `2`, `25`, `1e308`}
	}
	contexts := []string{``, `"temperature":0,`, `"num_beams":2,`}
	for _, f := range fields {
		for _, v := range values {
			for _, ctx := range contexts {
				field := fmt.Sprintf("%q:%s", f, v)
				if f == "logit_bias" {
					field = fmt.Sprintf(`"logit_bias":{"3":%s}`, v)
				}
				if strings.Contains(ctx, `"`+f+`"`) {
					continue
				}
				body := fmt.Sprintf(`{"prompt":"the ","max_tokens":3,%s%s}`, ctx, field)
				if f == "max_tokens" {
					body = fmt.Sprintf(`{"prompt":"the ",%s%s}`, ctx, field)
				}
				plain := post(t, ts, body)
				streamed := post(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
				if plain.status != streamed.status {
					t.Errorf("%s: status %d, streamed %d: %s / %s", body, plain.status, streamed.status, plain.body, streamed.body)
					continue
				}
				if plain.status == 200 {
					if bytes.Contains(streamed.body, []byte(`"error"`)) {
						t.Errorf("%s: streamed with an error event: %s", body, streamed.body)
					}
					continue
				}
				// A pair that does not go together may be refused by the
				// other field's name, if the message names this one too.
				other, _, _ := strings.Cut(strings.Trim(ctx, `"`), `"`)
				for _, r := range []response{plain, streamed} {
					e := r.apiError(t).Error
					own := e.Param != nil && (*e.Param == f || other != "" && *e.Param == other && strings.Contains(e.Message, f))
					if r.status != 400 || !own {
						param := "null"
						if e.Param != nil {
							param = *e.Param
						}
						t.Errorf("%s: %d with param %s: %s", body, r.status, param, e.Message)
					}
				}
			}
		}
	}
}
