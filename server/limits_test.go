package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"example.org/minigpt"
)

// holdSlots makes every generation wait in its slot until release is
// closed, and reports each arrival on started.
func holdSlots(s *Server) (started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 16), make(chan struct{})
	s.generationStart = func(ctx context.Context) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	return started, release
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestQueueFull: with every slot busy and the queue full, a request gets
// 429 with Retry-After at once; a queued request runs when a slot frees.
func TestQueueFull(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots, c.Limits.Queue = 1, 1 })
	started, release := holdSlots(s)
	results := make(chan response, 2)
	go func() { results <- post(t, ts, `{"prompt":"the ","max_tokens":5,"seed":1}`) }()
	<-started
	go func() { results <- post(t, ts, `{"prompt":"the ","max_tokens":5,"seed":1}`) }()
	waitFor(t, "a queued request", func() bool { return s.slots.queued() == 1 })

	r := post(t, ts, `{"prompt":"the ","max_tokens":5}`)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429: %s", r.status, r.body)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if e := r.apiError(t).Error; e.Type != "rate_limit_error" || !strings.Contains(e.Message, "queue is full") {
		t.Errorf("429 error %+v", e)
	}
	metrics := do(t, "GET", ts.URL+"/metrics", "")
	for _, line := range []string{"minigpt_slots_busy 1", "minigpt_queue_depth 1", `minigpt_http_requests_total{path="/v1/completions",code="429"} 1`} {
		if !strings.Contains(string(metrics.body), line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	close(release)
	a, b := <-results, <-results
	if a.status != 200 || b.status != 200 || a.completion(t).Choices[0].Text != b.completion(t).Choices[0].Text {
		t.Errorf("the held and the queued request: %d %s / %d %s", a.status, a.body, b.status, b.body)
	}
}

// TestNoQueue: with a negative Queue a request that finds every slot
// busy gets 429 at once.
func TestNoQueue(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots, c.Limits.Queue = 1, -1 })
	started, release := holdSlots(s)
	defer close(release)
	go post(t, ts, `{"prompt":"the ","max_tokens":5}`)
	<-started
	if r := post(t, ts, `{"prompt":"the ","max_tokens":5}`); r.status != 429 {
		t.Errorf("status %d, want 429: %s", r.status, r.body)
	}
}

// TestQueueTimeout: a request that waits too long for a slot gets 429.
func TestQueueTimeout(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) {
		c.Limits.Slots, c.Limits.Queue, c.Limits.QueueTimeout = 1, 4, 50*time.Millisecond
	})
	started, release := holdSlots(s)
	defer close(release)
	go post(t, ts, `{"prompt":"the ","max_tokens":5}`)
	<-started
	start := time.Now()
	r := post(t, ts, `{"prompt":"the ","max_tokens":5}`)
	if r.status != 429 || !strings.Contains(r.apiError(t).Error.Message, "timed out") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("429 after %v, before the queue timeout", d)
	}
	if s.slots.queued() != 0 {
		t.Error("the timed-out request still holds a queue place")
	}
}

// TestDisconnectCancelsGeneration: a streaming client that goes away stops
// its generation (the generating goroutine returns with context.Canceled,
// or with the error of its next write, whichever notices first) and frees
// the slot at once; no goroutine is left behind.
func TestDisconnectCancelsGeneration(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots = 1 })
	done := make(chan error, 1)
	s.generationDone = func(err error) { done <- err }
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	req := newPost(ctx, ts.URL+"/v1/completions", `{"prompt":"the ","max_tokens":4096,"stream":true}`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read one chunk, so the generation is certainly running, then leave.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case err := <-done:
		var op *net.OpError
		if !errors.Is(err, context.Canceled) && !errors.As(err, &op) {
			t.Errorf("generation ended with %v, want context.Canceled or a write error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the generation did not stop after the client left")
	}
	waitFor(t, "the slot to free", func() bool { return s.slots.busy() == 0 })
	// The slot serves the next request at once (Slots is 1).
	if r := post(t, ts, `{"prompt":"the ","max_tokens":3}`); r.status != 200 {
		t.Errorf("next request: %d", r.status)
	}
	<-done
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if m := do(t, "GET", ts.URL+"/metrics", ""); !strings.Contains(string(m.body), "minigpt_generations_cancelled_total 1\n") {
		t.Error("the cancelled generation is not counted")
	}
}

// TestDisconnectNonStreaming: the same for a request waiting for its
// whole answer.
func TestDisconnectNonStreaming(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots = 1 })
	started, release := holdSlots(s)
	defer close(release)
	done := make(chan error, 1)
	s.generationDone = func(err error) { done <- err }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req := newPost(ctx, ts.URL+"/v1/completions", `{"prompt":"the ","max_tokens":4096}`)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("generation ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the generation did not stop")
	}
	waitFor(t, "the slot to free", func() bool { return s.slots.busy() == 0 })
}

