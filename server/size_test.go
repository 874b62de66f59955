package server

// The response-size bound and the in-flight budget.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
)

// TestResponseSizeBound: a request whose response could exceed
// MaxResponseBytes is refused before it runs with a 400 naming its fields
// (issue 26, defect 1: an 8 KB body returned 100 MB and cost the server
// 550-650 MB); the bound is never below the bytes a response really has,
// streamed content or whole, on a vocabulary of characters that JSON
// escapes. (A stream sends the same content with each chunk's framing.)
func TestResponseSizeBound(t *testing.T) {
	_, ts := newTestServer(t, nil)
	big := fmt.Sprintf(`{"prompt":%q,"echo":true,"logprobs":20,"n":16,"max_tokens":4096}`, strings.Repeat("the ", 2048))
	r := post(t, ts, big)
	if r.status != 400 {
		t.Fatalf("the issue's request: %d %.200s", r.status, r.body)
	}
	e := r.apiError(t).Error
	if *e.Code != "response_too_large" || *e.Param != "logprobs" {
		t.Errorf("refusal %+v", e)
	}
	for _, f := range []string{"n 16", "max_tokens 4096", "logprobs 20", "echo true", "33554432"} {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not name %q", e.Message, f)
		}
	}

	// The bound against real responses, on characters with the longest
	// JSON escapes.
	weird := "\x01\"\\<>&\u2028é\n\t ab"
	v, err := minigpt.NewVocab(weird)
	if err != nil {
		t.Fatal(err)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: v.Size(), BlockSize: 8, EmbedDim: 8, Heads: 2, Layers: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	s, wts := newTestServer(t, func(c *Config) { c.Models = []Model{{Name: "weird", Model: m, Vocab: v}} })
	prompt, _ := json.Marshal(strings.Repeat(weird, 3))
	for _, fields := range []string{
		`"max_tokens":40`,
		`"max_tokens":40,"echo":true`,
		`"max_tokens":500,"n":4,"echo":true,"temperature":3`,
		`"max_tokens":40,"logprobs":0`,
		`"max_tokens":40,"echo":true,"logprobs":13,"n":3`,
		`"max_tokens":40,"trace":13`,
		`"max_tokens":40,"n":3,"echo":true,"logprobs":2,"guided_choice":["ab ab","ba","\u2028a"],"stop":" "`, // some choices format_incomplete
		`"max_tokens":40,"trace":13,"logprobs":13,"echo":true,"temperature":1.7,"top_k":5,"top_p":0.9,"min_p":0.01,"repetition_penalty":1.2,"presence_penalty":0.5,"frequency_penalty":0.5,"no_repeat_ngram_size":3,"logit_bias":{"1":2}`,
	} {
		body := fmt.Sprintf(`{"prompt":%s,"seed":1,%s}`, prompt, fields)
		bound := sizeOf(t, s, body)
		whole := post(t, wts, body)
		if whole.status != 200 || !json.Valid(whole.body) {
			t.Fatalf("%s: %d %s", body, whole.status, whole.body)
		}
		if int64(len(whole.body)) > bound {
			t.Errorf("%s: response of %d bytes, bound %d", body, len(whole.body), bound)
		}
	}
	// A request at the limit is served, one byte above it is not.
	body := `{"prompt":"the ","max_tokens":100,"logprobs":5}`
	size := sizeOf(t, s, strings.Replace(body, `"the "`, `"ab "`, 1))
	for _, tc := range []struct {
		limit  int64
		status int
	}{{size, 200}, {size - 1, 400}} {
		_, lts := newTestServer(t, func(c *Config) {
			c.Models = []Model{{Name: "weird", Model: m, Vocab: v}}
			c.Limits.MaxResponseBytes = tc.limit
		})
		if r := post(t, lts, strings.Replace(body, `"the "`, `"ab "`, 1)); r.status != tc.status {
			t.Errorf("size %d, limit %d: status %d, want %d", size, tc.limit, r.status, tc.status)
		}
	}
}

// TestInFlightBudget: requests whose sizes would together exceed
// MaxInFlightBytes wait in the queue, first come first served, and get
// 429 when their wait is over; a request that fits runs at once.
func TestInFlightBudget(t *testing.T) {
	const body = `{"prompt":"the ","max_tokens":200,"logprobs":3}`
	probe, _ := newTestServer(t, nil)
	size := sizeOf(t, probe, body)
	s, ts := newTestServer(t, func(c *Config) {
		c.Limits.Slots, c.Limits.Queue, c.Limits.QueueTimeout = 8, 4, 100*time.Millisecond
		c.Limits.MaxResponseBytes, c.Limits.MaxInFlightBytes = size, 2*size+size/2
	})
	started, release := holdSlots(s)
	results := make(chan response, 2)
	for range 2 {
		go func() { results <- post(t, ts, body) }()
		<-started
	}
	if busy, queued, used := s.slots.state(); busy != 2 || queued != 0 || used != 2*size {
		t.Fatalf("two requests: %d busy, %d queued, %d bytes", busy, queued, used)
	}
	// A third does not fit: it waits, then gets 429.
	start := time.Now()
	r := post(t, ts, body)
	if r.status != 429 || !strings.Contains(r.apiError(t).Error.Message, "in-flight budget") || r.header.Get("Retry-After") == "" {
		t.Errorf("third request: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("429 after %v, before the queue timeout", d)
	}
	// A small one fits beside the two.
	go func() { results <- post(t, ts, `{"prompt":"the ","max_tokens":2}`) }()
	<-started
	close(release)
	for range 3 {
		if r := <-results; r.status != 200 {
			t.Errorf("status %d: %s", r.status, r.body)
		}
	}
	waitFor(t, "the budget to come back", func() bool { _, _, used := s.slots.state(); return used == 0 })
	m := do(t, "GET", ts.URL+"/metrics", "")
	if !strings.Contains(string(m.body), fmt.Sprintf("minigpt_inflight_budget_bytes %d\n", 2*size+size/2)) {
		t.Error("metrics lack the in-flight budget")
	}
}
