package server

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	loadFlag  = flag.Bool("load", false, "run the full load test (500 requests from 32 clients) and print latency, throughput and peak memory")
	loadURL   = flag.String("load-url", "", "run the load test against the cmd/serve at this URL (started with the flags e2e.sh gives it) instead of a server in the test process")
	loadPID   = flag.Int("load-pid", 0, "with -load-url: the server's process id, to read its peak RSS and to send it SIGTERM at the end")
	loadDrain = flag.Duration("load-drain", 2*time.Second, "with -load-pid: the server's -drain-timeout")
)

// The server the load test runs against: e2e.sh starts cmd/serve with
// these limits, and an in-process server gets them too.
const (
	loadSlots        = 2
	loadQueue        = 8
	loadQueueTimeout = 2 * time.Second
	loadWriteTimeout = time.Second
	loadMaxTokens    = 100000
)

// loadTarget is the server under load: in the test process (srv set) or
// a cmd/serve process (pid set, if known).
type loadTarget struct {
	url   string
	srv   *Server
	pid   int
	drain time.Duration
}

// state returns the busy slots, the queued requests and the bytes in
// flight, from the server itself or from its /metrics.
func (lt *loadTarget) state(t *testing.T) (busy, queued int, inflight int64) {
	if lt.srv != nil {
		return lt.srv.slots.state()
	}
	resp, err := http.Get(lt.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	gauge := func(name string) int64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		v, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return v
	}
	return int(gauge("minigpt_slots_busy")), int(gauge("minigpt_queue_depth")), gauge("minigpt_inflight_bytes")
}

// peakRSS is the server's peak resident set in bytes (VmHWM, Linux only):
// of the cmd/serve process, or of the test process (server and clients).
func (lt *loadTarget) peakRSS() (int64, bool) {
	path := "/proc/self/status"
	if lt.srv == nil {
		if lt.pid == 0 {
			return 0, false
		}
		path = fmt.Sprintf("/proc/%d/status", lt.pid)
	}
	b, err := os.ReadFile(path)
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

// terminate starts the server's shutdown: SIGTERM to cmd/serve, Shutdown
// with the drain deadline in process.
func (lt *loadTarget) terminate(t *testing.T) {
	if lt.srv != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), lt.drain)
			defer cancel()
			lt.srv.Shutdown(ctx)
		}()
		return
	}
	p, err := os.FindProcess(lt.pid)
	if err == nil {
		err = p.Signal(syscall.SIGTERM)
	}
	if err != nil {
		t.Fatalf("SIGTERM to %d: %v", lt.pid, err)
	}
}

