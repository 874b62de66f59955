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

	"example.org/minigpt"
)

// metrics counts what the server did, for GET /metrics in Prometheus'
// text exposition format (version 0.0.4), written by hand: the format is
// a few lines of text and the standard library is enough.
type metrics struct {
	mu         sync.Mutex
	requests   map[requestKey]uint64 // by route and status
	latency    histogram             // POST /v1/completions, whole request
	queueWait  histogram             // admitted completions, arrival to their rows
	firstToken histogram             // completions, arrival to the first token released
	generated  map[string]uint64     // completion tokens by model
	prompt     map[string]uint64     // prompt tokens by model
	cancelled  uint64                // generations stopped by a client that went away
}

type requestKey struct {
	path string
	code int
}

// latencyBuckets are the latency histogram's upper bounds in seconds;
// waitBuckets the queue wait's and the first token's, which start lower.
var (
	latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	waitBuckets    = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

type histogram struct {
	bounds []float64 // upper bounds, in seconds
	counts []uint64  // counts[i]: observations in (bounds[i-1], bounds[i]] (not cumulative)
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(d time.Duration) {
	sec := d.Seconds()
	// The first bound >= sec; above the last bound only +Inf counts it.
	if i, _ := slices.BinarySearch(h.bounds, sec); i < len(h.bounds) {
		h.counts[i]++
	}
	h.sum += sec
	h.n++
}

// write writes h as the Prometheus histogram name.
func (h *histogram) write(w io.Writer, name string) {
	var cum uint64
	for i, le := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, h.n)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(h.sum, 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", name, h.n)
}

func newMetrics() *metrics {
	return &metrics{
		requests:   map[requestKey]uint64{},
		latency:    newHistogram(latencyBuckets),
		queueWait:  newHistogram(waitBuckets),
		firstToken: newHistogram(waitBuckets),
		generated:  map[string]uint64{},
		prompt:     map[string]uint64{},
	}
}

func (m *metrics) request(path string, code int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{path, code}]++
	if path == "/v1/completions" || path == "/v1/chat/completions" {
		m.latency.observe(d)
	}
}

// waited counts an admitted completion's wait for its rows (0 if it
// found them free).
func (m *metrics) waited(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queueWait.observe(d)
}

// firstTokenAfter counts the time from a completion's arrival to its
// first released token.
func (m *metrics) firstTokenAfter(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.firstToken.observe(d)
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

	head("minigpt_completion_duration_seconds", "histogram", "Latency of POST /v1/completions and /v1/chat/completions, from arrival to the last byte, queueing included.")
	m.latency.write(w, "minigpt_completion_duration_seconds")
	head("minigpt_queue_wait_seconds", "histogram", "Time an admitted completion waited in the queue for its batch rows and its in-flight bytes (0 when both were free).")
	m.queueWait.write(w, "minigpt_queue_wait_seconds")
	head("minigpt_time_to_first_token_seconds", "histogram", "Time from a completion's arrival to its first generated token released (for the stream, or kept for the whole response), queueing and prompt included.")
	m.firstToken.write(w, "minigpt_time_to_first_token_seconds")

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
	head("minigpt_slots", "gauge", "Rows of each model's batch (Limits.Slots): the most sequences, samples or beams, it decodes together.")
	fmt.Fprintf(w, "minigpt_slots %d\n", s.limits.Slots)
	busy, queued, used := s.slots.state()
	head("minigpt_slots_busy", "gauge", "Batch rows taken by admitted requests, every model's (a request takes one per sample or beam).")
	fmt.Fprintf(w, "minigpt_slots_busy %d\n", busy)
	head("minigpt_queue_depth", "gauge", "Requests waiting for batch rows or room in the in-flight budget.")
	fmt.Fprintf(w, "minigpt_queue_depth %d\n", queued)
	head("minigpt_inflight_bytes", "gauge", "Sizes (response bounds) of the requests generating or writing their response.")
	fmt.Fprintf(w, "minigpt_inflight_bytes %d\n", used)
	head("minigpt_inflight_budget_bytes", "gauge", "The most the sizes of the requests in flight may add up to.")
	fmt.Fprintf(w, "minigpt_inflight_budget_bytes %d\n", s.limits.MaxInFlightBytes)
	head("minigpt_queue_capacity", "gauge", "Requests that may wait for batch rows before the server answers 429.")
	fmt.Fprintf(w, "minigpt_queue_capacity %d\n", max(s.limits.Queue, 0))
	writeBatchMetrics(w, s, head)
}

// writeBatchMetrics writes each model's batch counters: its steps, the
// tokens it generated, and the rows in use per step as a histogram.
func writeBatchMetrics(w io.Writer, s *Server, head func(name, typ, help string)) {
	var models []*servedModel
	var stats []minigpt.BatchStats
	for _, sm := range s.servedModels() {
		if st, ok := sm.engine.stats(); ok { // a fine-tuned model has none before its first request
			models, stats = append(models, sm), append(stats, st)
		}
	}
	head("minigpt_batch_steps_total", "counter", "Steps of the model's batch, each advancing every running request by a token or a chunk of its prompt.")
	for i, sm := range models {
		fmt.Fprintf(w, "minigpt_batch_steps_total{model=%q} %d\n", sm.name, stats[i].Steps)
	}
	head("minigpt_batch_tokens_total", "counter", "Tokens the model's batch generated, every sample's and beam's, counted at the step that chose them: its rate is the generated tokens per second.")
	for i, sm := range models {
		fmt.Fprintf(w, "minigpt_batch_tokens_total{model=%q} %d\n", sm.name, stats[i].Tokens)
	}
	head("minigpt_batch_rows_busy", "gauge", "Rows of the model's batch in use now.")
	for i, sm := range models {
		fmt.Fprintf(w, "minigpt_batch_rows_busy{model=%q} %d\n", sm.name, stats[i].RowsUsed)
	}
	head("minigpt_batch_rows", "histogram", "Rows of the model's batch in use at each step (the batch size).")
	for i, sm := range models {
		h := stats[i].RowsHist
		var cum, sum int64
		n := 0
		for _, le := range rowBuckets(len(h) - 1) {
			for ; n <= le; n++ {
				cum += h[n]
				sum += int64(n) * h[n]
			}
			fmt.Fprintf(w, "minigpt_batch_rows_bucket{model=%q,le=\"%d\"} %d\n", sm.name, le, cum)
		}
		fmt.Fprintf(w, "minigpt_batch_rows_bucket{model=%q,le=\"+Inf\"} %d\n", sm.name, cum)
		fmt.Fprintf(w, "minigpt_batch_rows_sum{model=%q} %d\n", sm.name, sum)
		fmt.Fprintf(w, "minigpt_batch_rows_count{model=%q} %d\n", sm.name, cum)
	}
}

// rowBuckets are the batch-size histogram's upper bounds for a batch of
// rows rows: the powers of two below rows, and rows.
func rowBuckets(rows int) []int {
	var b []int
	for le := 1; le < rows; le *= 2 {
		b = append(b, le)
	}
	return append(b, rows)
}
