package server

// The load test's later phases: the largest responses allowed, and SIGTERM
// at the drain deadline.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// largest sends requests as large as the default size limit allows (an
// 18.8 MB response each) two at a time, as many as the batch has rows
// for: two that are read, then two that are never read, and reports the
// server's peak RSS: the in-flight budget, not the requests, bounds it.
func largest(t *testing.T, lt *loadTarget, post func(context.Context, string) (*http.Response, error)) {
	body := fmt.Sprintf(`{"prompt":%q,"echo":true,"logprobs":20,"n":%d,"max_tokens":4096,"seed":7}`, strings.Repeat("the ", 2048), loadN)
	before, _ := lt.peakRSS()
	start := time.Now()
	var wg sync.WaitGroup
	var read atomic.Int64
	for range loadRequests {
		wg.Go(func() {
			resp, err := post(context.Background(), body)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			n, _ := io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != 200 {
				t.Errorf("a request as large as allowed: %d", resp.StatusCode)
			}
			read.Add(n)
		})
	}
	wg.Wait()
	var unread []net.Conn
	for range loadRequests {
		c, err := net.Dial("tcp", strings.TrimPrefix(lt.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		unread = append(unread, c)
	}
	waitFor(t, "the unread requests to start", func() bool { _, _, f := lt.state(t); return f > 0 })
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, f := lt.state(t); f == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("two responses never read still hold the in-flight budget after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range unread {
		c.Close()
	}
	after, ok := lt.peakRSS()
	if !ok {
		return
	}
	t.Logf("load: %d requests of 18.8 MB (%d MB read), then %d never read, in %v: peak RSS %d MB before, %d MB after",
		loadRequests, read.Load()>>20, loadRequests, time.Since(start).Round(time.Millisecond), before>>20, after>>20)
	if after > 384<<20 {
		t.Errorf("peak RSS %d MB", after>>20)
	}
}

// drainAtDeadline signals the server to stop while two long requests of
// loadN samples run, taking every row, and a third waits: a request on an
// idle keep-alive connection gets 503 during the drain, and at the drain
// deadline the running requests end as the request timeout ends them
// (finish_reason, usage, [DONE]) and the queued one is refused (503, or
// 429 if its queue wait ends first).
func drainAtDeadline(t *testing.T, lt *loadTarget) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// A keep-alive connection, idle in tr's pool.
	resp, err := client.Get(lt.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	type result struct {
		status int
		body   []byte
		err    error
		at     time.Duration
	}
	bodies := []string{
		fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"n":%d,"stream":true,"stream_options":{"include_usage":true},"seed":1}`, loadMaxTokens, loadN),
		fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"n":%d,"seed":2}`, loadMaxTokens, loadN),
		fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"seed":3}`, loadMaxTokens),
	}
	results := make([]chan result, len(bodies))
	var signalled atomic.Int64 // unix nanoseconds of the signal
	for i, b := range bodies {
		results[i] = make(chan result, 1)
		go func() {
			resp, err := http.DefaultClient.Do(newPost(context.Background(), lt.url+"/v1/completions", b))
			if err != nil {
				results[i] <- result{err: err}
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] <- result{resp.StatusCode, body, err, time.Since(time.Unix(0, signalled.Load()))}
		}()
		running := min(i+1, loadRequests)
		waitFor(t, "the long requests to start", func() bool {
			b, q, _ := lt.state(t)
			return b == running*loadN && q == i+1-running
		})
	}
	rss, rssOK := lt.peakRSS()
	signalled.Store(time.Now().UnixNano())
	lt.terminate(t)
	// The idle connection is answered with 503 while the server drains.
	var refused *http.Response
	waitFor(t, "the drain's 503", func() bool {
		resp, err := client.Get(lt.url + "/v1/models")
		if err != nil {
			t.Fatalf("a request on an idle keep-alive connection during the drain: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		refused = resp
		return resp.StatusCode == 503
	})
	if refused.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	queued := 0
	for i := range bodies {
		var r result
		select {
		case r = <-results[i]:
		case <-time.After(lt.drain + 10*time.Second):
			t.Fatalf("request %d unanswered %v after the signal", i, lt.drain+10*time.Second)
		}
		switch {
		case r.err != nil:
			t.Errorf("request %d cut at the drain deadline: %v", i, r.err)
		case i == 2:
			// Refused by whichever comes first: its queue wait or the
			// drain deadline.
			queued = r.status
			if r.status != 503 && r.status != 429 {
				t.Errorf("the queued request at the drain deadline: %d %.200s", r.status, r.body)
			}
		case r.status != 200:
			t.Errorf("request %d at the drain deadline: %d %.200s", i, r.status, r.body)
		case r.at < lt.drain-100*time.Millisecond:
			t.Errorf("request %d ended %v after the signal, before the %v drain deadline", i, r.at, lt.drain)
		case i == 0:
			if s := string(r.body); !strings.HasSuffix(s, "data: [DONE]\n\n") || !strings.Contains(s, `"finish_reason":"length"`) || !strings.Contains(s, `"usage":`) {
				t.Errorf("stream at the drain deadline ends %q", s[max(0, len(s)-200):])
			}
		default:
			var c completionJSON
			err := json.Unmarshal(r.body, &c)
			chars := 0
			for _, ch := range c.Choices {
				chars += len(ch.Text)
				if ch.FinishReason == nil || *ch.FinishReason != "length" {
					err = fmt.Errorf("choice %d has no finish_reason length", ch.Index)
				}
			}
			if err != nil || len(c.Choices) != loadN || c.Usage.CompletionTokens != chars {
				t.Errorf("non-streaming response at the drain deadline: %v %.200s", err, r.body)
			}
		}
	}
	msg := fmt.Sprintf("load: SIGTERM with %d requests of %d samples running and 1 queued: idle keep-alive connection answered 503, running requests ended at the %v drain deadline with finish_reason, usage and [DONE], the queued one %d", loadRequests, loadN, lt.drain, queued)
	if rssOK {
		msg += fmt.Sprintf("; peak RSS before the signal %d MB", rss>>20)
	}
	t.Log(msg)
	if lt.srv == nil {
		// The process exits (e2e.sh checks its status).
		waitFor(t, "cmd/serve to exit", func() bool {
			_, err := net.DialTimeout("tcp", strings.TrimPrefix(lt.url, "http://"), 100*time.Millisecond)
			return err != nil
		})
	}
}