// TestLoad sends a bounded burst of mixed requests to a server on
// loopback: streaming and not, some clients disconnecting early, some
// never reading their stream, requests as large as the size limit allows
// and one above it, more clients than slots plus queue so that some get
// 429. Every request must end in success, 429 or the size refusal,
// seeded requests must keep their serial text, the clients that never
// read must not hold a slot, memory must stay bounded and no goroutine
// may be left behind. Then it signals the server to stop while long
// requests run: a request on an idle keep-alive connection gets 503, and
// at the drain deadline every running request ends as the request
// timeout ends it. Without -load it runs a small version (skipped with
// -short); with -load-url it runs against cmd/serve (e2e.sh).
func TestLoad(t *testing.T) {
	requests, clients, stallers := 500, 32, 2
	if !*loadFlag {
		if testing.Short() {
			t.Skip("load test in -short mode")
		}
		requests, clients, stallers = 60, 8, 1
	}
	lt := &loadTarget{url: *loadURL, pid: *loadPID, drain: *loadDrain}
	if lt.url == "" {
		s, ts := newSmallBufferServer(t, func(c *Config) {
			c.Limits = Limits{Slots: loadSlots, Queue: loadQueue, QueueTimeout: loadQueueTimeout,
				WriteTimeout: loadWriteTimeout, MaxTokens: loadMaxTokens}
		})
		lt.url, lt.srv, lt.drain = ts.URL, s, time.Second
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	postBody := func(ctx context.Context, body string) (*http.Response, error) {
		return client.Do(newPost(ctx, lt.url+"/v1/completions", body))
	}

	// The seeded requests' texts, computed one at a time first.
	bodyOf := func(i int) (body string, stream, disconnect bool) {
		stream = i%3 == 0
		disconnect = i%7 == 0
		stream = stream || disconnect
		body = fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":%v,"top_k":%d,"seed":%d,"stream":%t}`,
			[]string{"the ", "the keeper ", "a small boat ", "the tide "}[i%4], 16+(i*37)%112, 0.5+float64(i%5)*0.2, i%6, i%11, stream)
		return
	}
	serial := map[string]string{}
	var serialMu sync.Mutex
	for i := range 11 * 4 {
		body, _, _ := bodyOf(i)
		nonStream := strings.Replace(body, `"stream":true`, `"stream":false`, 1)
		resp, err := postBody(context.Background(), nonStream)
		if err != nil {
			t.Fatal(err)
		}
		var c completionJSON
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("serial request %d: %d %v", i, resp.StatusCode, err)
		}
		resp.Body.Close()
		serial[nonStream] = c.Choices[0].Text
	}
	// The issue-26 request (100 MB of response for an 8 KB body) is
	// refused before it runs.
	big := fmt.Sprintf(`{"prompt":%q,"echo":true,"logprobs":20,"n":16,"max_tokens":4096}`, strings.Repeat("the ", 2048))
	if resp, err := postBody(context.Background(), big); err != nil || resp.StatusCode != 400 {
		t.Fatalf("the amplifying request: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()
	var peakHeap atomic.Uint64
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peakHeap.Load() {
				peakHeap.Store(ms.HeapAlloc)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})

	// Clients that send a long stream and never read it, and keep their
	// connection open until the load is over, spread through the load.
	var stalled []net.Conn
	var stalledMu sync.Mutex
	stall := func() {
		c, err := net.Dial("tcp", strings.TrimPrefix(lt.url, "http://"))
		if err != nil {
			t.Error(err)
			return
		}
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		// 10 MB of events: more than any socket buffer holds.
		body := `{"prompt":"the ","max_tokens":40000,"logprobs":5,"stream":true}`
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		stalledMu.Lock()
		stalled = append(stalled, c)
		stalledMu.Unlock()
	}
	stallAt := func(i int) bool { return stallers > 0 && i%(requests/stallers) == requests/stallers/2 }

	type outcome struct {
		status     int
		latency    time.Duration
		tokens     int
		disconnect bool
		err        error
	}
	outcomes := make([]outcome, requests)
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= requests {
					return
				}
				if stallAt(i) {
					stall()
				}
				body, stream, disconnect := bodyOf(i)
				o := &outcomes[i]
				o.disconnect = disconnect
				ctx, cancel := context.WithCancel(context.Background())
				t0 := time.Now()
				resp, err := postBody(ctx, body)
				if err != nil {
					o.err = err
					cancel()
					continue
				}
				o.status = resp.StatusCode
				switch {
				case resp.StatusCode != 200:
					io.Copy(io.Discard, resp.Body)
					if resp.StatusCode == 429 {
						// Back off as a polite client would (briefer than
						// Retry-After, to keep the server under pressure).
						time.Sleep(100 * time.Millisecond)
					}
				case disconnect:
					// Read three events, then go away.
					r := bufio.NewReader(resp.Body)
					for range 6 {
						r.ReadString('\n')
					}
				case stream:
					got, n, err := readStream(resp.Body)
					o.tokens, o.err = n, err
					serialMu.Lock()
					want, ok := serial[strings.Replace(body, `"stream":true`, `"stream":false`, 1)]
					serialMu.Unlock()
					if ok && got != want {
						o.err = fmt.Errorf("request %d under load: %q, serial %q", i, got, want)
					}
				default:
					var c completionJSON
					o.err = json.NewDecoder(resp.Body).Decode(&c)
					if o.err == nil {
						o.tokens = c.Usage.CompletionTokens
						if want, ok := serial[body]; ok && c.Choices[0].Text != want {
							o.err = fmt.Errorf("request %d under load: %q, serial %q", i, c.Choices[0].Text, want)
						}
					}
				}
				o.latency = time.Since(t0)
				cancel()
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)

	var lat []time.Duration
	ok, busy, gone, tokens := 0, 0, 0, 0
	for i, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("request %d: %v", i, o.err)
		case o.status == 429:
			busy++
		case o.status != 200:
			t.Errorf("request %d: status %d", i, o.status)
		case o.disconnect:
			gone++
		default:
			ok++
			tokens += o.tokens
			lat = append(lat, o.latency)
		}
	}
	if ok == 0 {
		t.Fatal("no request succeeded")
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }

	// Every slot, queue place and byte comes back, while the clients that
	// never read still hold their connections open.
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, q, f := lt.state(t)
		if b == 0 && q == 0 && f == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %d slots busy, %d queued, %d bytes in flight, with %d clients that never read still connected", b, q, f, stallers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range stalled {
		c.Close()
	}
	tr.CloseIdleConnections()
	if lt.srv != nil {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > goroutinesBefore+2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if g := runtime.NumGoroutine(); g > goroutinesBefore+2 {
			t.Errorf("%d goroutines after the load, %d before", g, goroutinesBefore)
		}
	}
	close(stopSampling)
	sampler.Wait()
	// Memory is bounded by the in-flight budget, not by the number or the
	// size of the requests.
	if lt.srv != nil {
		if peak := peakHeap.Load(); peak > 256<<20 {
			t.Errorf("heap peaked at %d MB", peak>>20)
		}
	}
	t.Logf("load: %d requests from %d clients and %d that never read, in %v: %d ok, %d got 429, %d disconnected early", requests, clients, stallers, wall.Round(time.Millisecond), ok, busy, gone)
	t.Logf("load: latency p50 %v, p99 %v (successful, whole response); %d tokens, %.0f tokens/s; GOMAXPROCS %d",
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), tokens, float64(tokens)/wall.Seconds(), runtime.GOMAXPROCS(0))
	if lt.srv != nil {
		t.Logf("load: heap peak %d MB (test process)", peakHeap.Load()>>20)
	}
	if rss, ok := lt.peakRSS(); ok {
		who := "the cmd/serve process"
		if lt.srv != nil {
			who = "the test process, server and clients"
		}
		t.Logf("load: peak RSS %d MB (%s)", rss>>20, who)
		if rss > 512<<20 {
			t.Errorf("peak RSS %d MB", rss>>20)
		}
	}
	if *loadFlag {
		largest(t, lt, postBody)
	}
	if lt.srv != nil || lt.pid != 0 {
		drainAtDeadline(t, lt)
	}
}

