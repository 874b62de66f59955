package server

// Continuous batching: responses under random arrival schedules, byte for
// byte those of each request served alone; rows that come back.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// servingJob is one request of a randomised schedule.
type servingJob struct {
	body       string
	stream     bool
	delay      time.Duration
	disconnect int // with stream: the client goes away after this many events (0: reads all)
}

// servingJobs draws n mixed requests, seeded: greedy, sampled with every
// knob, beams, n samples, stop strings, logprobs, echo (scored or not),
// two prompts, the trace, 1 to 100 tokens (prompts inside and beyond the
// block), streamed or not, some clients going away midway.
func servingJobs(seed uint64, n int) []servingJob {
	rng := rand.New(rand.NewPCG(seed, 26))
	prompts := []string{"the ", "a small boat ", "the keeper walks along the rocks at dawn and the lamp burns low. ", "b"}
	jobs := make([]servingJob, n)
	for i := range jobs {
		f := map[string]any{
			"prompt":     prompts[rng.IntN(len(prompts))],
			"max_tokens": 1 + rng.IntN(100),
			"seed":       rng.IntN(1000),
		}
		switch rng.IntN(7) {
		case 0:
			f["temperature"] = 0
		case 1:
			beams := 2 + rng.IntN(3)
			f["num_beams"], f["n"] = beams, 1+rng.IntN(beams)
			f["length_penalty"] = []float64{0, 1, -0.5}[rng.IntN(3)]
			f["repetition_penalty"] = 1.2
		case 2:
			f["temperature"], f["top_k"], f["n"] = 0.9, 5, 1+rng.IntN(4)
			f["stop"] = []string{".", "the"}
		case 3:
			f["min_p"], f["presence_penalty"], f["frequency_penalty"] = 0.05, 0.5, 0.3
			f["logit_bias"] = map[string]float64{"3": -100, "5": 2}
			f["no_repeat_ngram_size"] = 3
		case 4:
			f["trace"] = 3
		case 5:
			f["prompt"] = []string{"the ", "a "}
			f["n"], f["top_p"] = 2, 0.8
		default:
			f["top_p"], f["repetition_penalty"], f["n"] = 0.9, 1.3, 1+rng.IntN(3)
		}
		if _, beams := f["num_beams"]; !beams && rng.IntN(3) == 0 {
			f["logprobs"] = rng.IntN(4)
		}
		if rng.IntN(4) == 0 {
			f["echo"] = true
		}
		j := servingJob{stream: rng.IntN(2) == 0, delay: time.Duration(rng.IntN(30)) * time.Millisecond}
		if j.stream {
			f["stream"] = true
			if rng.IntN(3) == 0 {
				f["stream_options"] = map[string]bool{"include_usage": true}
			}
			if rng.IntN(6) == 0 {
				j.disconnect = 1 + rng.IntN(4)
			}
		}
		b, err := json.Marshal(f)
		if err != nil {
			panic(err)
		}
		j.body = string(b)
		jobs[i] = j
	}
	return jobs
}

// volatile matches what differs between two servings of the same request:
// the completion's id and its creation time.
var volatile = regexp.MustCompile(`"id":"cmpl-[0-9a-f]+","object":"text_completion","created":[0-9]+`)

func normalise(b []byte) string {
	return volatile.ReplaceAllString(string(b), `"id":"-","object":"text_completion","created":0`)
}

// serveTogether sends every job to url at its delay, all at once, and
// returns each one's body and error (a status other than 200 is one).
func serveTogether(url string, jobs []servingJob) ([]string, []error) {
	got, errs := make([]string, len(jobs)), make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			time.Sleep(j.delay)
			status, body, err := serve(context.Background(), url, j)
			if err == nil && status != 200 {
				err = fmt.Errorf("status %d: %s", status, body)
			}
			got[i], errs[i] = body, err
		})
	}
	wg.Wait()
	return got, errs
}

