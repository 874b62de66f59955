package server

// Admission: the queue, its timeout, disconnects, concurrency equal to
// serial, drain, the body cap.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
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

// busyWithoutQueue returns a server of one slot and no queue whose slot
// a held generation takes until the test ends.
func busyWithoutQueue(t *testing.T) *httptest.Server {
	s, ts := newTestServer(t, func(c *Config) { c.Limits.Slots, c.Limits.Queue = 1, -1 })
	started, release := holdSlots(s)
	t.Cleanup(func() { close(release) })
	go post(t, ts, `{"prompt":"the ","max_tokens":5}`)
	<-started
	return ts
}

// TestNoQueue: with a negative Queue a request that finds every slot
// busy gets 429 at once.
func TestNoQueue(t *testing.T) {
	ts := busyWithoutQueue(t)
	if r := post(t, ts, `{"prompt":"the ","max_tokens":5}`); r.status != 429 {
		t.Errorf("status %d, want 429: %s", r.status, r.body)
	}
}

// TestFormatTooLongRefusedBeforeQueueing: a format whose shortest match
// needs more than max_tokens gets its 400, naming max_tokens, without
// waiting for a slot: with the only slot busy and no queue, not a 429.
func TestFormatTooLongRefusedBeforeQueueing(t *testing.T) {
	ts := busyWithoutQueue(t)
	r := post(t, ts, `{"prompt":"the ","max_tokens":3,"guided_regex":"the lamp"}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", r.status, r.body)
	}
	if e := r.apiError(t).Error; e.Param == nil || *e.Param != "max_tokens" || !strings.Contains(e.Message, "needs at least 8 tokens") {
		t.Errorf("400 error %+v", e)
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

// withDefaults fills every field left at zero with its default and keeps
// every field that was set, for Limits and Training alike; a larger
// MaxResponseBytes raises the default in-flight cap to admit one response.
func TestWithDefaults(t *testing.T) {
	if got, want := (Limits{}).withDefaults(), DefaultLimits(); got != want {
		t.Errorf("zero Limits: %+v, want the defaults %+v", got, want)
	}
	if got, want := (Training{}).withDefaults(), DefaultTraining(); got != want {
		t.Errorf("zero Training: %+v, want the defaults %+v", got, want)
	}
	set := Limits{Slots: 3, QueueTimeout: time.Second, MaxBodyBytes: 77}
	if got := set.withDefaults(); got.Slots != 3 || got.QueueTimeout != time.Second || got.MaxBodyBytes != 77 || got.Queue != DefaultLimits().Queue {
		t.Errorf("set fields: %+v", got)
	}
	big := Limits{MaxResponseBytes: 4 * DefaultLimits().MaxInFlightBytes}
	if got := big.withDefaults(); got.MaxInFlightBytes != big.MaxResponseBytes {
		t.Errorf("MaxInFlightBytes %d with MaxResponseBytes %d: one response would never fit", got.MaxInFlightBytes, big.MaxResponseBytes)
	}
	if got := (Training{MaxSteps: 9}).withDefaults(); got.MaxSteps != 9 || got.MaxFiles != DefaultTraining().MaxFiles {
		t.Errorf("set Training field: %+v", got)
	}
}
