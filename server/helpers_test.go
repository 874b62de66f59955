package server

// Helpers shared by the package's tests: servers, requests, decoded
// responses.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"example.org/minigpt"
)

// lanternBay loads the embedded model once for every test.
var lanternBay = sync.OnceValues(func() (*minigpt.Model, *minigpt.Vocab) {
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		panic(err)
	}
	return m, v
})

// newTestServer starts a Server serving the embedded model as
// "lanternbay"; edit adjusts the config before New.
func newTestServer(t testing.TB, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	s := newTestHandler(t, edit)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// newTestHandler is the Server of newTestServer, not yet listening.
func newTestHandler(t testing.TB, edit func(*Config)) *Server {
	t.Helper()
	m, v := lanternBay()
	cfg := Config{Models: []Model{{Name: "lanternbay", Model: m, Vocab: v}}}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// response is a decoded HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body is not JSON: %v\n%s", r.status, err, r.body)
	}
	return m
}

func do(t testing.TB, method, url, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// newPost returns a JSON POST of body to url, cancelled with ctx.
func newPost(ctx context.Context, url, body string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func post(t testing.TB, ts *httptest.Server, body string, header ...string) response {
	t.Helper()
	return do(t, "POST", ts.URL+"/v1/completions", body, header...)
}

// completionJSON mirrors the response for decoding in tests.
type completionJSON struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Seed              uint64 `json:"seed"`
	Choices           []struct {
		Text         string  `json:"text"`
		Index        int     `json:"index"`
		Seed         *uint64 `json:"seed"`
		FinishReason *string `json:"finish_reason"`
		// FormatIncomplete is the extension that says the text fell short
		// of the request's format.
		FormatIncomplete *bool `json:"format_incomplete"`
		Logprobs         *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		Trace []traceJSON `json:"trace"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func (r response) completion(t testing.TB) completionJSON {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var c completionJSON
	dec := json.NewDecoder(bytes.NewReader(r.body))
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	return c
}

// text is the first choice's text.
func text(t testing.TB, ts *httptest.Server, body string) string {
	t.Helper()
	c := post(t, ts, body).completion(t)
	if len(c.Choices) == 0 {
		t.Fatalf("no choices")
	}
	return c.Choices[0].Text
}

// sseEvents splits a text/event-stream body into its data payloads,
// checking the framing: every event is a single "data: " line followed
// by a blank line.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<22)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("event not followed by a blank line: %q", line)
			}
			expectBlank = false
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		events = append(events, data)
		expectBlank = true
	}
	if expectBlank {
		t.Fatalf("stream ends without the blank line after its last event")
	}
	return events
}

// errorJSON is the OpenAI error object.
type errorJSON struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (r response) apiError(t testing.TB) errorJSON {
	t.Helper()
	var e errorJSON
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("status %d: body is not an OpenAI error object: %s", r.status, r.body)
	}
	return e
}

// newSmallBufferServer is newTestServer with 4 KiB socket send buffers, so
// that a client that stops reading blocks the server's writes within a
// few events rather than megabytes.
func newSmallBufferServer(t testing.TB, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	s := newTestHandler(t, edit)
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = smallBufferListener{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	return s, ts
}

type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// rawRequest sends a JSON POST of body to path on ts over a new
// connection with a receive buffer of rcvbuf bytes, and returns the
// connection without reading anything.
func rawRequest(t testing.TB, ts *httptest.Server, path, body string, rcvbuf int) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	conn.SetReadBuffer(rcvbuf)
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	return conn
}

// sizeOf is the size bound of the response to a request with body
// (size.go).
func sizeOf(t testing.TB, s *Server, body string) int64 {
	t.Helper()
	req := parsed(t, s, body)
	size, _ := responseSize(req, &req.sampling, req.echo)
	return size
}

// chargeOf is what a request with body is charged in flight: its
// response's size bound and what its format may hold.
func chargeOf(t testing.TB, s *Server, body string) int64 {
	t.Helper()
	return parsed(t, s, body).size
}

// parsed is body, parsed as a completion request.
func parsed(t testing.TB, s *Server, body string) *completionRequest {
	t.Helper()
	r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
	req, err := s.parseCompletion(httptest.NewRecorder(), r)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return req
}