// serve sends j and returns its status and normalised body: the events
// read before going away, for a client that disconnects.
func serve(ctx context.Context, url string, j servingJob) (int, string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := http.DefaultClient.Do(newPost(ctx, url+"/v1/completions", j.body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if j.disconnect == 0 || resp.StatusCode != 200 {
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, normalise(b), err
	}
	var got bytes.Buffer
	r := bufio.NewReader(resp.Body)
	for range 2 * j.disconnect { // each event is a data line and a blank one
		line, err := r.ReadBytes('\n')
		if err != nil {
			return resp.StatusCode, "", fmt.Errorf("after %d bytes: %w", got.Len(), err)
		}
		got.Write(line)
	}
	return resp.StatusCode, normalise(got.Bytes()), nil
}

// TestBatchedResponsesMatchSerial is issue 26's contract for the server:
// mixed requests arriving at random into the running batches, each
// response (text, logprobs, trace, finish reasons, usage, the stream's
// every event) byte for byte the one the same request gets alone through
// the same response writers with Model.Complete, at several batch sizes;
// a client that goes away read a prefix of it, and every row comes back.
func TestBatchedResponsesMatchSerial(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 16
	}
	jobs := servingJobs(1, n)
	limits := func(c *Config) {
		c.Limits.Queue, c.Limits.QueueTimeout, c.Limits.MaxTokens = n, time.Minute, 1000
	}
	ref, refTS := newTestServer(t, func(c *Config) { limits(c); c.Limits.Slots = 8 })
	ref.models[0].engine.alone = true
	want := make([]string, n)
	for i, j := range jobs {
		j.disconnect = 0
		status, body, err := serve(context.Background(), refTS.URL, j)
		if err != nil || status != 200 {
			t.Fatalf("job %d alone: %d %v %s\n%s", i, status, err, body, j.body)
		}
		want[i] = body
	}
	for _, rows := range []int{4, 9, 32} {
		s, ts := newTestServer(t, func(c *Config) { limits(c); c.Limits.Slots = rows })
		got, errs := serveTogether(ts.URL, jobs)
		for i, j := range jobs {
			switch {
			case errs[i] != nil:
				t.Errorf("rows %d, job %d %s: %v", rows, i, j.body, errs[i])
			case j.disconnect > 0:
				if !strings.HasPrefix(want[i], got[i]) {
					t.Errorf("rows %d, job %d %s went away after %d events: read\n%s\nalone\n%s", rows, i, j.body, j.disconnect, got[i], want[i])
				}
			case got[i] != want[i]:
				t.Errorf("rows %d, job %d %s: batched\n%s\nalone\n%s", rows, i, j.body, got[i], want[i])
			}
		}
		waitFor(t, "every row to come back", func() bool {
			busy, queued, used := s.slots.state()
			st := s.models[0].engine.batch.Stats()
			return busy == 0 && queued == 0 && used == 0 && st.RowsUsed == 0
		})
		st := s.models[0].engine.batch.Stats()
		most := 0
		for r, steps := range st.RowsHist {
			if steps > 0 {
				most = r
			}
		}
		t.Logf("rows %d: %d steps, %d tokens, at most %d rows in use", rows, st.Steps, st.Tokens, most)
	}
}

// TestRowsBeyondTheBatch: a request needing more rows than a batch has
// (one per sample, or per beam) is refused before it runs with a 400
// naming n or num_beams; one that needs them all runs, and so does one
// with several prompts, which take the rows in turn.
func TestRowsBeyondTheBatch(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.Slots = 4 })
	for _, tc := range []struct {
		body  string
		param string // "" for 200
	}{
		{`{"prompt":"the ","max_tokens":3,"n":5}`, "n"},
		{`{"prompt":"the ","max_tokens":3,"num_beams":5}`, "num_beams"},
		{`{"prompt":"the ","max_tokens":3,"num_beams":6,"n":2,"stream":true}`, "num_beams"},
		{`{"prompt":"the ","max_tokens":3,"n":4}`, ""},
		{`{"prompt":"the ","max_tokens":3,"num_beams":4,"n":4}`, ""},
		{`{"prompt":["the ","a "],"max_tokens":3,"n":4}`, ""},
	} {
		r := post(t, ts, tc.body)
		if tc.param == "" {
			if r.status != 200 {
				t.Errorf("%s: %d %s", tc.body, r.status, r.body)
			}
			continue
		}
		if r.status != 400 {
			t.Errorf("%s: %d, want 400", tc.body, r.status)
			continue
		}
		if e := r.apiError(t).Error; e.Param == nil || *e.Param != tc.param || !strings.Contains(e.Message, "4 rows") {
			t.Errorf("%s: %+v, want a refusal naming %s and the 4 rows", tc.body, e, tc.param)
		}
	}
}

// TestAdmissionInArrivalOrder: a waiting request is never overtaken by
// one that came after it for the same model's rows, nor for bytes it
// needs; one for another model's rows, whose bytes leave the earlier
// waiters theirs, starts at once. Rows and bytes given back go to the
// waiters in arrival order.
func TestAdmissionInArrivalOrder(t *testing.T) {
	s := newSlots(4, 8, 100)
	models := []*modelRows{{}, {}}
	ctx := context.Background()
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	acquire := func(name string, model, rows int, size int64) {
		wg.Go(func() {
			if _, err := s.acquire(ctx, ctx, models[model], rows, size, time.Minute); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		})
	}
	granted := func(want ...string) {
		t.Helper()
		waitFor(t, fmt.Sprint(want), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(order) == len(want)
		})
		time.Sleep(20 * time.Millisecond) // nobody else gets in meanwhile
		mu.Lock()
		defer mu.Unlock()
		// Those granted together wake in any order.
		if got := slices.Sorted(slices.Values(order)); fmt.Sprint(got) != fmt.Sprint(slices.Sorted(slices.Values(want))) {
			t.Fatalf("granted %v, want %v", order, want)
		}
	}
	queued := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d waiting", n), func() bool { return s.queued() == n })
	}
	acquire("a", 0, 3, 10) // model 0: 1 row left
	granted("a")
	acquire("b", 0, 2, 10) // waits for a's rows
	queued(1)
	acquire("c", 0, 1, 10) // the row is free, but b came first
	queued(2)
	acquire("d", 1, 1, 10) // another model: starts
	granted("a", "d")
	acquire("e", 1, 1, 61) // fits the budget (20 used) but not beside b's and c's 20
	queued(3)
	acquire("f", 1, 1, 39) // e came first
	queued(4)
	s.releaseRows(models[0], 3) // a's rows: b, then c; their bytes are taken, not held back
	granted("a", "d", "b", "c")
	if busy, q, used := s.state(); busy != 3+1 || q != 2 || used != 40 {
		t.Fatalf("%d rows busy, %d queued, %d bytes used; want 4, 2, 40", busy, q, used)
	}
	s.releaseBytes(10) // a's bytes: 30 used, e (61) fits, then f does not
	granted("a", "d", "b", "c", "e")
	s.releaseBytes(10 + 10 + 10) // d's, b's and c's: f fits, to the byte
	granted("a", "d", "b", "c", "e", "f")
	wg.Wait()
	if busy, q, used := s.state(); busy != 3+3 || q != 0 || used != 100 {
		t.Errorf("%d rows busy, %d queued, %d bytes used; want 6, 0, 100", busy, q, used)
	}
}

