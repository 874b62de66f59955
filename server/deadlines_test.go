package server

// Clients that stop reading or read slowly, the request timeout over
// writes, Close and Shutdown.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestClientThatStopsReading: a client that sends a long streaming
// request and never reads loses its slot after WriteTimeout, and the
// next request runs (issue 26, defect 2: two such clients held both
// slots for 135 s); a non-streaming client that never reads frees the
// slot when the generation ends and the budget after WriteTimeout.
func TestClientThatStopsReading(t *testing.T) {
	s, ts := newSmallBufferServer(t, func(c *Config) {
		c.Limits.Slots, c.Limits.Queue = 1, -1
		c.Limits.WriteTimeout = 300 * time.Millisecond
	})
	done := make(chan error, 4)
	s.generationDone = func(err error) { done <- err }
	start := time.Now()
	rawRequest(t, ts, "/v1/completions", `{"prompt":"the ","max_tokens":4096,"logprobs":20,"stream":true}`, 4<<10)
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the generation ended with %v, want the write deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a client that never reads still holds its slot after 10 s")
	}
	waitFor(t, "the slot and the budget", func() bool { busy, _, used := s.slots.state(); return busy == 0 && used == 0 })
	t.Logf("the slot came back after %v", time.Since(start).Round(time.Millisecond))
	if r := post(t, ts, `{"prompt":"the ","max_tokens":3}`); r.status != 200 {
		t.Errorf("next request: %d %s", r.status, r.body)
	}
	<-done
	if m := do(t, "GET", ts.URL+"/metrics", ""); !strings.Contains(string(m.body), "minigpt_generations_cancelled_total 1\n") {
		t.Error("the dropped request is not counted as cancelled")
	}

	rawRequest(t, ts, "/v1/completions", `{"prompt":"the ","max_tokens":2000,"logprobs":20}`, 4<<10)
	if err := <-done; err != nil {
		t.Fatalf("generation: %v", err)
	}
	waitFor(t, "the slot", func() bool { return s.slots.busy() == 0 })
	if _, _, used := s.slots.state(); used == 0 {
		t.Error("the budget came back before the response was written")
	}
	if r := post(t, ts, `{"prompt":"the ","max_tokens":3}`); r.status != 200 {
		t.Errorf("a request while the unread response waits: %d %s", r.status, r.body)
	}
	waitFor(t, "the budget", func() bool { _, _, used := s.slots.state(); return used == 0 })
}

