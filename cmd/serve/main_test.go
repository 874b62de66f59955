package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// syncBuffer is a bytes.Buffer safe to write from the server goroutine
// and read from the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is a run() in progress on a loopback port the OS chose.
type serving struct {
	url            string
	cancel         context.CancelFunc
	done           chan error
	stdout, stderr *syncBuffer
}

func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{cancel: cancel, done: make(chan error, 1), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	go func() { s.done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), s.stdout, s.stderr) }()
	addr := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := addr.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = m[1]
			break
		}
		select {
		case err := <-s.done:
			t.Fatalf("run returned %v before serving; stderr: %s", err, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no address printed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

func (s *serving) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for Cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancellation")
		return nil
	}
}

func TestServesEmbeddedModel(t *testing.T) {
	s := startServe(t, "-log")
	resp, err := http.Post(s.url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"lanternbay","prompt":"the ","max_tokens":20,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Choices []struct{ Text string }
	}
	json.NewDecoder(resp.Body).Decode(&c)
	// cmd/generate -greedy -n 20 prints "the boats come home when".
	if resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].Text != "boats come home when" {
		t.Errorf("status %d, choices %+v", resp.StatusCode, c.Choices)
	}
	if err := s.stop(t); err != nil {
		t.Errorf("run: %v", err)
	}
	if !strings.Contains(s.stderr.String(), "stopped") {
		t.Errorf("stderr %q", s.stderr)
	}
	// -log writes one line per request.
	if !strings.Contains(s.stderr.String(), "path=/v1/completions status=200") {
		t.Errorf("no request log line on stderr: %q", s.stderr)
	}
	// The listener is closed.
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), time.Second); err == nil {
		t.Error("still accepting connections after shutdown")
	}
}

