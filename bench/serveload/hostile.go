package main

// This file holds -hostile, the hostile load test: many clients mixing
// completions, chat completions, scores, uploads (some too large) and
// training jobs against a cmd/serve -training, with clients that never
// read their streams, then SIGTERM; every answer is checked
// (hostile_check.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hostile is a run of the hostile load test and what it saw.
type hostile struct {
	o      *options
	client *http.Client

	mu       sync.Mutex
	statuses map[string]map[int]int // kind -> status -> answers
	bad      []string               // malformed answers, and texts that differ from their reference
	busy     int                    // 429s
	compared int                    // seeded answers compared with the same request alone
	ref      map[string]string      // seeded body -> its text alone
}

// The seeded requests: completions and chat completions whose text must
// be, under load, what the same request gets alone.
func seededBodies() []string {
	var bodies []string
	prompts := []string{"the ", "the keeper ", "a small boat ", "the tide "}
	for i := range 24 {
		p := prompts[i%4]
		knobs := fmt.Sprintf(`"max_tokens":%d,"temperature":%v,"top_k":%d,"seed":%d`, 20+(i*37)%200, 0.6+float64(i%4)*0.2, i%5, i)
		if i%3 == 2 {
			bodies = append(bodies, `{"messages":[{"role":"system","content":"the lamp "},{"role":"user","content":"`+p+`"}],`+knobs+`}`)
		} else {
			bodies = append(bodies, `{"prompt":"`+p+`",`+knobs+`}`)
		}
	}
	return bodies
}

func pathOf(body string) string {
	if strings.Contains(body, `"messages"`) {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// runHostile runs the hostile load test and prints its line of results;
// it fails if an answer was malformed, a seeded text differed, the
// clients that never read held rows at the end, the server's peak RSS
// passed -max-rss, or it did not stop after SIGTERM.
func runHostile(ctx context.Context, o *options, stdout io.Writer) error {
	h := &hostile{o: o, statuses: map[string]map[int]int{}, ref: map[string]string{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}, Timeout: 2 * time.Minute}}
	for _, body := range seededBodies() {
		text, err := h.seededText(ctx, body, false)
		if err != nil {
			return fmt.Errorf("the seeded request alone: %s: %w", body, err)
		}
		h.ref[body] = text
	}
	var nonReaders []net.Conn
	defer func() {
		for _, c := range nonReaders {
			c.Close()
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	every := max(o.requests/max(o.nonReaders, 1)/2, 1) // the clients that never read come in the first half
	for range o.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= o.requests || ctx.Err() != nil {
					return
				}
				if i%every == 0 && i/every < o.nonReaders {
					if conn, err := h.neverRead(); err == nil {
						h.mu.Lock()
						nonReaders = append(nonReaders, conn)
						h.mu.Unlock()
					} else {
						h.malformed("a client that never reads: %v", err)
					}
				}
				h.request(ctx, i)
			}
		})
	}
	wg.Wait()
	// Uploads as large as allowed, all at once: 3/4 as many in JSON as
	// in forms.
	h.uploadStorm(ctx, o.storm*3/4, false)
	h.uploadStorm(ctx, o.storm, true)
	wall := time.Since(start)
	freed := h.rowsFreed(ctx, 30*time.Second)
	peak, rssKnown := peakRSS(o.pid)
	drained := "not signalled (no -pid)"
	if o.pid != 0 {
		drained = h.terminate(ctx)
	}
	total, byKind := 0, []string{}
	for _, kind := range []string{"completion", "chat", "score", "upload", "job", "bad"} {
		var parts []string
		for status, n := range h.statuses[kind] {
			total += n
			parts = append(parts, fmt.Sprintf("%d:%d", status, n))
		}
		byKind = append(byKind, kind+"="+strings.Join(sortStrings(parts), ","))
	}
	rss := "unknown"
	if rssKnown {
		rss = strconv.FormatInt(peak>>20, 10)
	}
	fmt.Fprintf(stdout, "hostile: clients=%d non_readers=%d requests=%d wall_s=%.1f %s retried_429=%d seeded_identical=%d/%d malformed=%d rows_freed=%t peak_rss_mb=%s budget_mb=%d drain=%q\n",
		o.clients, len(nonReaders), total, wall.Seconds(), strings.Join(byKind, " "), h.busy, h.compared-countPrefix(h.bad, "seeded"), h.compared, len(h.bad), freed, rss, o.maxRSS>>20, drained)
	var errs []error
	for _, b := range h.bad[:min(len(h.bad), 10)] {
		errs = append(errs, errors.New(b))
	}
	if !freed {
		errs = append(errs, errors.New("the clients that never read still held rows 30 s after the load"))
	}
	if rssKnown && o.maxRSS > 0 && peak > o.maxRSS {
		errs = append(errs, fmt.Errorf("peak RSS %d MiB is above the budget of %d MiB", peak>>20, o.maxRSS>>20))
	}
	if o.pid != 0 && !strings.HasPrefix(drained, "stopped") {
		errs = append(errs, fmt.Errorf("after SIGTERM: %s", drained))
	}
	return errors.Join(errs...)
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

func (h *hostile) count(kind string, status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.statuses[kind] == nil {
		h.statuses[kind] = map[int]int{}
	}
	h.statuses[kind][status]++
	if status == http.StatusTooManyRequests {
		h.busy++
	}
}

func (h *hostile) malformed(format string, a ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bad = append(h.bad, fmt.Sprintf(format, a...))
}

