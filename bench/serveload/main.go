// Command serveload is the load generator of bench/serve.sh: closed-loop
// clients that each send completion requests back to back to a running
// cmd/serve, and one line of results (key=value) on stdout; with
// -hostile, the hostile load test (hostile.go) that e2e.sh runs.
//
//	go run ./bench/serveload -url http://127.0.0.1:8080 -clients 32 -requests 4 -tokens 200
//	go run ./bench/serveload -hostile -url http://127.0.0.1:8080 -pid 1234 -clients 64 -requests 2000 -max-rss 600
//
// Request r of client c has seed c*requests+r, so two servers of the
// same model that answer every request with the same text print the
// same checksum, whatever their batching. A 429 is retried after 50 ms
// and counted.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

type options struct {
	url                       string
	clients, requests, tokens int
	stream                    bool
	prompt                    string
	timeout                   time.Duration

	// -hostile (hostile.go)
	hostile    bool
	nonReaders int
	storm      int
	pid        int
	maxRSS     int64 // bytes
	drain      time.Duration
}

// result is one request's outcome.
type result struct {
	latency, first time.Duration // whole response; first token (streams)
	tokens         int
	text           string
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "the server's base `URL`")
	fs.IntVar(&o.clients, "clients", 32, "concurrent clients")
	fs.IntVar(&o.requests, "requests", 4, "requests per client, one after the other")
	fs.IntVar(&o.tokens, "tokens", 200, "max_tokens of every request")
	fs.BoolVar(&o.stream, "stream", false, "stream the responses (Server-Sent Events)")
	fs.StringVar(&o.prompt, "prompt", "the ", "the prompt of every request")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.BoolVar(&o.hostile, "hostile", false, "the hostile load test against a cmd/serve -training: -requests in all (completions, chat, scores, uploads up to beyond the file limit, jobs, bad requests), -non-readers streams never read, then SIGTERM to -pid; every answer is checked")
	fs.IntVar(&o.nonReaders, "non-readers", 8, "with -hostile, clients that ask for a long stream and never read it")
	fs.IntVar(&o.storm, "upload-storm", 64, "with -hostile, after the mixed load: this many forms of an almost 4 MiB file sent at once, then 3/4 as many in JSON")
	fs.IntVar(&o.pid, "pid", 0, "with -hostile, the server's process id: its peak RSS is read, and it gets SIGTERM at the end")
	maxRSS := fs.Int64("max-rss", 0, "with -hostile and -pid, fail if the server's peak RSS passes this many `MiB` (0: report only)")
	fs.DurationVar(&o.drain, "drain", 10*time.Second, "with -hostile and -pid, the server's -drain-timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.maxRSS = *maxRSS << 20
	if o.clients < 1 || o.requests < 1 || o.tokens < 1 {
		return errors.New("-clients, -requests and -tokens must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if o.hostile {
		return runHostile(ctx, &o, stdout)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
	results := make([]result, o.clients*o.requests)
	var busy, failures int
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for c := range o.clients {
		wg.Go(func() {
			for r := range o.requests {
				i := c*o.requests + r
				for {
					res, status, err := send(ctx, client, &o, i)
					if status == http.StatusTooManyRequests {
						mu.Lock()
						busy++
						mu.Unlock()
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if err != nil {
						mu.Lock()
						failures++
						if firstErr == nil {
							firstErr = fmt.Errorf("request %d: %w", i, err)
						}
						mu.Unlock()
					}
					results[i] = res
					break
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if firstErr != nil {
		return fmt.Errorf("%d requests failed, the first: %w", failures, firstErr)
	}
	tokens := 0
	var lat, first []time.Duration
	h := sha256.New()
	for _, r := range results {
		tokens += r.tokens
		lat = append(lat, r.latency)
		first = append(first, r.first)
		fmt.Fprintf(h, "%q\n", r.text)
	}
	slices.Sort(lat)
	slices.Sort(first)
	pct := func(d []time.Duration, p float64) float64 {
		return d[min(len(d)-1, int(p*float64(len(d))))].Seconds() * 1000
	}
	fmt.Fprintf(stdout, "clients=%d requests=%d stream=%t tokens=%d wall_s=%.3f tokens_per_s=%.0f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f",
		o.clients, len(results), o.stream, tokens, wall.Seconds(), float64(tokens)/wall.Seconds(), pct(lat, 0.5), pct(lat, 0.9), pct(lat, 0.99))
	if o.stream {
		fmt.Fprintf(stdout, " ttft_p50_ms=%.1f", pct(first, 0.5))
	}
	fmt.Fprintf(stdout, " retried_429=%d texts=%s\n", busy, hex.EncodeToString(h.Sum(nil)[:8]))
	return nil
}

// send sends request i and reads its whole response.
func send(ctx context.Context, client *http.Client, o *options, i int) (result, int, error) {
	body, _ := json.Marshal(map[string]any{"prompt": o.prompt, "max_tokens": o.tokens, "seed": i, "stream": o.stream})
	req, err := http.NewRequestWithContext(ctx, "POST", o.url+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return result{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return result{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return result{}, resp.StatusCode, fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	var res result
	if !o.stream {
		var c struct {
			Choices []struct{ Text string }
			Usage   struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) != 1 {
			return res, resp.StatusCode, fmt.Errorf("decoding the response: %v", err)
		}
		res.latency = time.Since(t0)
		res.first = res.latency
		res.tokens, res.text = c.Usage.CompletionTokens, c.Choices[0].Text
		return res, resp.StatusCode, nil
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct{ Choices []struct{ Text string } }
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return res, resp.StatusCode, err
		}
		for _, ch := range c.Choices {
			if ch.Text != "" && res.first == 0 {
				res.first = time.Since(t0)
			}
			text.WriteString(ch.Text)
		}
	}
	if !done {
		return res, resp.StatusCode, fmt.Errorf("stream without [DONE]: %v", sc.Err())
	}
	res.latency = time.Since(t0)
	res.text = text.String()
	res.tokens = len([]rune(res.text))
	return res, resp.StatusCode, nil
}
