package server

// The output's format on both routes: every field that sets one, judged
// by oracles that share nothing with the engine (Go's regexp, the list
// of choices, a recogniser written here, encoding/json and a schema
// check written here), and the 400s of malformed, unsatisfiable and
// conflicting formats.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"example.org/minigpt"
)

// jsonModel is an untrained model over a vocabulary that can write JSON:
// whatever it writes under a format is the format's doing alone.
var jsonModel = sync.OnceValues(func() (*minigpt.Model, *minigpt.Vocab) {
	v, err := minigpt.NewVocab(`{"name": "ab", "age": -12.5e+3, "ok": true, "tags": ["a", false, null]} \/0123456789cdghijkpqvwxyz`)
	if err != nil {
		panic(err)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: v.Size(), BlockSize: 16, EmbedDim: 16, Heads: 2, Layers: 1}, 7)
	if err != nil {
		panic(err)
	}
	return m, v
})

// newGuidedServer serves the embedded model as "lanternbay" and
// jsonModel as "json".
func newGuidedServer(t testing.TB, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	return newTestServer(t, func(c *Config) {
		jm, jv := jsonModel()
		c.Models = append(c.Models, Model{Name: "json", Model: jm, Vocab: jv})
		if edit != nil {
			edit(c)
		}
	})
}

// outcome is one choice of a response, whole or streamed and put
// together.
type outcome struct {
	text       string
	finish     string
	incomplete bool
}

// outcomes posts body to path (/v1/completions or /v1/chat/completions)
// and returns its choices by index. In a stream, format_incomplete may
// come only with a choice's finish_reason; anywhere, only as true.
func outcomes(t testing.TB, ts *httptest.Server, path, body string) []outcome {
	t.Helper()
	r := do(t, "POST", ts.URL+path, body)
	if r.status != 200 {
		t.Fatalf("%s: status %d: %s", body, r.status, r.body)
	}
	payloads := []string{string(r.body)}
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		payloads = sseEvents(t, r.body)
		if len(payloads) == 0 || payloads[len(payloads)-1] != "[DONE]" {
			t.Fatalf("%s: the stream does not end with [DONE]", body)
		}
		payloads = payloads[:len(payloads)-1]
	}
	var out []outcome
	for _, p := range payloads {
		var c struct {
			Choices []struct {
				Index            int
				Text             *string
				Message          *struct{ Content string }
				Delta            *struct{ Content *string }
				FinishReason     *string `json:"finish_reason"`
				FormatIncomplete *bool   `json:"format_incomplete"`
			}
		}
		if err := json.Unmarshal([]byte(p), &c); err != nil {
			t.Fatalf("%s: %v in %s", body, err, p)
		}
		for _, ch := range c.Choices {
			for len(out) <= ch.Index {
				out = append(out, outcome{})
			}
			o := &out[ch.Index]
			switch {
			case ch.Text != nil:
				o.text += *ch.Text
			case ch.Message != nil:
				o.text += ch.Message.Content
			case ch.Delta != nil && ch.Delta.Content != nil:
				o.text += *ch.Delta.Content
			}
			if ch.FormatIncomplete != nil && (!*ch.FormatIncomplete || ch.FinishReason == nil) {
				t.Fatalf("%s: format_incomplete %v with finish_reason %v in %s", body, *ch.FormatIncomplete, ch.FinishReason, p)
			}
			if ch.FinishReason != nil {
				o.finish, o.incomplete = *ch.FinishReason, ch.FormatIncomplete != nil
			}
		}
	}
	return out
}

// Formats and their judges.
const (
	sentence     = `the (lamp|boat|keeper) (glows|drifts|walks)\.`
	words        = `[a-z]{2,5}( [a-z]{2,5}){1,3}\.`
	wordsGrammar = "# two to four words\nroot ::= word (\" \" word){1,3} \".\"\nword ::= [a-z]{1,8}"
	personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"},` +
		`"ok":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},` +
		`"score":{"type":"number","exclusiveMinimum":-1,"maximum":2.5}},` +
		`"required":["name","age","ok","score"],"additionalProperties":false}`
)

func regexJudge(re string) func(string) error {
	oracle := regexp.MustCompile(`^(?:` + re + `)$`)
	return func(s string) error {
		if !oracle.MatchString(s) {
			return fmt.Errorf("%q does not match %s", s, re)
		}
		return nil
	}
}

