package main

// serveload against an in-process server.

import (
	"bytes"
	"net"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/server"
)

// TestRun: against an in-process server, every request is counted with
// its tokens, and the texts' checksum is the same streamed or not and
// whatever the number of clients running at once.
func TestRun(t *testing.T) {
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Models: []server.Model{{Name: "lanternbay", Model: m, Vocab: v}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	texts := map[string]bool{}
	for _, args := range [][]string{
		{"-clients", "3", "-requests", "2"},
		{"-clients", "1", "-requests", "6", "-stream"},
		{"-clients", "6", "-requests", "1", "-stream"},
	} {
		var out, errs bytes.Buffer
		if err := run(append(args, "-url", ts.URL, "-tokens", "40"), &out, &errs); err != nil {
			t.Fatalf("%v: %v %s", args, err, errs.String())
		}
		m := regexp.MustCompile(`requests=6 stream=\w+ tokens=240 .* texts=([0-9a-f]+)\n$`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%v: %q", args, out.String())
		}
		texts[m[1]] = true
	}
	if len(texts) != 1 {
		t.Errorf("the texts' checksums differ: %v", texts)
	}
}

// TestHostile: the hostile load test, small, against an in-process
// server with training on, whose connections have cmd/serve's bounded
// send buffer: every answer is well formed, every seeded one is what the
// same request gets alone, and the client that never reads loses its
// rows.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile load test in -short mode")
	}
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{
		Models:   []server.Model{{Name: "lanternbay", Model: m, Vocab: v}},
		Limits:   server.Limits{Slots: 8, WriteTimeout: time.Second},
		Training: &server.Training{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = sendBuffered{ts.Listener}
	ts.Start()
	defer ts.Close()
	var out, errs bytes.Buffer
	if err := run([]string{"-hostile", "-url", ts.URL, "-clients", "8", "-requests", "60", "-non-readers", "1", "-upload-storm", "4"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	if !regexp.MustCompile(`non_readers=1 .* seeded_identical=(\d+)/(\d+) malformed=0 rows_freed=true`).MatchString(out.String()) {
		t.Errorf("%s", out.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}

// sendBuffered sets cmd/serve's send buffer on accepted connections.
type sendBuffered struct{ net.Listener }

func (l sendBuffered) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}
