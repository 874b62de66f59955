package main

// This file holds -hostile, the hostile load test: many clients mixing
// completions, chat completions, scores, uploads (some too large) and
// training jobs against a cmd/serve -training, with clients that never
// read their streams, then SIGTERM; every answer is checked.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// answer is a response, read whole and checked for its shape.
type answer struct {
	status int
	body   []byte
	text   string // the first choice's text (or message, or deltas)
	id     string
}

// checked sends a request and records it as malformed unless its status
// is want, 429 or a well-formed refusal.
func (h *hostile) checked(ctx context.Context, kind, method, path, ct string, body []byte, stream bool, want ...int) answer {
	ans, err := h.send(ctx, kind, method, path, ct, body, stream)
	if err != nil {
		h.malformed("%s %s: %v", method, path, err)
		return answer{}
	}
	for _, w := range append(want, http.StatusTooManyRequests) {
		if ans.status == w {
			return ans
		}
	}
	h.malformed("%s %s: status %d, want %v: %.200s", method, path, ans.status, want, ans.body)
	return ans
}

// send sends a request, counts its status and checks its body: an
// OpenAI error object (with Retry-After on 429), or a success in its
// route's shape (a stream's events, ending with data: [DONE]).
func (h *hostile) send(ctx context.Context, kind, method, path, ct string, body []byte, stream bool) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.o.url+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	ans := answer{status: resp.StatusCode}
	h.count(kind, resp.StatusCode)
	if resp.StatusCode != 200 {
		ans.body, _ = io.ReadAll(resp.Body)
		var e struct {
			Error *struct{ Message, Type string } `json:"error"`
		}
		if json.Unmarshal(ans.body, &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
			return ans, fmt.Errorf("status %d without an error object: %.200s", resp.StatusCode, ans.body)
		}
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			return ans, errors.New("429 without Retry-After")
		}
		return ans, nil
	}
	if stream {
		ans.text, err = readEvents(resp.Body)
		return ans, err
	}
	ans.body, err = io.ReadAll(resp.Body)
	if err != nil {
		return ans, err
	}
	var v struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Choices []struct {
			Text    string `json:"text"`
			Message struct{ Content string }
		} `json:"choices"`
	}
	if err := json.Unmarshal(ans.body, &v); err != nil {
		return ans, fmt.Errorf("a 200 that is not JSON: %v: %.200s", err, ans.body)
	}
	ans.id = v.ID
	if len(v.Choices) > 0 {
		ans.text = v.Choices[0].Text + v.Choices[0].Message.Content
	}
	return ans, nil
}

// readEvents reads a stream to its end: every event one JSON data line,
// the last data: [DONE]; it returns choice 0's text.
func readEvents(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<22)
	var text strings.Builder
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || done {
			return "", fmt.Errorf("a stream line %q after [DONE] or not data", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Index int    `json:"index"`
				Text  string `json:"text"`
				Delta struct{ Content string }
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || (c.Object == "" && c.Error == nil) {
			return "", fmt.Errorf("an event that is not a chunk: %.200q", data)
		}
		for _, ch := range c.Choices {
			if ch.Index == 0 {
				text.WriteString(ch.Text + ch.Delta.Content)
			}
		}
	}
	if !done {
		return "", fmt.Errorf("a stream without [DONE]: %v", sc.Err())
	}
	return text.String(), nil
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

// neverRead opens a connection with the socket settings a client has by
// default, asks for a long stream (4096 tokens × n 4) and never reads it.
func (h *hostile) neverRead() (net.Conn, error) {
	c, err := net.Dial("tcp", strings.TrimPrefix(h.o.url, "http://"))
	if err != nil {
		return nil, err
	}
	body := `{"prompt":"the ","max_tokens":4096,"n":4,"stream":true}`
	_, err = fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return c, err
}

// rowsFreed reports whether the server's rows and in-flight bytes come
// back to 0 within wait, while the clients that never read stay
// connected.
func (h *hostile) rowsFreed(ctx context.Context, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		busy, err1 := h.metric(ctx, "minigpt_slots_busy")
		bytes, err2 := h.metric(ctx, "minigpt_inflight_bytes")
		if err1 == nil && err2 == nil && busy == 0 && bytes == 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (h *hostile) metric(ctx context.Context, name string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", h.o.url+"/metrics", nil)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// terminate starts long streams, sends the server SIGTERM while they run,
// and checks that each ends well formed and that the process exits.
func (h *hostile) terminate(ctx context.Context) string {
	var wg sync.WaitGroup
	var cut atomic.Int64
	for range 4 {
		wg.Go(func() {
			ans, err := h.send(ctx, "completion", "POST", "/v1/completions", "application/json", []byte(`{"prompt":"the ","max_tokens":4096,"stream":true}`), true)
			switch {
			case err != nil:
				h.malformed("a stream during SIGTERM: %v", err)
			case ans.status == 200 && len(ans.text) < 4096:
				cut.Add(1)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	p, err := os.FindProcess(h.o.pid)
	if err == nil {
		err = p.Signal(syscall.SIGTERM)
	}
	if err != nil {
		return fmt.Sprintf("SIGTERM: %v", err)
	}
	wg.Wait()
	deadline := time.Now().Add(h.o.drain + 15*time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", h.o.pid)); err != nil {
			return fmt.Sprintf("stopped; %d of the 4 streams running at SIGTERM cut at the drain deadline, each well formed", cut.Load())
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.o.pid)); err == nil && strings.Contains(string(b), ") Z ") {
			return fmt.Sprintf("stopped; %d of the 4 streams running at SIGTERM cut at the drain deadline, each well formed", cut.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "still running after SIGTERM"
}

// peakRSS is process pid's peak resident set in bytes (VmHWM, Linux).
func peakRSS(pid int) (int64, bool) {
	if pid == 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10, true
}
