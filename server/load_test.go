package server

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var loadFlag = flag.Bool("load", false, "run the full load test (500 requests from 32 clients) and print latency and throughput")

// TestLoad sends a bounded burst of mixed requests to a server on
// loopback: streaming and not, some clients disconnecting early, more
// clients than slots plus queue so that some get 429. Every request must
// end in success or 429, seeded requests must keep their serial text,
// memory must stay bounded and no goroutine may be left behind. Without
// -load it runs a small version (skipped with -short).
func TestLoad(t *testing.T) {
	requests, clients := 500, 32
	if !*loadFlag {
		if testing.Short() {
			t.Skip("load test in -short mode")
		}
		requests, clients = 60, 8
	}
	s, ts := newTestServer(t, func(c *Config) {
		c.Limits.Slots = runtime.GOMAXPROCS(0)
		c.Limits.Queue = 8
		c.Limits.QueueTimeout = 2 * time.Second
	})
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}

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
		serial[nonStream] = text(t, ts, nonStream)
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
				body, stream, disconnect := bodyOf(i)
				o := &outcomes[i]
				o.disconnect = disconnect
				ctx, cancel := context.WithCancel(context.Background())
				req := newPost(ctx, ts.URL+"/v1/completions", body)
				t0 := time.Now()
				resp, err := client.Do(req)
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
	close(stopSampling)
	sampler.Wait()

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

	// Every slot and queue place comes back, and so does every goroutine.
	tr.CloseIdleConnections()
	waitFor(t, "slots and queue to empty", func() bool { return s.slots.busy() == 0 && s.slots.queued() == 0 })
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutinesBefore+2 {
		t.Errorf("%d goroutines after the load, %d before", g, goroutinesBefore)
	}
	// Memory is bounded by the slots, not by the number of requests: one
	// generation needs a few MB at most for this model.
	if peak := peakHeap.Load(); peak > 256<<20 {
		t.Errorf("heap peaked at %d MB", peak>>20)
	}
	t.Logf("load: %d requests from %d clients in %v: %d ok, %d got 429, %d disconnected early", requests, clients, wall.Round(time.Millisecond), ok, busy, gone)
	t.Logf("load: latency p50 %v, p99 %v (successful, whole response); %d tokens, %.0f tokens/s; heap peak %d MB; GOMAXPROCS %d",
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), tokens, float64(tokens)/wall.Seconds(), peakHeap.Load()>>20, runtime.GOMAXPROCS(0))
}

// readStream reads an event stream to its end and returns its text and
// the number of characters.
func readStream(r io.Reader) (string, int, error) {
	sc := bufio.NewScanner(r)
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
