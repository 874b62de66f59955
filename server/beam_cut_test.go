package server

// A beam search cut short by the request's time or by Close answers with
// its best beams so far (issue 39: it answered with empty choices).

import (
	"context"
	"testing"
	"time"
)

func TestBeamSearchCutShortAnswersItsBeams(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) {
		c.Limits.RequestTimeout, c.Limits.MaxTokens = 300*time.Millisecond, 100000
	})
	const body = `{"prompt":"the ","max_tokens":100000,"num_beams":4,"n":2`
	whole := post(t, ts, body+`}`).completion(t)
	if len(whole.Choices) != 2 || whole.Usage.CompletionTokens == 0 {
		t.Fatalf("timed-out beam search: %d choices, usage %+v", len(whole.Choices), whole.Usage)
	}
	for i, c := range whole.Choices {
		if c.Text == "" || *c.FinishReason != "length" {
			t.Errorf("timed-out beam search, choice %d: %q, finish %q", i, c.Text, *c.FinishReason)
		}
	}
	st := parseStream(t, post(t, ts, body+`,"stream":true}`))
	for i := range 2 {
		if st.text[i] == "" || st.finish[i] != "length" {
			t.Errorf("timed-out streamed beam search, choice %d: %q, finish %q", i, st.text[i], st.finish[i])
		}
	}

	// Close ends it as the time does.
	started := make(chan struct{}, 1)
	s.generationStart = func(context.Context) { started <- struct{}{} }
	done := make(chan response, 1)
	go func() { done <- post(t, ts, `{"prompt":"the ","max_tokens":100000,"num_beams":8,"n":8}`) }()
	<-started
	time.Sleep(50 * time.Millisecond)
	s.Close()
	closed := (<-done).completion(t)
	for i, c := range closed.Choices {
		if c.Text == "" || *c.FinishReason != "length" {
			t.Errorf("beam search at Close, choice %d: %q, finish %q", i, c.Text, *c.FinishReason)
		}
	}
	if len(closed.Choices) != 8 {
		t.Errorf("beam search at Close: %d choices, want 8", len(closed.Choices))
	}
}
