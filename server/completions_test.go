package server

// The server's text against cmd/generate and the library, the response
// shape, seeds, prompts and n, stop, streaming chunks, echo logprobs.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt"
)

// TestMatchesCmdGenerate pins the server's text to cmd/generate's for the
// same settings. The expected strings were printed by real runs of
//
//	go run ./cmd/generate <flags>
//
// (prompt included), so the test checks the server against the CLI a user
// would compare it with, not against the server's own code path.
func TestMatchesCmdGenerate(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, tc := range []struct {
		flags, body, want string
	}{
		{"-greedy -n 60 -prompt the", `{"prompt":"the","max_tokens":60,"temperature":0}`,
			"the boats come home when the lantern glows. the boats wait outs"},
		{"-temperature 0.8 -seed 42 -n 60", `{"prompt":"the ","max_tokens":60,"temperature":0.8,"seed":42}`,
			"the boats and writes the count in a book. the lantern burns all "},
		{"-temperature 1.5 -seed 7 -n 60", `{"prompt":"the ","max_tokens":60,"temperature":1.5,"seed":7}`,
			"the wohen the lantern glows. the boats walk. the keeper counts t"},
		{"-top-k 5 -seed 3 -n 60 -prompt a", `{"prompt":"a","max_tokens":60,"top_k":5,"seed":3}`,
			"at dawn. the keeper rings the bell when a boat drifts near th"},
		{"-top-p 0.9 -temperature 1.2 -seed 11 -n 60", `{"prompt":"the ","max_tokens":60,"top_p":0.9,"temperature":1.2,"seed":11}`,
			"the lamp keeper lights the lantern when the fog rolls in. the bo"},
		{"-repetition-penalty 1.3 -temperature 1 -seed 5 -n 60", `{"prompt":"the ","max_tokens":60,"repetition_penalty":1.3,"seed":5}`,
			"the boats come home when the lantern glows. the boats wait outsi"},
		{"-min-p 0.2 -temperature 1.5 -seed 3 -n 60", `{"prompt":"the ","max_tokens":60,"min_p":0.2,"temperature":1.5,"seed":3}`,
			"the shore at dusk. the lamp keeper lights the lantern when the f"},
		{"-presence-penalty 1.5 -seed 4 -n 60", `{"prompt":"the ","max_tokens":60,"presence_penalty":1.5,"seed":4}`,
			"the fog is thick. a small boat drifts near the rocks at dawn. th"},
		{"-frequency-penalty 0.8 -temperature 1.2 -seed 5 -n 60", `{"prompt":"the ","max_tokens":60,"frequency_penalty":0.8,"temperature":1.2,"seed":5}`,
			"the bell when a boat drifts near the rocks. the tide rises at du"},
		{"-logit-bias e=-100 -seed 6 -n 60", `{"prompt":"the ","max_tokens":60,"logit_bias":{"6":-100},"seed":6}`,
			"the boats wait outsidp i in. thu k. la lov boats folls call ov t"},
		{"-no-repeat-ngram 4 -seed 7 -n 60", `{"prompt":"the ","max_tokens":60,"no_repeat_ngram_size":4,"seed":7}`,
			"the tide is low. thethe. keeper counts thp and rests at dawn. ti"},
		{"-stop fog -greedy -n 100", `{"prompt":"the ","max_tokens":100,"stop":"fog","temperature":0}`,
			"the boats come home when the lantern glows. the boats wait outside the bay when the "},
		{"-beams 4 -n 40 -prompt a", `{"prompt":"a","max_tokens":40,"num_beams":4}`,
			"ats and writes the count in a book. the l"},
		{"-beams 4 -n 40 -prompt a -no-repeat-ngram 3", `{"prompt":"a","max_tokens":40,"num_beams":4,"no_repeat_ngram_size":3}`,
			"ats and writes the count in a boat drifts"},
	} {
		t.Run(tc.flags, func(t *testing.T) {
			var req map[string]any
			json.Unmarshal([]byte(tc.body), &req)
			prompt := req["prompt"].(string)
			if got := prompt + text(t, ts, tc.body); got != tc.want {
				t.Errorf("server: %q\ncmd/generate %s: %q", got, tc.flags, tc.want)
			}
			// echo returns the prompt too, and the same text.
			echo := strings.Replace(tc.body, "{", `{"echo":true,`, 1)
			if got := text(t, ts, echo); got != tc.want {
				t.Errorf("with echo: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSamplesMatchCmdGenerate: choice i of n is cmd/generate's sample i,
// printed by a real run of
//
//	go run ./cmd/generate -samples 3 -temperature 1.3 -seed 9 -n 30
func TestSamplesMatchCmdGenerate(t *testing.T) {
	_, ts := newTestServer(t, nil)
	c := post(t, ts, `{"prompt":"the ","max_tokens":30,"n":3,"temperature":1.3,"seed":9}`).completion(t)
	for i, want := range []string{
		"the bell when a boat drifts near t",
		"the rocks at dawn. the keeper ring",
		"the keeper rings the bell when a b",
	} {
		if got := "the " + c.Choices[i].Text; got != want {
			t.Errorf("sample %d: %q, cmd/generate %q", i, got, want)
		}
	}
}

// TestMatchesLibrary compares the server with the library called directly,
// over many seeds and settings.
func TestMatchesLibrary(t *testing.T) {
	_, ts := newTestServer(t, nil)
	m, vocab := lanternBay()
	m = m.Clone()
	for seed := range uint64(8) {
		opts := minigpt.GenerateOptions{
			MaxNewTokens: 50, Temperature: 0.7 + 0.1*float64(seed), TopK: int(seed % 4 * 3), TopP: 0.85,
			Seed: seed * 1000,
		}
		res, err := m.Complete(context.Background(), vocab, "the lamp ", opts)
		if err != nil {
			t.Fatal(err)
		}
		want := "the lamp " + res[0].Text
		body := fmt.Sprintf(`{"prompt":"the lamp ","max_tokens":50,"temperature":%v,"top_k":%d,"top_p":0.85,"seed":%d,"echo":true}`,
			opts.Temperature, opts.TopK, seed*1000)
		if got := text(t, ts, body); got != want {
			t.Errorf("seed %d: server %q, library %q", seed*1000, got, want)
		}
	}
}

func TestResponseShape(t *testing.T) {
	_, ts := newTestServer(t, nil)
	r := post(t, ts, `{"model":"lanternbay","prompt":"the keeper ","max_tokens":12,"seed":9}`)
	c := r.completion(t)
	if !strings.HasPrefix(c.ID, "cmpl-") || len(c.ID) < 20 {
		t.Errorf("id %q", c.ID)
	}
	if c.Object != "text_completion" || c.Model != "lanternbay" || c.Created == 0 || c.Seed != 9 {
		t.Errorf("object %q model %q created %d seed %d", c.Object, c.Model, c.Created, c.Seed)
	}
	if !strings.HasPrefix(c.SystemFingerprint, "fp_") {
		t.Errorf("system_fingerprint %q", c.SystemFingerprint)
	}
	if got := r.header.Get("Minigpt-Seed"); got != "9" {
		t.Errorf("Minigpt-Seed header %q, want 9", got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if len(c.Choices) != 1 || c.Choices[0].Index != 0 || *c.Choices[0].FinishReason != "length" || len([]rune(c.Choices[0].Text)) != 12 {
		t.Fatalf("choices %+v", c.Choices)
	}
	if c.Choices[0].Logprobs != nil {
		t.Error("logprobs present without being asked for")
	}
	if u := c.Usage; u == nil || u.PromptTokens != 11 || u.CompletionTokens != 12 || u.TotalTokens != 23 {
		t.Errorf("usage %+v, want 11 + 12 = 23", c.Usage)
	}
	// The raw JSON has exactly OpenAI's choice keys (and no trace unless asked).
	var raw struct {
		Choices []map[string]json.RawMessage `json:"choices"`
	}
	json.Unmarshal(r.body, &raw)
	for _, k := range []string{"text", "index", "logprobs", "finish_reason"} {
		if _, ok := raw.Choices[0][k]; !ok {
			t.Errorf("choice has no %q key", k)
		}
	}
	if _, ok := raw.Choices[0]["trace"]; ok {
		t.Error("trace present without being asked for")
	}
	// max_tokens defaults to OpenAI's 16.
	if got := text(t, ts, `{"prompt":"the "}`); len(got) != 16 {
		t.Errorf("default max_tokens gave %d characters", len(got))
	}
	// max_tokens 0 is allowed (with echo it returns the prompt).
	if got := text(t, ts, `{"prompt":"the ","max_tokens":0,"echo":true}`); got != "the " {
		t.Errorf("max_tokens 0 with echo: %q", got)
	}
}

// TestSeedChosenByServer: without a seed the server picks one, returns
// it, and sending it back reproduces the text.
func TestSeedChosenByServer(t *testing.T) {
	_, ts := newTestServer(t, nil)
	seeds := map[uint64]bool{}
	for range 4 {
		r := post(t, ts, `{"prompt":"the ","max_tokens":40,"temperature":1.3}`)
		c := r.completion(t)
		if c.Seed >= 1<<53 {
			t.Errorf("seed %d is not exact in JavaScript (>= 2^53)", c.Seed)
		}
		if h := r.header.Get("Minigpt-Seed"); h != strconv.FormatUint(c.Seed, 10) {
			t.Errorf("header %q, body seed %d", h, c.Seed)
		}
		seeds[c.Seed] = true
		again := text(t, ts, fmt.Sprintf(`{"prompt":"the ","max_tokens":40,"temperature":1.3,"seed":%d}`, c.Seed))
		if again != c.Choices[0].Text {
			t.Errorf("seed %d: %q, then %q", c.Seed, c.Choices[0].Text, again)
		}
	}
	if len(seeds) < 4 {
		t.Errorf("4 requests got only %d distinct seeds", len(seeds))
	}
	// The whole uint64 range is accepted, and 5.0 is the integer 5.
	big := text(t, ts, `{"prompt":"the ","max_tokens":30,"seed":18446744073709551615}`)
	if big == "" {
		t.Error("seed 2^64-1 gave nothing")
	}
	if a, b := text(t, ts, `{"prompt":"the ","max_tokens":30,"seed":5}`), text(t, ts, `{"prompt":"the ","max_tokens":30,"seed":5.0}`); a != b {
		t.Errorf("seed 5 %q, seed 5.0 %q", a, b)
	}
}

// TestPromptsAndN: choices are prompt-major, and each prompt's samples
// are those of a request with that prompt alone.
func TestPromptsAndN(t *testing.T) {
	_, ts := newTestServer(t, nil)
	c := post(t, ts, `{"prompt":["the ","a small "],"n":3,"max_tokens":20,"seed":77,"temperature":1.2}`).completion(t)
	if len(c.Choices) != 6 {
		t.Fatalf("%d choices, want 6", len(c.Choices))
	}
	for p, prompt := range []string{"the ", "a small "} {
		alone := post(t, ts, fmt.Sprintf(`{"prompt":%q,"n":3,"max_tokens":20,"seed":77,"temperature":1.2}`, prompt)).completion(t)
		for i := range 3 {
			got := c.Choices[p*3+i]
			if got.Index != p*3+i {
				t.Errorf("choice %d has index %d", p*3+i, got.Index)
			}
			if got.Text != alone.Choices[i].Text {
				t.Errorf("prompt %d sample %d: %q in the batch, %q alone", p, i, got.Text, alone.Choices[i].Text)
			}
		}
	}
	distinct := map[string]bool{}
	for i, ch := range c.Choices[:3] {
		distinct[ch.Text] = true
		// Each choice names its own seed, and n = 1 with it gives its text.
		if ch.Seed == nil || *ch.Seed != 77+uint64(i) {
			t.Fatalf("choice %d seed %v, want %d", i, ch.Seed, 77+i)
		}
		alone := text(t, ts, fmt.Sprintf(`{"prompt":"the ","max_tokens":20,"seed":%d,"temperature":1.2}`, *ch.Seed))
		if alone != ch.Text {
			t.Errorf("choice %d: %q, alone with its seed %q", i, ch.Text, alone)
		}
	}
	if g := post(t, ts, `{"prompt":"the ","max_tokens":5,"temperature":0}`).completion(t); g.Choices[0].Seed != nil {
		t.Error("a greedy choice reports a seed")
	}
	if len(distinct) < 2 {
		t.Errorf("n=3 gave identical samples: %q", c.Choices[0].Text)
	}
	if c.Usage.PromptTokens != 4+8 || c.Usage.CompletionTokens != 6*20 {
		t.Errorf("usage %+v", c.Usage)
	}
}

// TestStop: generation ends before the first stop string, which is left
// out, with finish_reason "stop"; streamed text is the same.
func TestStop(t *testing.T) {
	_, ts := newTestServer(t, nil)
	full := text(t, ts, `{"prompt":"the ","max_tokens":120,"temperature":0}`)
	for _, stop := range []string{"fog", "the", " a ", ".", "zzz", "bay when"} {
		t.Run(stop, func(t *testing.T) {
			want, finish := full, "length"
			if i := strings.Index(full, stop); i >= 0 {
				want, finish = full[:i], "stop"
			}
			body := fmt.Sprintf(`{"prompt":"the ","max_tokens":120,"temperature":0,"stop":[%q,"qqq"]}`, stop)
			c := post(t, ts, body).completion(t)
			if c.Choices[0].Text != want || *c.Choices[0].FinishReason != finish {
				t.Errorf("got %q (%s), want %q (%s)", c.Choices[0].Text, *c.Choices[0].FinishReason, want, finish)
			}
			st := streamed(t, ts, strings.Replace(body, "{", `{"stream":true,`, 1))
			if st.text[0] != want || st.finish[0] != finish {
				t.Errorf("streamed %q (%s), want %q (%s)", st.text[0], st.finish[0], want, finish)
			}
		})
	}
}

// stream is a parsed event stream.
type stream struct {
	text    map[int]string
	finish  map[int]string
	chunks  []completionJSON
	usage   *usage
	done    bool
	errMsg  string
	ctype   string
	seedHdr string
}

func streamed(t testing.TB, ts *httptest.Server, body string) stream {
	t.Helper()
	return parseStream(t, post(t, ts, body))
}

func parseStream(t testing.TB, r response) stream {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	s := stream{text: map[int]string{}, finish: map[int]string{}, ctype: r.header.Get("Content-Type"), seedHdr: r.header.Get("Minigpt-Seed")}
	events := sseEvents(t, r.body)
	for i, ev := range events {
		if s.done {
			t.Fatalf("event after [DONE]: %q", ev)
		}
		if ev == "[DONE]" {
			if i != len(events)-1 {
				t.Fatal("[DONE] is not the last event")
			}
			s.done = true
			continue
		}
		var e errorJSON
		if json.Unmarshal([]byte(ev), &e) == nil && e.Error.Message != "" {
			s.errMsg = e.Error.Message
			continue
		}
		var c completionJSON
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		if c.Object != "text_completion" || !strings.HasPrefix(c.ID, "cmpl-") {
			t.Fatalf("chunk %q lacks object or id", ev)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has choices: %q", ev)
			}
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if _, ok := s.finish[ch.Index]; ok {
				t.Errorf("choice %d: chunk after its finish_reason: %q", ch.Index, ev)
			}
			s.text[ch.Index] += ch.Text
			if ch.FinishReason != nil {
				s.finish[ch.Index] = *ch.FinishReason
			}
		}
		s.chunks = append(s.chunks, c)
	}
	if !s.done {
		t.Fatal("stream does not end with data: [DONE]")
	}
	return s
}

// TestStreamingChunks checks OpenAI's chunk format: an event per released
// piece of text, one finish_reason per choice, the usage chunk when asked
// for, then [DONE]; the concatenated text equals the non-streamed text.
func TestStreamingChunks(t *testing.T) {
	_, ts := newTestServer(t, nil)
	body := `{"prompt":["the ","a "],"n":2,"max_tokens":30,"seed":3,"temperature":0.9}`
	want := post(t, ts, body).completion(t)
	st := streamed(t, ts, strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1))
	if !strings.HasPrefix(st.ctype, "text/event-stream") {
		t.Errorf("Content-Type %q", st.ctype)
	}
	if st.seedHdr != "3" {
		t.Errorf("Minigpt-Seed %q", st.seedHdr)
	}
	for _, c := range want.Choices {
		if st.text[c.Index] != c.Text {
			t.Errorf("choice %d: streamed %q, whole %q", c.Index, st.text[c.Index], c.Text)
		}
		if st.finish[c.Index] != "length" {
			t.Errorf("choice %d: finish %q", c.Index, st.finish[c.Index])
		}
	}
	if st.usage == nil || *st.usage != *want.Usage {
		t.Errorf("usage chunk %+v, want %+v", st.usage, want.Usage)
	}
	// One chunk per character (a character model releases tokens one by
	// one), plus the finish chunks and the usage chunk.
	if n := len(st.chunks); n != 4*30+4+1 {
		t.Errorf("%d chunks, want %d", n, 4*30+4+1)
	}
	ids := map[string]bool{}
	for _, c := range st.chunks {
		ids[c.ID] = true
	}
	if len(ids) != 1 {
		t.Errorf("chunks carry %d different ids", len(ids))
	}
	// Without include_usage there is no usage chunk.
	if st := streamed(t, ts, `{"prompt":"the ","max_tokens":5,"stream":true}`); st.usage != nil {
		t.Error("usage chunk without include_usage")
	}
	// echo streams the prompt first.
	st = streamed(t, ts, `{"prompt":"the ","max_tokens":5,"stream":true,"echo":true,"seed":1}`)
	if !strings.HasPrefix(st.text[0], "the ") || st.chunks[0].Choices[0].Text != "the " {
		t.Errorf("echo: first chunk %q, text %q", st.chunks[0].Choices[0].Text, st.text[0])
	}
}

// TestEchoLogprobs scores the prompt. Each echoed token's log-probability
// is checked against the library's cross-entropy (Model.Loss, an
// independent computation): on the generator's window w before token j,
// causality makes the last position's loss T·Loss(w) − (T−1)·Loss(w[:T−1]).
// The first token has null logprobs, as in OpenAI's API.
func TestEchoLogprobs(t *testing.T) {
	_, ts := newTestServer(t, nil)
	m, vocab := lanternBay()
	m = m.Clone()
	bs := m.Config().BlockSize
	for _, prompt := range []string{"the lamp keeper walks", strings.Repeat("the boats wait outside the bay. ", 3)} {
		c := post(t, ts, fmt.Sprintf(`{"prompt":%q,"max_tokens":0,"echo":true,"logprobs":2}`, prompt)).completion(t)
		lp := c.Choices[0].Logprobs
		n := len([]rune(prompt))
		if lp == nil || len(lp.Tokens) != n || lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
			t.Fatalf("%q: logprobs %+v", prompt, lp)
		}
		ids, _ := vocab.Encode(prompt)
		loss := func(T, start int) float64 {
			if T == 0 {
				return 0
			}
			l, _, err := m.Gradients(ids[start:start+T], ids[start+1:start+T+1], 1, T)
			if err != nil {
				t.Fatal(err)
			}
			return l * float64(T)
		}
		for j := 1; j < n; j++ {
			start := max(0, j-bs)
			T := j - start
			want := -(loss(T, start) - loss(T-1, start))
			if got := *lp.TokenLogprobs[j]; math.Abs(got-want) > 1e-9 {
				t.Errorf("%q token %d: logprob %v, from Model.Loss %v", prompt, j, got, want)
			}
			if lp.TextOffset[j] != j || lp.Tokens[j] != string([]rune(prompt)[j]) {
				t.Errorf("token %d: %q at offset %d", j, lp.Tokens[j], lp.TextOffset[j])
			}
			if len(lp.TopLogprobs[j]) != 2 {
				t.Errorf("top_logprobs[%d] has %d entries", j, len(lp.TopLogprobs[j]))
			}
		}
	}
}
