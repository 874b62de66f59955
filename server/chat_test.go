package server

// POST /v1/chat/completions: the prompt its messages make, the text
// against cmd/generate and the completions route, the chat shapes whole
// and streamed, logprobs in the chat format, the refusals, and chat
// templates.

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
)

// chatJSON mirrors a chat completion (or chunk) for decoding in tests.
type chatJSON struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Seed              uint64 `json:"seed"`
	Choices           []struct {
		Index   int `json:"index"`
		Message *struct {
			Role    string  `json:"role"`
			Content string  `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs *struct {
			Content []chatLogprobJSON `json:"content"`
		} `json:"logprobs"`
		FinishReason     *string `json:"finish_reason"`
		FormatIncomplete *bool   `json:"format_incomplete"`
		Seed             *uint64 `json:"seed"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type chatLogprobJSON struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	RawBytes    []int   `json:"bytes"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	} `json:"top_logprobs"`
}

func postChat(t testing.TB, ts *httptest.Server, body string) response {
	t.Helper()
	return do(t, "POST", ts.URL+"/v1/chat/completions", body)
}

// chat posts a chat completion that must succeed and decodes it.
func chat(t testing.TB, ts *httptest.Server, body string) chatJSON {
	t.Helper()
	r := postChat(t, ts, body)
	if r.status != 200 {
		t.Fatalf("%s: status %d: %s", body, r.status, r.body)
	}
	var c chatJSON
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return c
}

// chatStream is a streamed chat completion, put together.
type chatStream struct {
	content map[int]string
	finish  map[int]string
	roles   map[int]int // chunks that carried the role, by choice
	first   map[int]bool
	usage   *usage
	lps     map[int][]chatLogprobJSON
	chunks  int
}

// streamChat posts a streamed chat completion and checks its framing:
// chat.completion.chunk events, the role on each choice's first chunk
// only, nothing after a choice's finish_reason, and data: [DONE] last.
func streamChat(t testing.TB, ts *httptest.Server, body string) chatStream {
	t.Helper()
	r := postChat(t, ts, body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%s: status %d %s: %s", body, r.status, r.header.Get("Content-Type"), r.body)
	}
	s := chatStream{content: map[int]string{}, finish: map[int]string{}, roles: map[int]int{}, first: map[int]bool{}, lps: map[int][]chatLogprobJSON{}}
	events := sseEvents(t, r.body)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %q", events)
	}
	for _, ev := range events[:len(events)-1] {
		var c chatJSON
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
			t.Fatalf("chunk %q: object %q, id %q", ev, c.Object, c.ID)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("the usage chunk has choices: %q", ev)
			}
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta == nil || ch.Message != nil {
				t.Fatalf("a chunk's choice without delta, or with a message: %q", ev)
			}
			if _, ok := s.finish[ch.Index]; ok {
				t.Errorf("choice %d: a chunk after its finish_reason: %q", ch.Index, ev)
			}
			if ch.Delta.Role != nil {
				if *ch.Delta.Role != "assistant" || s.first[ch.Index] {
					t.Errorf("choice %d: role %q not on its first chunk: %q", ch.Index, *ch.Delta.Role, ev)
				}
				s.roles[ch.Index]++
			}
			if !s.first[ch.Index] && ch.Delta.Role == nil {
				t.Errorf("choice %d: its first chunk has no role: %q", ch.Index, ev)
			}
			s.first[ch.Index] = true
			if ch.Delta.Content != nil {
				s.content[ch.Index] += *ch.Delta.Content
			}
			if ch.Logprobs != nil {
				s.lps[ch.Index] = append(s.lps[ch.Index], ch.Logprobs.Content...)
			}
			if ch.FinishReason != nil {
				s.finish[ch.Index] = *ch.FinishReason
			}
		}
		s.chunks++
	}
	return s
}

// TestChatMatchesCmdGenerate: the default template concatenates the
// messages' contents, so a chat completion's reply is the text
// cmd/generate writes after that prompt (pinned from a real run of
// go run ./cmd/generate -temperature 0.8 -seed 42 -n 60, as
// TestMatchesCmdGenerate), and the completions route's for the same
// prompt, whole or streamed.
func TestChatMatchesCmdGenerate(t *testing.T) {
	_, ts := newTestServer(t, nil)
	const want = "boats and writes the count in a book. the lantern burns all "
	for _, messages := range []string{
		`[{"role":"user","content":"the "}]`,
		`[{"role":"system","content":"th"},{"role":"user","content":"e "}]`,
		`[{"role":"developer","content":"t"},{"role":"user","content":[{"type":"text","text":"h"},{"type":"text","text":"e"}]},{"role":"assistant","content":" ","name":"bot"}]`,
	} {
		body := `{"messages":` + messages + `,"max_tokens":60,"temperature":0.8,"seed":42}`
		c := chat(t, ts, body)
		ch := c.Choices[0]
		if ch.Message == nil || ch.Message.Content != want || ch.Message.Role != "assistant" || ch.Message.Refusal != nil {
			t.Errorf("%s: %+v, want %q", messages, ch.Message, want)
		}
		if c.Usage == nil || *c.Usage != (usage{4, 60, 64}) {
			t.Errorf("%s: usage %+v", messages, c.Usage)
		}
		st := streamChat(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
		if st.content[0] != want || st.finish[0] != "length" || st.roles[0] != 1 {
			t.Errorf("%s streamed: %q %q, %d roles", messages, st.content[0], st.finish[0], st.roles[0])
		}
	}
	if got := text(t, ts, `{"prompt":"the ","max_tokens":60,"temperature":0.8,"seed":42}`); got != want {
		t.Errorf("the completions route: %q", got)
	}
}

// TestChatResponseShape: OpenAI's chat.completion, with n choices each
// the completion of its own seed, finish reasons, the server's seed and
// fingerprint; max_completion_tokens or max_tokens cap the reply, and
// without either the server's MaxTokens does.
func TestChatResponseShape(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.MaxTokens = 50 })
	c := chat(t, ts, `{"model":"lanternbay","messages":[{"role":"user","content":"the "}],"n":3,"max_completion_tokens":20,"seed":9,"stop":"."}`)
	if !strings.HasPrefix(c.ID, "chatcmpl-") || len(c.ID) != len("chatcmpl-")+24 || c.Object != "chat.completion" || c.Model != "lanternbay" ||
		!strings.HasPrefix(c.SystemFingerprint, "fp_") || c.Seed != 9 || c.Created == 0 || len(c.Choices) != 3 {
		t.Fatalf("%+v", c)
	}
	legacy := post(t, ts, `{"prompt":"the ","n":3,"max_tokens":20,"seed":9,"stop":"."}`).completion(t)
	total := 0
	for i, ch := range c.Choices {
		want := legacy.Choices[i]
		if ch.Index != i || ch.Message.Content != want.Text || *ch.FinishReason != *want.FinishReason || *ch.Seed != *want.Seed || ch.Logprobs != nil {
			t.Errorf("choice %d: %+v %q, the completion %q %q", i, ch, ch.Message.Content, want.Text, *want.FinishReason)
		}
		total += len([]rune(ch.Message.Content))
	}
	if *c.Usage != *legacy.Usage || c.Usage.CompletionTokens != total {
		t.Errorf("usage %+v, the completion's %+v", c.Usage, legacy.Usage)
	}
	for body, n := range map[string]int{
		`{"messages":[{"role":"user","content":"the "}],"max_tokens":7}`:                           7,
		`{"messages":[{"role":"user","content":"the "}],"max_tokens":8,"max_completion_tokens":8}`: 8,
		`{"messages":[{"role":"user","content":"the "}]}`:                                          50,
	} {
		if c := chat(t, ts, body); c.Usage.CompletionTokens != n || len([]rune(c.Choices[0].Message.Content)) != n {
			t.Errorf("%s: %d tokens, want %d", body, c.Usage.CompletionTokens, n)
		}
	}
}

// TestChatStreamShape: chunks in OpenAI's chat format, whose deltas add
// up to the whole response's messages, one finish_reason per choice, and
// the usage chunk with stream_options.include_usage.
func TestChatStreamShape(t *testing.T) {
	_, ts := newTestServer(t, nil)
	body := `{"messages":[{"role":"user","content":"a small "}],"n":2,"max_tokens":40,"temperature":1.2,"seed":5,"stop":["lantern"]}`
	whole := chat(t, ts, body)
	st := streamChat(t, ts, strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1))
	for i, ch := range whole.Choices {
		if st.content[i] != ch.Message.Content || st.finish[i] != *ch.FinishReason || st.roles[i] != 1 {
			t.Errorf("choice %d streamed %q %q, whole %q %q", i, st.content[i], st.finish[i], ch.Message.Content, *ch.FinishReason)
		}
	}
	if st.usage == nil || *st.usage != *whole.Usage {
		t.Errorf("usage %+v, whole %+v", st.usage, whole.Usage)
	}
	if st.chunks < 10 {
		t.Errorf("only %d chunks", st.chunks)
	}
	if st := streamChat(t, ts, `{"stream":true,"messages":[{"role":"user","content":"the "}],"max_tokens":5}`); st.usage != nil {
		t.Errorf("a usage chunk without include_usage")
	}
}

// TestChatLogprobs: logprobs in the chat format, one entry per generated
// character with its UTF-8 bytes and exactly top_logprobs alternatives;
// each value is the completions route's for the same request (its
// token_logprobs and top_logprobs, which TestEchoLogprobs checks against
// the library).
func TestChatLogprobs(t *testing.T) {
	_, ts := newTestServer(t, nil)
	c := chat(t, ts, `{"messages":[{"role":"user","content":"the "}],"max_tokens":30,"seed":2,"logprobs":true,"top_logprobs":3}`)
	legacy := post(t, ts, `{"prompt":"the ","max_tokens":30,"seed":2,"logprobs":3}`).completion(t)
	lps := c.Choices[0].Logprobs.Content
	want := legacy.Choices[0].Logprobs
	if len(lps) != 30 {
		t.Fatalf("%d entries", len(lps))
	}
	var text strings.Builder
	for i, e := range lps {
		text.WriteString(e.Token)
		if e.Token != want.Tokens[i] || e.Logprob != *want.TokenLogprobs[i] || len(e.TopLogprobs) != 3 || string(toBytes(e.RawBytes)) != e.Token {
			t.Errorf("entry %d: %+v, the completion's %q %v", i, e, want.Tokens[i], *want.TokenLogprobs[i])
		}
		prev := math.Inf(1)
		for _, a := range e.TopLogprobs {
			if lp, ok := want.TopLogprobs[i][a.Token]; !ok || lp != a.Logprob || a.Logprob > prev || string(toBytes(a.Bytes)) != a.Token {
				t.Errorf("entry %d: alternative %+v, the completion's %v", i, a, want.TopLogprobs[i])
			}
			prev = a.Logprob
		}
	}
	if text.String() != c.Choices[0].Message.Content {
		t.Errorf("tokens %q, content %q", text.String(), c.Choices[0].Message.Content)
	}
	st := streamChat(t, ts, `{"stream":true,"messages":[{"role":"user","content":"the "}],"max_tokens":30,"seed":2,"logprobs":true,"top_logprobs":3}`)
	if got, _ := json.Marshal(st.lps[0]); string(got) != mustJSON(lps) {
		t.Errorf("streamed logprobs differ:\n%s\n%s", got, mustJSON(lps))
	}
	// logprobs alone: no alternatives.
	if c := chat(t, ts, `{"messages":[{"role":"user","content":"the "}],"max_tokens":3,"logprobs":true}`); len(c.Choices[0].Logprobs.Content) != 3 || len(c.Choices[0].Logprobs.Content[0].TopLogprobs) != 0 {
		t.Errorf("logprobs without top_logprobs: %+v", c.Choices[0].Logprobs)
	}
}

func toBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestChatRefusals: what a character model cannot do is refused by name
// (tools, images, audio, files, JSON output), as are unknown fields and
// malformed messages; a character outside the vocabulary is named with
// its character index counted from 0; what means "nothing" passes.
func TestChatRefusals(t *testing.T) {
	_, ts := newTestServer(t, nil)
	user := `[{"role":"user","content":"the "}]`
	for _, tc := range []struct {
		body, param, want string
	}{
		{`{"messages":` + user + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools", "tools are not supported"},
		{`{"messages":` + user + `,"tool_choice":"auto"}`, "tool_choice", "function calling"},
		{`{"messages":` + user + `,"functions":[{"name":"f"}]}`, "functions", "function calling"},
		{`{"messages":` + user + `,"function_call":"auto"}`, "function_call", "function calling"},
		{`{"messages":` + user + `,"parallel_tool_calls":true}`, "parallel_tool_calls", "function calling"},
		{`{"messages":` + user + `,"audio":{"voice":"alloy","format":"wav"}}`, "audio", "audio output is not supported"},
		{`{"messages":` + user + `,"modalities":["text","audio"]}`, "modalities", "writes text"},
		{`{"messages":` + user + `,"response_format":{"type":"json_object"}}`, "response_format", "the schema needs '{' and '}', which the model never writes"},
		{`{"messages":` + user + `,"store":true}`, "store", `unknown parameter "store"`},
		{`{"messages":` + user + `,"echo":true}`, "echo", `unknown parameter "echo"`},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, "messages[0].content[0]", "is an image: images are not supported"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"the "},{"type":"input_audio","input_audio":{"data":"","format":"wav"}}]}]}`, "messages[0].content[1]", "is audio: audio is not supported"},
		{`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"x"}}]}]}`, "messages[0].content[0]", "is a file"},
		{`{"messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type", `"video" is not supported`},
		{`{"messages":[{"role":"user","content":"the "},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function"}]}]}`, "messages[1].tool_calls", "tools are not supported"},
		{`{"messages":[{"role":"tool","content":"the ","tool_call_id":"c"}]}`, "messages[0].role", "tool results are not supported"},
		{`{"messages":[{"role":"user","content":"the ","audio":{"id":"a"}}]}`, "messages[0].audio", "audio is not supported"},
		{`{"messages":[{"role":"narrator","content":"the "}]}`, "messages[0].role", `"narrator" must be one of system, developer, user, assistant`},
		{`{"messages":[{"role":"user"}]}`, "messages[0].content", "messages[0].content is required"},
		{`{"messages":[{"role":"user","content":"the ","lang":"en"}]}`, "messages[0].lang", "unknown parameter messages[0].lang"},
		{`{"messages":[]}`, "messages", "messages is empty"},
		{`{"messages":"the "}`, "messages", "must be an array of messages"},
		{`{"model":"lanternbay"}`, "messages", "messages is required"},
		{`{"messages":[{"role":"user","content":""}]}`, "messages", "prompt is empty"},
		{`{"messages":[{"role":"user","content":"the "},{"role":"user","content":"The End"}]}`, "messages", `messages[1].content: the character 'T' (U+0054) at character index 0 (counted from 0) is not in model lanternbay's vocabulary " .abcdefghiklmnoprstuvwy"`},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"the "},{"type":"text","text":"keeper!"}]}]}`, "messages", `messages[0].content: the character '!' (U+0021) at character index 10 (counted from 0)`},
		{`{"messages":` + user + `,"top_logprobs":2}`, "top_logprobs", "top_logprobs needs logprobs: true"},
		{`{"messages":` + user + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", "[0, 20]"},
		{`{"messages":` + user + `,"max_tokens":5,"max_completion_tokens":6}`, "max_completion_tokens", "max_tokens 5 and max_completion_tokens 6 differ"},
		{`{"messages":` + user + `,"max_completion_tokens":4097}`, "max_completion_tokens", "[0, 4096]"},
		{`{"messages":` + user + `,"n":16,"logprobs":true,"top_logprobs":20}`, "max_tokens", "this chat completion's response could hold"},
		{`{"messages":` + user + `,"stream_options":{"include_usage":true}}`, "stream_options", "only allowed with stream: true"},
	} {
		r := postChat(t, ts, tc.body)
		e := r.apiError(t)
		if r.status != 400 || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s:\n%d %s\nwant param %q, %q", tc.body, r.status, r.body, tc.param, tc.want)
		}
	}
	for _, body := range []string{
		`{"messages":` + user + `,"tools":null,"tool_choice":null,"functions":[],"audio":null}`,
		`{"messages":` + user + `,"modalities":["text"],"response_format":{"type":"text"},"user":"u"}`,
		`{"messages":[{"role":"assistant","content":"the ","tool_calls":[],"refusal":null}]}`,
	} {
		if r := postChat(t, ts, strings.Replace(body, "{", `{"max_tokens":3,`, 1)); r.status != 200 {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}

// TestChatTemplate: a model's chat template makes the prompt; the reply
// continues it (the completion of that prompt), its characters are
// counted as the prompt's tokens, and a character it adds that the model
// does not know is a 400 naming it and its character index from 0.
func TestChatTemplate(t *testing.T) {
	m, v := lanternBay()
	_, ts := newTestServer(t, func(c *Config) {
		c.Models = []Model{
			{Name: "dialogue", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}}{{.Role}} {{.Content}}. {{end}}assistant "},
			{Name: "colon", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}}{{.Role}}: {{.Content}}{{end}}"},
			{Name: "loop", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}}{{range $.Messages}}{{range $.Messages}}{{.Content}}{{end}}{{end}}{{end}}"},
			{Name: "broken", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}}{{.Mood}}{{end}}"},
		}
	})
	c := chat(t, ts, `{"model":"dialogue","messages":[{"role":"system","content":"the keeper"},{"role":"user","content":"the boats"}],"max_tokens":30,"seed":4}`)
	const prompt = "system the keeper. user the boats. assistant "
	if want := text(t, ts, `{"model":"dialogue","prompt":"`+prompt+`","max_tokens":30,"seed":4}`); c.Choices[0].Message.Content != want || c.Usage.PromptTokens != len(prompt) {
		t.Errorf("the template's prompt: %q with %d prompt tokens, want %q with %d", c.Choices[0].Message.Content, c.Usage.PromptTokens, want, len(prompt))
	}
	r := postChat(t, ts, `{"model":"colon","messages":[{"role":"user","content":"the "}]}`)
	if e := r.apiError(t); r.status != 400 || !strings.Contains(e.Error.Message, "the chat template of model colon adds the character ':' (U+003A), at character index 4 (counted from 0) of the prompt it makes") {
		t.Errorf("a template adding ':': %d %s", r.status, r.body)
	}
	many := `[` + strings.Repeat(`{"role":"user","content":"the boats "},`, 100) + `{"role":"user","content":"a"}]`
	if r := postChat(t, ts, `{"model":"loop","messages":`+many+`}`); r.status != 400 || !strings.Contains(r.apiError(t).Error.Message, "longer than this server's limit of 8192 characters") {
		t.Errorf("a template making 10^6 messages: %d %s", r.status, r.body)
	}
	if r := postChat(t, ts, `{"model":"broken","messages":[{"role":"user","content":"the "}]}`); r.status != 500 || *r.apiError(t).Error.Code != "chat_template_failed" {
		t.Errorf("a template that fails: %d %s", r.status, r.body)
	}
	if _, err := New(Config{Models: []Model{{Name: "bad", Model: m, Vocab: v, ChatTemplate: "{{range .Messages}"}}}); err == nil || !strings.Contains(err.Error(), `model "bad": chat template:`) {
		t.Errorf("a template that does not parse: %v", err)
	}
}
