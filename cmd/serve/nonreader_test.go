package main

// A client that never reads, through serve's own listener and the socket
// settings a client has by default.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricValue reads one sample of the running server's /metrics.
func metricValue(t *testing.T, url, name string) int64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	var v int64
	fmt.Sscan(string(m[1]), &v)
	return v
}

// TestNonReaderLosesItsRows: a client that asks for a long stream and
// never reads it, with the socket settings a client has by default,
// loses its rows after -write-timeout once the little the connection may
// hold unread is full, long before its generation would end. (Left to the
// kernel, the server's send buffer grows to megabytes: the whole 3.9 MB
// stream of 4096 tokens × n 4 fitted, and the rows were held until the
// generation ended.)
func TestNonReaderLosesItsRows(t *testing.T) {
	s := startServe(t, "-write-timeout", "1s")
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, tokens = 4, 4096
	body := fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"n":%d,"stream":true}`, tokens, n)
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	deadline := time.Now().Add(60 * time.Second)
	started := false
	for {
		busy := metricValue(t, s.url, "minigpt_slots_busy")
		started = started || busy == n
		if started && busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s, %d rows busy (started: %v)", busy, started)
		}
		time.Sleep(10 * time.Millisecond)
	}
	generated := metricValue(t, s.url, `minigpt_generated_tokens_total{model="lanternbay"}`)
	cancelled := metricValue(t, s.url, "minigpt_generations_cancelled_total")
	t.Logf("the rows were freed after %d of %d tokens", generated, n*tokens)
	if cancelled != 1 || generated > n*tokens/2 {
		t.Errorf("a client that never read: %d of %d tokens generated, %d generations cancelled; want it cut after a fraction, and cancelled", generated, n*tokens, cancelled)
	}
}