func choiceJudge(choices ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(choices, s) {
			return fmt.Errorf("%q is none of %q", s, choices)
		}
		return nil
	}
}

// wordsJudge recognises wordsGrammar's language.
func wordsJudge(s string) error {
	body, ok := strings.CutSuffix(s, ".")
	ws := strings.Split(body, " ")
	if !ok || len(ws) < 2 || len(ws) > 4 {
		return fmt.Errorf("%q is not two to four words and a period", s)
	}
	for _, w := range ws {
		if len(w) < 1 || len(w) > 8 || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			return fmt.Errorf("%q: %q is not a word of 1 to 8 letters", s, w)
		}
	}
	return nil
}

// compactJSON checks that s is one JSON text written without
// whitespace, as the formats write it.
func compactJSON(s string) error {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return fmt.Errorf("%q is not JSON: %v", s, err)
	}
	if b.String() != s {
		return fmt.Errorf("%q is not compact JSON", s)
	}
	return nil
}

// personJudge checks s against personSchema: the keys a subsequence of
// the properties in their order, the required ones present, each value
// of its type and within its bounds.
func personJudge(s string) error {
	if err := compactJSON(s); err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return fmt.Errorf("%q is not an object: %v", s, err)
	}
	order, at := []string{"name", "age", "ok", "tags", "score"}, 0
	dec := json.NewDecoder(strings.NewReader(s))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		i := slices.Index(order, k.(string))
		if i < at {
			return fmt.Errorf("%q: key %q out of properties' order, or unknown", s, k)
		}
		at = i + 1
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	var name string
	var ok bool
	var tags []string
	switch {
	case obj["name"] == nil || obj["age"] == nil || obj["ok"] == nil || obj["score"] == nil:
		return fmt.Errorf("%q lacks a required key", s)
	case json.Unmarshal(obj["name"], &name) != nil || utf8.RuneCountInString(name) > 8:
		return fmt.Errorf("%q: name is not a string of at most 8 characters", s)
	case json.Unmarshal(obj["ok"], &ok) != nil:
		return fmt.Errorf("%q: ok is not a boolean", s)
	case obj["tags"] != nil && (json.Unmarshal(obj["tags"], &tags) != nil || len(tags) > 3 || strings.Trim(strings.Join(tags, ""), "ab") != "" || slices.Contains(tags, "")):
		return fmt.Errorf("%q: tags is not an array of at most 3 of \"a\" and \"b\"", s)
	}
	age, err := strconv.ParseFloat(string(obj["age"]), 64)
	if err != nil || age != math.Trunc(age) || bytes.ContainsAny(obj["age"], `"tfn[{`) {
		return fmt.Errorf("%q: age is not an integer", s)
	}
	if obj["score"] != nil {
		score, err := strconv.ParseFloat(string(obj["score"]), 64)
		if err != nil || !(score > -1 && score <= 2.5) || bytes.ContainsAny(obj["score"], `"tfn[{eE`) {
			return fmt.Errorf("%q: score is not a number in (-1, 2.5] without an exponent", s)
		}
	}
	return nil
}

// objectJudge checks that s is a compact JSON object.
func objectJudge(s string) error {
	if err := compactJSON(s); err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return fmt.Errorf("%q is not an object: %v", s, err)
	}
	return nil
}

