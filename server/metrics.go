package server

// This file owns the metrics: counters and gauges, and GET /metrics.

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// metrics counts what the server did, for GET /metrics in Prometheus'
// text exposition format (version 0.0.4), written by hand: the format is
// a few lines of text and the standard library is enough.
type metrics struct {
	mu        sync.Mutex
	requests  map[requestKey]uint64 // by route and status
	latency   histogram             // POST /v1/completions, whole request
	generated map[string]uint64     // completion tokens by model
	prompt    map[string]uint64     // prompt tokens by model
	cancelled uint64                // generations stopped by a client that went away
}

type requestKey struct {
	path string
	code int
}

// latencyBuckets are the histogram's upper bounds in seconds.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type histogram struct {
	counts []uint64 // counts[i]: observations <= latencyBuckets[i] (not cumulative)
	sum    float64
	n      uint64
}

func newMetrics() *metrics {
	return &metrics{
		requests:  map[requestKey]uint64{},
		latency:   histogram{counts: make([]uint64, len(latencyBuckets))},
		generated: map[string]uint64{},
		prompt:    map[string]uint64{},
	}
}

func (m *metrics) request(path string, code int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{path, code}]++
	if path == "/v1/completions" {
		sec := d.Seconds()
		// The first bound >= sec; above the last bound only +Inf counts it.
		if i, _ := slices.BinarySearch(latencyBuckets, sec); i < len(latencyBuckets) {
			m.latency.counts[i]++
		}
		m.latency.sum += sec
		m.latency.n++
	}
}

func (m *metrics) tokens(model string, prompt, generated int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompt[model] += uint64(prompt)
	m.generated[model] += uint64(generated)
}

func (m *metrics) cancel() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancelled++
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	s.metrics.write(w, s)
}

func (m *metrics) write(w io.Writer, s *Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	head := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	head("minigpt_http_requests_total", "counter", "HTTP requests by route and status code.")
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.code, b.code))
	})
	for _, k := range keys {
		fmt.Fprintf(w, "minigpt_http_requests_total{path=%q,code=\"%d\"} %d\n", k.path, k.code, m.requests[k])
	}

	head("minigpt_completion_duration_seconds", "histogram", "Latency of POST /v1/completions, from arrival to the last byte, queueing included.")
	var cum uint64
	for i, le := range latencyBuckets {
		cum += m.latency.counts[i]
		fmt.Fprintf(w, "minigpt_completion_duration_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "minigpt_completion_duration_seconds_bucket{le=\"+Inf\"} %d\n", m.latency.n)
	fmt.Fprintf(w, "minigpt_completion_duration_seconds_sum %s\n", strconv.FormatFloat(m.latency.sum, 'g', -1, 64))
	fmt.Fprintf(w, "minigpt_completion_duration_seconds_count %d\n", m.latency.n)

	head("minigpt_generated_tokens_total", "counter", "Completion tokens (characters) generated, by model.")
	for _, sm := range s.models {
		fmt.Fprintf(w, "minigpt_generated_tokens_total{model=%q} %d\n", sm.name, m.generated[sm.name])
	}
	head("minigpt_prompt_tokens_total", "counter", "Prompt tokens (characters) processed, by model.")
	for _, sm := range s.models {
		fmt.Fprintf(w, "minigpt_prompt_tokens_total{model=%q} %d\n", sm.name, m.prompt[sm.name])
	}
	head("minigpt_generations_cancelled_total", "counter", "Generations stopped early because the client went away or stopped reading.")
	fmt.Fprintf(w, "minigpt_generations_cancelled_total %d\n", m.cancelled)
	head("minigpt_slots", "gauge", "Generation slots (generations that run at once).")
	fmt.Fprintf(w, "minigpt_slots %d\n", s.limits.Slots)
	busy, queued, used := s.slots.state()
	head("minigpt_slots_busy", "gauge", "Generation slots in use.")
	fmt.Fprintf(w, "minigpt_slots_busy %d\n", busy)
	head("minigpt_queue_depth", "gauge", "Requests waiting for a generation slot or room in the in-flight budget.")
	fmt.Fprintf(w, "minigpt_queue_depth %d\n", queued)
	head("minigpt_inflight_bytes", "gauge", "Sizes (response bounds) of the requests generating or writing their response.")
	fmt.Fprintf(w, "minigpt_inflight_bytes %d\n", used)
	head("minigpt_inflight_budget_bytes", "gauge", "The most the sizes of the requests in flight may add up to.")
	fmt.Fprintf(w, "minigpt_inflight_budget_bytes %d\n", s.limits.MaxInFlightBytes)
	head("minigpt_queue_capacity", "gauge", "Requests that may wait for a slot before the server answers 429.")
	fmt.Fprintf(w, "minigpt_queue_capacity %d\n", max(s.limits.Queue, 0))
}