// TestGracefulShutdown: a stream in progress when the signal arrives
// finishes (to data: [DONE]) before run returns.
func TestGracefulShutdown(t *testing.T) {
	s := startServe(t, "-drain-timeout", "30s")
	resp, err := http.Post(s.url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"the ","max_tokens":600,"stream":true,"seed":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q %v", line, err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(t) }()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the rest of the stream: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("the stream in progress did not finish: ends %q", tail(string(rest)))
	}
	if n := strings.Count(string(rest), "data: "); n < 600 {
		t.Errorf("only %d more events", n)
	}
	if err := <-stopped; err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestDrainDeadline: at the drain deadline every request still running
// ends as -request-timeout ends it (issue 26, defect 3: a non-streaming
// client got HTTP 200 with an empty body, a streaming one no finish_reason
// and no [DONE]), and run returns soon after with the interrupted status.
func TestDrainDeadline(t *testing.T) {
	s := startServe(t, "-drain-timeout", "300ms", "-max-tokens", "100000", "-request-timeout", "10m", "-slots", "2")
	type result struct {
		body []byte
		err  error
	}
	results := make(chan result, 2)
	for _, body := range []string{
		`{"prompt":"the ","max_tokens":100000,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"the ","max_tokens":100000}`,
	} {
		go func() {
			resp, err := http.Post(s.url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				results <- result{nil, err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			results <- result{b, err}
		}()
	}
	waitBusy(t, s.url, 2)
	start := time.Now()
	err := s.stop(t)
	if code := cli.ExitCode("serve", err, io.Discard); code != cli.ExitInterrupted {
		t.Errorf("run: %v (exit %d), want the interrupted status", err, code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run took %v to return after a 300ms drain deadline", d)
	}
	if !strings.Contains(s.stderr.String(), "drain deadline passed") {
		t.Errorf("stderr %q", s.stderr)
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Errorf("reading a response cut at the drain deadline: %v", r.err)
			continue
		}
		body := string(r.body)
		if strings.HasPrefix(body, "data: ") {
			if !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"finish_reason":"length"`) || !strings.Contains(body, `"usage":`) {
				t.Errorf("stream cut at the drain deadline ends %q", tail(body))
			}
			continue
		}
		var c struct {
			Choices []struct {
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.body, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].FinishReason != "length" ||
			c.Usage.CompletionTokens != len(c.Choices[0].Text) || c.Usage.CompletionTokens == 0 {
			t.Errorf("non-streaming response cut at the drain deadline: %v %q", err, tail(body))
		}
	}
}

// waitBusy waits until the server at url has n generations running.
func waitBusy(t *testing.T, url string, n int) {
	t.Helper()
	want := fmt.Sprintf(`"busy":%d,`, n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("health %s: never %d busy", b, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

// TestSlowloris: a client that trickles its headers is disconnected
// after -header-timeout instead of holding the connection.
func TestSlowloris(t *testing.T) {
	s := startServe(t, "-header-timeout", "200ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
	buf := make([]byte, 512)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		// One more header line every 50 ms: never finishing.
		if _, err := fmt.Fprintf(conn, "X-Slow: 1\r\n"); err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break // closed by the server
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the server still holds a connection whose headers never end")
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("closed after %v, before the header timeout", d)
	}
}

// TestFlagRefusals: a bad flag, value or -model file is refused before
// any work with status 2; a busy address fails with status 1; -h ends
// with the exit-status rule.
func TestFlagRefusals(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out, &errOut); cli.ExitCode("serve", err, &errOut) != 0 || !strings.Contains(out.String(), "-api-key") {
		t.Errorf("-h: %v, %q", err, out.String())
	}
	if help := strings.TrimSpace(out.String()); !strings.HasSuffix(help, "A second signal kills at once.") ||
		!strings.Contains(help, "Exit status: 2 refused before any work") || !strings.Contains(help, "130") || !strings.Contains(help, "; 1 failed after the") {
		t.Errorf("-h does not end with the exit-status rule:\n%s", help)
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt.ckpt")
	os.WriteFile(corrupt, []byte("MGPT not a checkpoint"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-slots", "0"}, 2, "-slots"},
		{[]string{"-queue", "-1"}, 2, "-queue: must be >= 0"},
		{[]string{"-slots", "0"}, 2, "-slots: must be at least 1"},
		{[]string{"-max-tokens", "0"}, 2, "-max-tokens"},
		{[]string{"-drain-timeout", "0s"}, 2, "-drain-timeout"},
		{[]string{"-addr", "nocolon"}, 2, "-addr"},
		{[]string{"-model", "justapath.ckpt"}, 2, "name=path"},
		{[]string{"-model", "lanternbay=x.ckpt"}, 2, "embedded"},
		{[]string{"-model", "a=x", "-model", "a=y"}, 2, "twice"},
		{[]string{"-model", "a b=x"}, 2, "spaces"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-nope"}, 2, "-nope"},
		{[]string{"-model", "a=" + filepath.Join(t.TempDir(), "missing.ckpt")}, 2, "-model a"},
		{[]string{"-model", "x=/nonexistent"}, 2, "-model x: "},
		{[]string{"-model", "c=" + corrupt}, 2, "-model c: "},
		{[]string{"-model", "d=" + t.TempDir()}, 2, "-model d: "},
		{[]string{"-queue-timeout", "0s"}, 2, "-queue-timeout"},
		{[]string{"-write-timeout", "0s"}, 2, "-write-timeout"},
		{[]string{"-request-timeout", "-1s"}, 2, "-request-timeout"},
		{[]string{"-header-timeout", "0s"}, 2, "-header-timeout"},
		{[]string{"-max-body", "0"}, 2, "-max-body"},
		{[]string{"-max-prompt", "0"}, 2, "-max-prompt"},
		{[]string{"-max-choices", "0"}, 2, "-max-choices"},
		{[]string{"-max-choices", "129"}, 2, "-max-choices: must be in [1, 128]"},
		{[]string{"-max-response", "0"}, 2, "-max-response"},
		{[]string{"-max-response", "2000", "-max-inflight", "1000"}, 2, "-max-inflight: must be at least -max-response"},
		{[]string{"-allowed-hosts", "a.example:80"}, 2, "-allowed-hosts"},
		{[]string{"-allowed-hosts", "a.example,,b.example"}, 2, "-allowed-hosts"},
	} {
		// A loopback port, and a context that ends, in case a row is
		// served instead of refused.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, tc.args...), &out, &errOut)
		cancel()
		if code := cli.ExitCode("serve", err, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", tc.args, code, errOut.String(), tc.code, tc.msg)
		}
	}
	// A busy address is a plain error (status 1).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"-addr", ln.Addr().String()}, io.Discard, io.Discard)
	if code := cli.ExitCode("serve", err, io.Discard); code != 1 {
		t.Errorf("busy address: exit %d (%v)", code, err)
	}
}

// probe is a running server's URL and output, for a flag's check.
type probe struct {
	t *testing.T
	s *serving
}

// post sends a JSON body to /v1/completions with headers (name, value
// pairs; "Host" sets the request's host) and returns the status and body.
func (p probe) post(body string, header ...string) (int, string) {
	return p.do("POST", "/v1/completions", body, header...)
}

func (p probe) do(method, path, body string, header ...string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.s.url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b) + "\n" + fmt.Sprint(resp.Header)
}

// hold starts a long streaming generation and returns once it runs; it
// ends with the test.
func (p probe) hold() {
	p.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", p.s.url+"/v1/completions", strings.NewReader(`{"prompt":"the ","max_tokens":100000,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { resp.Body.Close() })
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		p.t.Fatalf("holding request: %q %v", line, err)
	}
}

// TestEveryFlagAndVariable starts cmd/serve with each flag (and the
// environment variable it reads) and checks the running server does what
// the flag says (issue 30: -queue 0 getting the default queue, and
// $MINIGPT_API_KEY being ignored, went unnoticed). Every flag of the flag
// set must have a row.
func TestEveryFlagAndVariable(t *testing.T) {
	dir := t.TempDir()
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: 3, BlockSize: 8, EmbedDim: 8, Heads: 2, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := minigpt.NewVocab("xyz")
	ckpt := filepath.Join(dir, "tiny.ckpt")
	if err := minigpt.SaveCheckpoint(ckpt, &minigpt.Checkpoint{Model: m, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	expect := func(p probe, status int, got int, body string, contains ...string) {
		p.t.Helper()
		if got != status {
			p.t.Errorf("status %d, want %d: %.300s", got, status, body)
		}
		for _, c := range contains {
			if !strings.Contains(body, c) {
				p.t.Errorf("response lacks %q: %.300s", c, body)
			}
		}
	}
	rows := []struct {
		flag  string // or the environment variable
		args  []string
		env   map[string]string
		check func(p probe)
	}{
		{"addr", nil, nil, func(p probe) {
			if !strings.HasPrefix(p.s.url, "http://127.0.0.1:") {
				p.t.Errorf("listening on %s", p.s.url)
			}
		}},
		{"model", []string{"-model", "tiny=" + ckpt}, nil, func(p probe) {
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 200, st, body, `"id":"tiny"`, `"id":"lanternbay"`)
			if strings.Index(body, `"tiny"`) > strings.Index(body, `"lanternbay"`) {
				p.t.Error("the -model checkpoint is not the first (default) model")
			}
			st, body = p.post(`{"prompt":"xy","max_tokens":4,"seed":1}`)
			expect(p, 200, st, body) // the default model is tiny: "the " would be refused
		}},
		{"api-key", []string{"-api-key", "k1"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 401, st, body)
			st, body = p.post(`{"prompt":"the ","max_tokens":1}`, "Authorization", "Bearer k1")
			expect(p, 200, st, body)
			if !strings.Contains(p.s.stdout.String(), "Authorization: Bearer") {
				p.t.Errorf("stdout does not mention the key: %q", p.s.stdout)
			}
		}},
		{"MINIGPT_API_KEY", nil, map[string]string{"MINIGPT_API_KEY": "k2"}, func(p probe) {
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 401, st, body)
			st, body = p.do("GET", "/v1/models", "", "Authorization", "Bearer k2")
			expect(p, 200, st, body)
		}},
		{"api-key over MINIGPT_API_KEY", []string{"-api-key", "flag"}, map[string]string{"MINIGPT_API_KEY": "env"}, func(p probe) {
			st, body := p.do("GET", "/v1/models", "", "Authorization", "Bearer env")
			expect(p, 401, st, body)
			st, body = p.do("GET", "/v1/models", "", "Authorization", "Bearer flag")
			expect(p, 200, st, body)
		}},
		{"cors-origin", []string{"-cors-origin", "https://app.example"}, nil, func(p probe) {
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 200, st, body, "Access-Control-Allow-Origin:[https://app.example]")
		}},
		{"allowed-hosts", []string{"-allowed-hosts", "proxy.example, other.example"}, nil, func(p probe) {
			for _, h := range []string{"proxy.example", "other.example:8443"} {
				st, body := p.do("GET", "/v1/models", "", "Host", h)
				expect(p, 200, st, body)
			}
			st, body := p.do("GET", "/v1/models", "", "Host", "attacker.example")
			expect(p, 403, st, body, "host_not_allowed")
		}},
		{"slots", []string{"-slots", "3"}, nil, func(p probe) {
			st, body := p.do("GET", "/health", "")
			expect(p, 200, st, body, `"slots":3,`)
		}},
		{"queue", []string{"-queue", "0", "-slots", "1", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 429, st, body, "queue is full", "0 queued")
			if d := time.Since(start); d > time.Second {
				p.t.Errorf("-queue 0: 429 after %v, as if queued", d)
			}
			st, body = p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_queue_capacity 0\n")
		}},
		{"queue 2", []string{"-queue", "2"}, nil, func(p probe) {
			st, body := p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_queue_capacity 2\n")
		}},
		{"queue-timeout", []string{"-queue-timeout", "150ms", "-slots", "1", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 429, st, body, "timed out waiting")
			if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
				p.t.Errorf("429 after %v with -queue-timeout 150ms", d)
			}
		}},
		{"max-body", []string{"-max-body", "100"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"` + strings.Repeat("a", 100) + `"}`)
			expect(p, 413, st, body, "100 bytes")
		}},
		{"max-tokens", []string{"-max-tokens", "5"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":6}`)
			expect(p, 400, st, body, "[0, 5]")
		}},
		{"max-prompt", []string{"-max-prompt", "3"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 400, st, body, "limit of 3")
		}},
		{"max-choices", []string{"-max-choices", "2"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1,"n":3}`)
			expect(p, 400, st, body, "[1, 2]")
		}},
		{"max-response", []string{"-max-response", "5000"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":100,"logprobs":5}`)
			expect(p, 400, st, body, "response_too_large", "limit of 5000")
		}},
		{"max-inflight", []string{"-max-inflight", "77777777"}, nil, func(p probe) {
			st, body := p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_inflight_budget_bytes 77777777\n")
		}},
		{"request-timeout", []string{"-request-timeout", "200ms", "-max-tokens", "1000000"}, nil, func(p probe) {
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1000000}`)
			expect(p, 200, st, body, `"finish_reason":"length"`)
			if d := time.Since(start); d > 5*time.Second {
				p.t.Errorf("-request-timeout 200ms: answered after %v", d)
			}
		}},
		{"write-timeout", []string{"-write-timeout", "200ms", "-slots", "1", "-queue", "0"}, nil, func(p probe) {
			c, err := net.Dial("tcp", strings.TrimPrefix(p.s.url, "http://"))
			if err != nil {
				p.t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			body := `{"prompt":"the ","max_tokens":4096,"logprobs":20,"stream":true}`
			fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			waitBusy(p.t, p.s.url, 1)
			waitBusy(p.t, p.s.url, 0) // the client never reads: it loses its slot
		}},
		{"drain-timeout", []string{"-drain-timeout", "200ms", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			if code := cli.ExitCode("serve", p.s.stop(p.t), io.Discard); code != cli.ExitInterrupted {
				p.t.Errorf("exit %d, want %d", code, cli.ExitInterrupted)
			}
			if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
				p.t.Errorf("stopped %v after the signal with -drain-timeout 200ms", d)
			}
		}},
		{"header-timeout", []string{"-header-timeout", "200ms"}, nil, func(p probe) {
			c, err := net.Dial("tcp", strings.TrimPrefix(p.s.url, "http://"))
			if err != nil {
				p.t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") // never ends its headers
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			io.Copy(io.Discard, c)
			if d := time.Since(start); d < 150*time.Millisecond || d > 4*time.Second {
				p.t.Errorf("connection closed %v after unfinished headers with -header-timeout 200ms", d)
			}
		}},
		{"log", []string{"-log"}, nil, func(p probe) {
			p.do("GET", "/health", "")
			waitFor(p.t, "the log line", func() bool { return strings.Contains(p.s.stderr.String(), "path=/health status=200") })
		}},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		name, _, _ := strings.Cut(row.flag, " ")
		covered[name] = true
		t.Run(row.flag, func(t *testing.T) {
			for k, v := range row.env {
				t.Setenv(k, v)
			}
			row.check(probe{t, startServe(t, row.args...)})
		})
	}
	var o options
	newFlagSet(&o).VisitAll(func(f *flag.Flag) {
		if !covered[f.Name] {
			t.Errorf("flag -%s has no row in this test", f.Name)
		}
	})
	if !covered["MINIGPT_API_KEY"] {
		t.Error("$MINIGPT_API_KEY has no row")
	}
}

// TestIdleKeepAliveGets503: after the signal, a request on a keep-alive
// connection that was idle gets the documented 503 while the server
// drains, not a closed connection (issue 26, defect 8).
func TestIdleKeepAliveGets503(t *testing.T) {
	s := startServe(t, "-drain-timeout", "10s", "-max-tokens", "400")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var conns sync.Map
	reused := 0
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused++
			}
			conns.Store(info.Conn.LocalAddr().String(), true)
		}}
		return client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	}
	resp, err := get("/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // the connection is now idle in tr's pool
	// A stream in progress keeps the drain going.
	stream, err := http.Post(s.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"the ","max_tokens":400,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	r := bufio.NewReader(stream.Body)
	r.ReadString('\n')
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(t) }()
	waitFor(t, "the drain", func() bool { return strings.Contains(s.stderr.String(), "shutting down") })
	resp, err = get("/v1/models")
	if err != nil {
		t.Fatalf("request on the idle keep-alive connection after the signal: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "shutting_down") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after the signal: %d %s", resp.StatusCode, body)
	}
	if reused != 1 {
		t.Errorf("the request after the signal did not reuse the idle connection (%d reused)", reused)
	}
	rest, _ := io.ReadAll(r)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("the stream in progress did not finish: %q", tail(string(rest)))
	}
	if err := <-stopped; err != nil {
		t.Errorf("run: %v", err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
