package main

// serve as a command: serving, shutdown and its drain, refusals and exit
// statuses, slow clients.

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
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

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
// A connection that never sends a request (a browser's preconnect, a
// client's spare dial) does not hold up the stop: http.Server.Shutdown
// alone waits 5 s for such a connection before it counts as idle.
func TestStopsDespiteSilentConnection(t *testing.T) {
	s := startServe(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitBusy(t, s.url, 0) // the connection is accepted before the stop
	start := time.Now()
	if err := s.stop(t); err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("run took %v to stop beside a connection that sent nothing", d)
	}
}

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
	help := out.String()
	for _, want := range []string{
		"Exit status:\n  0    done: stopped by SIGINT or SIGTERM after every request finished\n",
		"\n  2    refused before any work, nothing done: a bad flag or value, or a -model\n",
		"\n  1    failed after the work began: the address cannot be listened on",
		"\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: the drain deadline came with\n",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("-h lacks %q:\n%s", want, help)
		}
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt.ckpt")
	os.WriteFile(corrupt, []byte("MGPT not a checkpoint"), 0o644)
	tmpl := t.TempDir()
	badTemplate, emptyTemplate, goodTemplate := filepath.Join(tmpl, "bad.tmpl"), filepath.Join(tmpl, "empty.tmpl"), filepath.Join(tmpl, "good.tmpl")
	os.WriteFile(badTemplate, []byte("{{range .Messages}"), 0o644)
	os.WriteFile(emptyTemplate, []byte("\n"), 0o644)
	os.WriteFile(goodTemplate, []byte("{{range .Messages}}{{.Content}}{{end}}"), 0o644)
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
		{[]string{"-model", "justapath.ckpt"}, 2, "-model justapath.ckpt: no such file or directory"}, // named after the file, then not found
		{[]string{"-model", "dir/lanternbay.ckpt"}, 2, "the file's name) is the embedded model's: give -model name=dir/lanternbay.ckpt"},
		{[]string{"-model", "my model.ckpt"}, 2, "give -model name=my model.ckpt"},
		{[]string{"-chat-template", filepath.Join(t.TempDir(), "missing.tmpl")}, 2, "-chat-template: open"},
		{[]string{"-chat-template", badTemplate}, 2, "-chat-template " + badTemplate + ": template:"},
		{[]string{"-chat-template", emptyTemplate}, 2, "the file is empty"},
		{[]string{"-chat-template", goodTemplate, "-chat-template", goodTemplate}, 2, "given twice"},
		{[]string{"-chat-template", "lanternbay=" + goodTemplate, "-chat-template", "lanternbay=" + goodTemplate}, 2, "model lanternbay has a template already"},
		{[]string{"-chat-template", "lanternbay=" + badTemplate}, 2, ": template:"},
		{[]string{"-model", "lanternbay=x.ckpt"}, 2, "embedded"},
		{[]string{"-model", "a=x", "-model", "a=y"}, 2, "twice"},
		{[]string{"-model", "a b=x"}, 2, "spaces"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-nope"}, 2, "-nope"},
		{[]string{"-model", "a=" + filepath.Join(t.TempDir(), "missing.ckpt")}, 2, "-model a"},
		{[]string{"-model", "x=/nonexistent"}, 2, "-model x=/nonexistent: no such file or directory"},
		{[]string{"-model", "c=" + corrupt}, 2, "-model c=" + corrupt + `: bad checkpoint: magic number is "MGPT not", want "\x89GPT\r\n\x1a\n": not a minigpt checkpoint, nor a safetensors file (an 8-byte header length, then '{')`},
		{[]string{"-model", "d=" + os.TempDir()}, 2, "-model d=" + os.TempDir() + ": is a directory, not a regular file"},
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