// TestGuidedFieldsConform: each field that sets a format, on both
// routes, sampled (n, top-k, top-p, temperatures up to 2, logprobs),
// greedy, with beams and streamed, gives text its judge accepts, ended
// with finish_reason "stop" (json_object's may run to max_tokens, which
// it then completes) and never format_incomplete.
func TestGuidedFieldsConform(t *testing.T) {
	_, ts := newGuidedServer(t, nil)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cases := []struct {
		model, fields string
		judge         func(string) error
	}{
		{"lanternbay", `"guided_regex":` + q(sentence), regexJudge(sentence)},
		{"lanternbay", `"response_format":{"type":"regex","regex":` + q(words) + `}`, regexJudge(words)},
		{"lanternbay", `"guided_choice":["yes","no","the lamp glows"]`, choiceJudge("yes", "no", "the lamp glows")},
		{"lanternbay", `"guided_grammar":` + q(wordsGrammar), wordsJudge},
		{"lanternbay", `"grammar":` + q(wordsGrammar) + `,"response_format":{"type":"text"}`, wordsJudge},
		{"json", `"guided_json":` + personSchema, personJudge},
		{"json", `"guided_json":` + q(personSchema), personJudge},
		{"json", `"json_schema":` + personSchema, personJudge},
		{"json", `"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":` + personSchema + `,"strict":true}}`, personJudge},
		{"json", `"response_format":{"type":"json_object"}`, objectJudge},
	}
	decodings := []string{
		`"n":4,"temperature":1.5`, `"temperature":0`, `"num_beams":3,"n":2`,
		`"n":2,"top_k":5,"stream":true`, `"n":3,"top_p":0.9,"temperature":2,"logprobs":2`,
	}
	for i, tc := range cases {
		for j, dec := range decodings {
			for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
				content := "the "
				if tc.model == "json" {
					content = " "
				}
				prompt, knobs := fmt.Sprintf(`"prompt":%q`, content), dec
				if path != "/v1/completions" {
					prompt = fmt.Sprintf(`"messages":[{"role":"user","content":%q}]`, content)
					knobs = strings.Replace(dec, `"logprobs":2`, `"logprobs":true,"top_logprobs":2`, 1)
				}
				body := fmt.Sprintf(`{"model":%q,%s,"max_tokens":160,"seed":%d,%s,%s}`, tc.model, prompt, 10*i+j, tc.fields, knobs)
				for k, o := range outcomes(t, ts, path, body) {
					switch {
					case tc.judge(o.text) != nil:
						t.Errorf("%s %s: choice %d: %v", path, body, k, tc.judge(o.text))
					case o.incomplete:
						t.Errorf("%s %s: choice %d %q is format_incomplete", path, body, k, o.text)
					case o.finish != "stop" && !(o.finish == "length" && strings.Contains(tc.fields, "json_object")):
						t.Errorf("%s %s: choice %d %q finished %q, want stop", path, body, k, o.text, o.finish)
					}
				}
			}
		}
	}
}