// request sends request i: a mix, by i, of every kind the server takes.
func (h *hostile) request(ctx context.Context, i int) {
	seeded := seededBodies()
	switch i % 10 {
	case 0, 1, 2, 3, 4:
		body := seeded[i%len(seeded)]
		stream := i%2 == 1
		text, err := h.seededText(ctx, body, stream)
		if err != nil {
			if !errors.Is(err, errBusy) {
				h.malformed("%s (stream %t): %v", body, stream, err)
			}
			return
		}
		h.mu.Lock()
		h.compared++
		want := h.ref[body]
		h.mu.Unlock()
		if text != want {
			h.malformed("seeded %s (stream %t): %q under load, %q alone", body, stream, text, want)
		}
	case 5:
		// Large answers: n 4 with logprobs, streamed or not.
		body := fmt.Sprintf(`{"prompt":"the ","n":4,"max_tokens":%d,"logprobs":5,"stream":%t}`, 200+i%800, i%4 == 1)
		h.checked(ctx, "completion", "POST", "/v1/completions", "application/json", []byte(body), i%4 == 1, 200)
	case 6:
		h.upload(ctx, i, true)
	case 7:
		h.upload(ctx, i, false)
	case 8:
		h.job(ctx, i)
	case 9:
		if i%20 == 9 {
			// Bad requests: refused, in OpenAI's shape.
			bad := []string{`{"prompt":"The"}`, `{"prompt":"the ","temprature":1}`, `{"prompt":`, `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`}[i/20%4]
			h.checked(ctx, "bad", "POST", pathOf(bad), "application/json", []byte(bad), false, 400)
			return
		}
		h.checked(ctx, "score", "POST", "/v1/score", "application/json", []byte(`{"text":"the keeper counts the boats","top_n":3}`), false, 200)
	}
}

var errBusy = errors.New("429 after retries")

// seededText sends a seeded request (retrying a 429) and returns its
// first choice's text.
func (h *hostile) seededText(ctx context.Context, body string, stream bool) (string, error) {
	if stream {
		body = strings.Replace(body, "{", `{"stream":true,`, 1)
	}
	for range 50 {
		kind := "completion"
		if pathOf(body) != "/v1/completions" {
			kind = "chat"
		}
		ans, err := h.send(ctx, kind, "POST", pathOf(body), "application/json", []byte(body), stream)
		if err != nil {
			return "", err
		}
		if ans.status == http.StatusTooManyRequests {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if ans.status != 200 {
			return "", fmt.Errorf("status %d: %.200s", ans.status, ans.body)
		}
		return ans.text, nil
	}
	return "", errBusy
}

// upload uploads a text (as a form or as JSON) of a size set by i, up to
// beyond the default 4 MiB limit, and deletes it when it was kept.
func (h *hostile) upload(ctx context.Context, i int, form bool) {
	h.uploadSized(ctx, i, form, []int{2 << 10, 200 << 10, 1 << 20, 3 << 20, 4<<20 + 300<<10}[i/10%5])
}

// uploadStorm sends n uploads of a text just under the default 4 MiB
// limit at once.
func (h *hostile) uploadStorm(ctx context.Context, n int, form bool) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { h.uploadSized(ctx, i, form, 4<<20-1<<10) })
	}
	wg.Wait()
}

func (h *hostile) uploadSized(ctx context.Context, i int, form bool, size int) {
	text := strings.Repeat("the keeper counts the boats.\n", size/29+1)[:size]
	var ct string
	var body []byte
	if form {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("purpose", "fine-tune")
		fw, _ := mw.CreateFormFile("file", fmt.Sprintf("t%d.txt", i))
		io.WriteString(fw, text)
		mw.Close()
		ct, body = mw.FormDataContentType(), b.Bytes()
	} else {
		ct = "application/json"
		body, _ = json.Marshal(map[string]string{"purpose": "fine-tune", "filename": fmt.Sprintf("t%d.txt", i), "content": text})
	}
	ans := h.checked(ctx, "upload", "POST", "/v1/files", ct, body, false, 200, 400, 413)
	if ans.status == 200 {
		var f struct{ ID string }
		json.Unmarshal(ans.body, &f)
		h.checked(ctx, "upload", "DELETE", "/v1/files/"+f.ID, "", nil, false, 200)
	}
}

// job creates a short training job; every other one is cancelled at
// once, the others waited for (briefly) and their model deleted.
func (h *hostile) job(ctx context.Context, i int) {
	body := fmt.Sprintf(`{"model":"scratch","training_file":"file-lanternbay","seed":%d,"hyperparameters":{"steps":4,"batch_size":2,"sample_every":0}}`, i)
	ans := h.checked(ctx, "job", "POST", "/v1/fine_tuning/jobs", "application/json", []byte(body), false, 200)
	if ans.status != 200 {
		return
	}
	id := ans.id
	if i%20 < 10 {
		h.checked(ctx, "job", "POST", "/v1/fine_tuning/jobs/"+id+"/cancel", "", nil, false, 200, 400)
		return
	}
	for range 100 {
		a := h.checked(ctx, "job", "GET", "/v1/fine_tuning/jobs/"+id, "", nil, false, 200)
		var j struct {
			Status         string  `json:"status"`
			FineTunedModel *string `json:"fine_tuned_model"`
		}
		json.Unmarshal(a.body, &j)
		if j.FineTunedModel != nil {
			h.checked(ctx, "job", "DELETE", "/v1/models/"+*j.FineTunedModel, "", nil, false, 200)
			return
		}
		if j.Status != "queued" && j.Status != "running" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.checked(ctx, "job", "GET", "/v1/fine_tuning/jobs/"+id+"/events", "", nil, false, 200)
}