// TestSlowReaderDoesNotSlowTheBatch: a client that never reads its long
// stream holds its row until the write deadline, but the batch goes on
// without it: another request runs to its end meanwhile, at its usual
// speed.
func TestSlowReaderDoesNotSlowTheBatch(t *testing.T) {
	s, ts := newSmallBufferServer(t, func(c *Config) {
		c.Limits.Slots, c.Limits.WriteTimeout, c.Limits.MaxTokens = 2, 30*time.Second, 100000
	})
	const body = `{"prompt":"the ","max_tokens":300,"seed":3}`
	start := time.Now()
	alone := post(t, ts, body).completion(t).Choices[0].Text
	took := time.Since(start)
	rawRequest(t, ts, "/v1/completions", `{"prompt":"the ","max_tokens":100000,"logprobs":5,"stream":true}`, 4<<10)
	// Once the stalled stream has filled the socket buffers, its caller
	// is blocked in a write, and once the loop has queued the backlog it
	// allows, the request is paused: its tokens stop.
	last := int64(-1)
	waitFor(t, "the stalled stream to pause", func() bool {
		time.Sleep(100 * time.Millisecond)
		st := s.models[0].engine.batch.Stats()
		paused := st.RowsUsed > 0 && st.Tokens > 1000 && st.Tokens == last
		last = st.Tokens
		return paused
	})
	start = time.Now()
	if got := post(t, ts, body).completion(t).Choices[0].Text; got != alone {
		t.Errorf("beside a stalled stream: %q, alone %q", got, alone)
	}
	if d := time.Since(start); d > 5*took+time.Second {
		t.Errorf("beside a stalled stream the request took %v, alone %v", d, took)
	}
	if busy := s.slots.busy(); busy != 1 {
		t.Errorf("%d rows busy, want the stalled stream's", busy)
	}
}

// TestBatchMetrics: /metrics reports the batch's steps, tokens and rows
// per step, the queue wait and the time to first token, with the counts
// a hand calculation gives: a prompt of 4 characters fills in the first
// step, which also chooses the first tokens, so n = 3 samples of 5 tokens
// take 5 steps of 3 rows and make 15 tokens.
func TestBatchMetrics(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.Slots = 8 })
	c := post(t, ts, `{"prompt":"the ","max_tokens":5,"n":3,"seed":1}`).completion(t)
	if c.Usage.CompletionTokens != 15 {
		t.Fatalf("usage %+v, want 15 completion tokens", c.Usage)
	}
	post(t, ts, `{"prompt":"the ","max_tokens":0}`).completion(t) // admitted, no token
	body := string(do(t, "GET", ts.URL+"/metrics", "").body)
	for _, line := range []string{
		`minigpt_batch_steps_total{model="lanternbay"} 5`,
		`minigpt_batch_tokens_total{model="lanternbay"} 15`,
		`minigpt_batch_rows_busy{model="lanternbay"} 0`,
		`minigpt_batch_rows_bucket{model="lanternbay",le="2"} 0`,
		`minigpt_batch_rows_bucket{model="lanternbay",le="4"} 5`,
		`minigpt_batch_rows_bucket{model="lanternbay",le="8"} 5`,
		`minigpt_batch_rows_bucket{model="lanternbay",le="+Inf"} 5`,
		`minigpt_batch_rows_sum{model="lanternbay"} 15`,
		`minigpt_batch_rows_count{model="lanternbay"} 5`,
		`minigpt_queue_wait_seconds_count 2`,
		`minigpt_queue_wait_seconds_bucket{le="0.001"} 2`, // nothing else ran: no wait
		`minigpt_time_to_first_token_seconds_count 1`,
		`minigpt_slots 8`,
		"# TYPE minigpt_batch_rows histogram",
		"# TYPE minigpt_batch_tokens_total counter",
		"# TYPE minigpt_time_to_first_token_seconds histogram",
		"# TYPE minigpt_queue_wait_seconds histogram",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}
