package main

// This file holds what -hostile checks: each answer's shape (an OpenAI
// error object, a completion, a stream ending in data: [DONE]), the rows
// coming back while clients that never read stay connected, the server's
// peak RSS, and its stop after SIGTERM.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