// largest sends requests as large as the default size limit allows (an
// 18.8 MB response each) two at a time, as many slots as there are: two
// that are read, then two that are never read, and reports the server's
// peak RSS: the in-flight budget, not the requests, bounds it.
func largest(t *testing.T, lt *loadTarget, post func(context.Context, string) (*http.Response, error)) {
	body := fmt.Sprintf(`{"prompt":%q,"echo":true,"logprobs":20,"n":3,"max_tokens":4096,"seed":7}`, strings.Repeat("the ", 2048))
	before, _ := lt.peakRSS()
	start := time.Now()
	var wg sync.WaitGroup
	var read atomic.Int64
	for range loadSlots {
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
	for range loadSlots {
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
		loadSlots, read.Load()>>20, loadSlots, time.Since(start).Round(time.Millisecond), before>>20, after>>20)
	if after > 384<<20 {
		t.Errorf("peak RSS %d MB", after>>20)
	}
}

// drainAtDeadline signals the server to stop while two long requests run
// and a third waits for a slot: a request on an idle keep-alive
// connection gets 503 during the drain, and at the drain deadline the
// running requests end as the request timeout ends them (finish_reason,
// usage, [DONE]) and the queued one is refused (503, or 429 if its queue
// wait ends first).
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
		fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"seed":1}`, loadMaxTokens),
		fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"seed":2}`, loadMaxTokens),
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
		want := min(i+1, loadSlots)
		waitFor(t, "the long requests to start", func() bool {
			b, q, _ := lt.state(t)
			return b == want && q == i+1-want
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
			if err := json.Unmarshal(r.body, &c); err != nil || *c.Choices[0].FinishReason != "length" || c.Usage.CompletionTokens != len(c.Choices[0].Text) {
				t.Errorf("non-streaming response at the drain deadline: %v %.200s", err, r.body)
			}
		}
	}
	msg := fmt.Sprintf("load: SIGTERM with %d requests running and 1 queued: idle keep-alive connection answered 503, running requests ended at the %v drain deadline with finish_reason, usage and [DONE], the queued one %d", loadSlots, lt.drain, queued)
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

// readStream reads an event stream to its end and returns its text and
// the number of characters.
func readStream(r io.Reader) (string, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<22)
	var b strings.Builder
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var c completionJSON
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return "", 0, err
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Text)
		}
	}
	if !done {
		return "", 0, fmt.Errorf("stream without [DONE]: %v", sc.Err())
	}
	return b.String(), len([]rune(b.String())), nil
}