// TestGuidedRefusals: a malformed, unsatisfiable, oversized or
// conflicting format, or a field of the wrong type, is a 400 whose param
// is the field, whose message names the place (character index from 0,
// and line and column in text of several lines) or the missing
// characters, the same streamed or not, on both routes.
func TestGuidedRefusals(t *testing.T) {
	_, ts := newGuidedServer(t, nil)
	huge, _ := json.Marshal(strings.Repeat("a", maxFormatBytes+1))
	for _, tc := range []struct {
		fields, param, code, want string
	}{
		{`"guided_regex":"the (lamp"`, "guided_regex", "invalid_format", "at character 0: error parsing regexp: missing closing ): `the (lamp`"},
		{`"guided_regex":"[z-a]"`, "guided_regex", "invalid_format", "at character 1: error parsing regexp: invalid character class range: `z-a`"},
		{`"guided_regex":"a\\bb"`, "guided_regex", "unsupported_format", "at character 1"},
		{`"guided_regex":"[A-Z]+"`, "guided_regex", "unsatisfiable_format", `the pattern needs one of [A-Z], which the model never writes (model lanternbay writes only " .abcdefghiklmnoprstuvwy")`},
		{`"guided_regex":5`, "guided_regex", "invalid_type", "guided_regex must be a string, got a number"},
		{`"guided_regex":` + string(huge), "guided_regex", "format_too_large", "guided_regex has 65537 bytes, above the constraint engine's cap of 65536"},
		{`"guided_choice":"yes"`, "guided_choice", "invalid_type", "must be an array of strings"},
		{`"guided_choice":[]`, "guided_choice", "invalid_value", "empty array"},
		{`"guided_choice":["yes",2]`, "guided_choice", "invalid_type", "must be an array of strings"},
		{`"guided_choice":["YES","NO"]`, "guided_choice", "unsatisfiable_format", "the choices need 'N' and 'O', which the model never writes"},
		{`"guided_grammar":"root ::= \"a\"\nword ::= [a-z"`, "guided_grammar", "invalid_format", "line 2, column 10 (character 22): character class never closed"},
		{`"grammar":"root ::= word\n"`, "grammar", "invalid_format", "line 1, column 10 (character 9): rule word is used but never defined"},
		{`"guided_json":"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"strin\"}}}"`, "guided_json", "unsupported_format", `at character 43: type "strin" is not a JSON Schema type`},
		{`"guided_json":{"type":"object", "minProperties":1}`, "guided_json", "unsupported_format", "minProperties"},
		{`"guided_json":7`, "guided_json", "invalid_type", "a JSON Schema (an object, or a string holding one)"},
		{`"guided_json":{"type":"string"}`, "guided_json", "unsatisfiable_format", `the schema needs '"'`},
		{`"json_schema":"{}"`, "json_schema", "invalid_type", "json_schema must be a JSON Schema object, got a string"},
		{`"json_schema":{"type":"object"}`, "json_schema", "unsatisfiable_format", "needs '{' and '}', which the model never writes"},
		{`"response_format":{"type":"json_object"}`, "response_format", "unsatisfiable_format", "needs '{' and '}', which the model never writes"},
		{`"response_format":"json"`, "response_format", "invalid_type", `an object such as {"type": "json_object"}`},
		{`"response_format":{}`, "response_format.type", "missing_parameter", "response_format.type is required"},
		{`"response_format":{"type":"xml"}`, "response_format.type", "invalid_value", `"xml" is not supported`},
		{`"response_format":{"type":"json_object","schema":{}}`, "response_format.schema", "unknown_parameter", "unknown parameter response_format.schema"},
		{`"response_format":{"type":"json_schema"}`, "response_format.json_schema", "missing_parameter", "is required"},
		{`"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`, "response_format.json_schema.name", "missing_parameter", "name is required"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":"yes","schema":{}}}`, "response_format.json_schema.strict", "invalid_type", "response_format.json_schema.strict must be true or false"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"p"}}`, "response_format.json_schema.schema", "missing_parameter", "schema is required"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"array","minItems":"x"}}}`, "response_format.json_schema.schema", "", "at character"},
		{`"response_format":{"type":"regex"}`, "response_format.regex", "missing_parameter", "response_format.regex is required"},
		{`"response_format":{"type":"regex","regex":"(a|"}`, "response_format.regex", "invalid_format", "missing closing )"},
		{`"guided_regex":"a+","guided_choice":["a"]`, "guided_choice", "conflicting_formats", "guided_regex and guided_choice both set the output's format"},
		{`"grammar":"root ::= \"a\"","response_format":{"type":"regex","regex":"a"}`, "response_format", "conflicting_formats", "grammar and response_format"},
		{`"guided_regex":"the lamp","max_tokens":3`, "max_tokens", "", "max_tokens 3 is too few for the format guided_regex sets: the regex constraint needs at least 8 tokens"},
	} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			prompt := `"prompt":"the "`
			if path != "/v1/completions" {
				prompt = `"messages":[{"role":"user","content":"the "}]`
			}
			body := `{` + prompt + `,` + tc.fields + `}`
			if !strings.Contains(tc.fields, "max_tokens") {
				body = `{` + prompt + `,"max_tokens":40,` + tc.fields + `}`
			}
			plain := do(t, "POST", ts.URL+path, body)
			streamed := do(t, "POST", ts.URL+path, strings.Replace(body, "{", `{"stream":true,`, 1))
			if plain.status != 400 || streamed.status != 400 || !bytes.Equal(plain.body, streamed.body) {
				t.Errorf("%s %.200s: %d, streamed %d %.300s", path, body, plain.status, streamed.status, streamed.body)
				continue
			}
			e := plain.apiError(t).Error
			if e.Param == nil || *e.Param != tc.param || !strings.Contains(e.Message, tc.want) || (tc.code != "" && (e.Code == nil || *e.Code != tc.code)) {
				t.Errorf("%s %.200s:\n%s\nwant param %q, code %q, message with %q", path, body, plain.body, tc.param, tc.code, tc.want)
			}
		}
	}
	// Null is absent, and response_format "text" sets no format.
	for _, fields := range []string{`"guided_regex":null,"guided_choice":["no"]`, `"response_format":{"type":"text"},"guided_choice":["no"]`} {
		if o := outcomes(t, ts, "/v1/completions", `{"prompt":"the ","max_tokens":5,`+fields+`}`); o[0].text != "no" {
			t.Errorf("%s: %q, want no", fields, o[0].text)
		}
	}
}