// TestRequestTimeoutBoundsWrites: a client that reads steadily but slowly
// a response generated for RequestTimeout still has its request end by
// RequestTimeout + WriteTimeout, writes included.
func TestRequestTimeoutBoundsWrites(t *testing.T) {
	const requestTimeout, writeTimeout = 500 * time.Millisecond, time.Second
	s, ts := newSmallBufferServer(t, func(c *Config) {
		c.Limits.RequestTimeout, c.Limits.WriteTimeout = requestTimeout, writeTimeout
		c.Limits.MaxResponseBytes, c.Limits.MaxInFlightBytes = 64<<20, 64<<20
	})
	start := time.Now()
	// A receive buffer small enough to fill, large enough that Linux
	// reopens the window as the client reads (loopback's MSS is 64 KiB).
	conn := rawRequest(t, ts, "/v1/completions", `{"prompt":"the ","n":16,"max_tokens":4096,"logprobs":20}`, 256<<10)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// 64 KiB every 300 ms: every write is accepted well within
		// WriteTimeout, but the megabytes generated in RequestTimeout
		// would take half a minute.
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
		}
	}()
	waitFor(t, "the request to start", func() bool { _, _, used := s.slots.state(); return used > 0 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, used := s.slots.state(); used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request still runs after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the request ended after %v", time.Since(start).Round(time.Millisecond))
	if d := time.Since(start); d > requestTimeout+writeTimeout+500*time.Millisecond {
		t.Errorf("the request ended after %v, more than RequestTimeout %v + WriteTimeout %v", d, requestTimeout, writeTimeout)
	}
}

// TestCloseEndsLikeRequestTimeout: Close ends every generation as the
// request timeout does (issue 26, defect 3: a non-streaming client got
// 200 with an empty body, a stream no finish_reason and no [DONE]), and a
// queued request gets 503.
func TestCloseEndsLikeRequestTimeout(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) {
		c.Limits.Slots, c.Limits.Queue, c.Limits.MaxTokens = 4, 1, 100000 // rows: 1 + 1 + 2
	})
	started := make(chan struct{}, 4)
	s.generationStart = func(context.Context) { started <- struct{}{} }
	bodies := []string{
		`{"prompt":"the ","max_tokens":100000}`,
		`{"prompt":"the ","max_tokens":100000,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":["the ","a "],"n":2,"max_tokens":20000,"echo":true,"logprobs":2,"stream":true}`,
	}
	results := make([]chan response, 4)
	for i, b := range append(bodies, `{"prompt":"the ","max_tokens":5}`) {
		results[i] = make(chan response, 1)
		go func() { results[i] <- post(t, ts, b) }()
		if i < len(bodies) {
			<-started
		}
	}
	waitFor(t, "the queued request", func() bool { return s.slots.queued() == 1 })
	time.Sleep(50 * time.Millisecond) // some tokens each
	s.Close()
	got := make([]response, len(results))
	for i := range results {
		select {
		case got[i] = <-results[i]:
		case <-time.After(time.Second):
			t.Fatalf("request %d unanswered a second after Close returned", i)
		}
	}
	whole := got[0].completion(t)
	if c := whole.Choices[0]; *c.FinishReason != "length" || len(c.Text) == 0 || whole.Usage.CompletionTokens != len(c.Text) {
		t.Errorf("non-streaming request at Close: %q (%s), usage %+v", c.Text, *c.FinishReason, whole.Usage)
	}
	st := parseStream(t, got[1]) // checks the framing and the final [DONE]
	if st.finish[0] != "length" || st.usage == nil || st.usage.CompletionTokens != len(st.text[0]) || len(st.text[0]) == 0 {
		t.Errorf("stream at Close: %d characters, finish %q, usage %+v", len(st.text[0]), st.finish[0], st.usage)
	}
	st = parseStream(t, got[2])
	for i := range 4 {
		prompt := []string{"the ", "a "}[i/2]
		if st.finish[i] != "length" || !strings.HasPrefix(st.text[i], prompt) {
			t.Errorf("choice %d at Close: %q, finish %q", i, st.text[i], st.finish[i])
		}
	}
	if got[3].status != 503 || *got[3].apiError(t).Error.Code != "shutting_down" {
		t.Errorf("queued request at Close: %d %s", got[3].status, got[3].body)
	}
}

// TestShutdown: Shutdown returns as soon as the requests in progress are
// answered; at its context's deadline it ends them as Close does and
// returns the context's error.
func TestShutdown(t *testing.T) {
	s, _ := newTestServer(t, nil)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("idle server: %v", err)
	}
	s, ts := newTestServer(t, nil)
	started, release := holdSlots(s)
	defer close(release)
	res := make(chan response, 1)
	go func() { res <- post(t, ts, `{"prompt":"the ","max_tokens":5}`) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a request held past its deadline: %v", err)
	}
	select {
	case r := <-res:
		if c := r.completion(t).Choices[0]; *c.FinishReason != "length" {
			t.Errorf("the held request: %+v", c)
		}
	case <-time.After(time.Second):
		t.Error("the held request unanswered a second after Shutdown returned")
	}
	resp, err := http.DefaultClient.Do(newPost(context.Background(), ts.URL+"/v1/completions", `{"prompt":"the "}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || !resp.Close {
		t.Errorf("after Shutdown: %d, connection closed %t", resp.StatusCode, resp.Close)
	}
}