// TestDisconnectWhileQueued: a queued client that leaves gives its queue
// place back.
func TestDisconnectWhileQueued(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots, c.Limits.Queue = 1, 1 })
	started, release := holdSlots(s)
	defer close(release)
	go post(t, ts, `{"prompt":"the ","max_tokens":1}`)
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req := newPost(ctx, ts.URL+"/v1/completions", `{"prompt":"the "}`)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the queued request", func() bool { return s.slots.queued() == 1 })
	cancel()
	waitFor(t, "the queue place to free", func() bool { return s.slots.queued() == 0 })
}

// TestConcurrentSeededEqualSerial: seeded requests give the same text
// when many run at once as when each runs alone.
func TestConcurrentSeededEqualSerial(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.Slots, c.Limits.Queue = 4, 64 })
	var bodies []string
	for i := range 12 {
		stream := i%3 == 0
		bodies = append(bodies, fmt.Sprintf(`{"prompt":"the %s","max_tokens":%d,"temperature":%v,"top_k":%d,"seed":%d,"n":%d,"stream":%t}`,
			[]string{"", "keeper ", "boats "}[i%3], 20+i*7, 0.6+0.1*float64(i), i%5, 1000+i, 1+i%2, stream))
	}
	texts := func(body string) string {
		r := post(t, ts, body)
		if strings.Contains(body, `"stream":true`) {
			st := parseStream(t, r)
			return fmt.Sprint(st.text)
		}
		var parts []string
		for _, c := range r.completion(t).Choices {
			parts = append(parts, c.Text)
		}
		return fmt.Sprint(parts)
	}
	serial := make([]string, len(bodies))
	for i, b := range bodies {
		serial[i] = texts(b)
	}
	const rounds = 3
	var wg sync.WaitGroup
	got := make([][rounds]string, len(bodies))
	for round := range rounds {
		for i, b := range bodies {
			wg.Go(func() { got[i][round] = texts(b) })
		}
	}
	wg.Wait()
	for i := range bodies {
		for round := range rounds {
			if got[i][round] != serial[i] {
				t.Errorf("request %d, concurrent round %d: %q, serial %q", i, round, got[i][round], serial[i])
			}
		}
	}
}

// TestDrainAndClose: after Drain the API answers 503 with Retry-After and
// /health says draining; a request in progress still completes. Close
// cancels the generations still running.
func TestDrainAndClose(t *testing.T) {
	s, ts := newTestServer(t, nil)
	started, release := holdSlots(s)
	inflight := make(chan response, 1)
	go func() { inflight <- post(t, ts, `{"prompt":"the ","max_tokens":10,"seed":4}`) }()
	<-started
	s.Drain()
	r := post(t, ts, `{"prompt":"the "}`)
	if r.status != 503 || r.header.Get("Retry-After") == "" || *r.apiError(t).Error.Code != "shutting_down" {
		t.Errorf("during drain: %d %s", r.status, r.body)
	}
	if h := do(t, "GET", ts.URL+"/health", ""); h.status != 503 || !strings.Contains(string(h.body), `"draining"`) {
		t.Errorf("health during drain: %d %s", h.status, h.body)
	}
	close(release)
	if r := <-inflight; r.status != 200 || len(r.completion(t).Choices[0].Text) != 10 {
		t.Errorf("the request in progress: %d %s", r.status, r.body)
	}

	// Close: a running generation is cancelled and Close waits for it.
	s2, ts2 := newTestServer(t, nil)
	started2, release2 := holdSlots(s2)
	defer close(release2)
	done := make(chan error, 1)
	s2.generationDone = func(err error) { done <- err }
	go post(t, ts2, `{"prompt":"the ","max_tokens":4096}`)
	<-started2
	s2.Close()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after Close the generation ended with %v", err)
		}
	default:
		t.Error("Close returned before the generation ended")
	}
}

// TestRequestTimeout: a generation that runs out of time ends with what
// it has and finish_reason "length".
func TestRequestTimeout(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.RequestTimeout = 30 * time.Millisecond })
	s.generationStart = func(ctx context.Context) { <-ctx.Done() }
	c := post(t, ts, `{"prompt":"the ","max_tokens":4000}`).completion(t)
	if c.Choices[0].Text != "" || *c.Choices[0].FinishReason != "length" {
		t.Errorf("timed-out request: %+v", c.Choices[0])
	}
}

// TestBodyCapStreaming: a body sent in pieces (no Content-Length) is cut
// off at the cap too.
func TestBodyCapStreaming(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.MaxBodyBytes = 64 })
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"prompt":"` + strings.Repeat("a", 100)))
		pw.Close()
	}()
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
}

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
		c.Limits.Slots, c.Limits.Queue, c.Limits.MaxTokens = 3, 1, 100000
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
