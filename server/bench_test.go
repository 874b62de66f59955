package server

// Benchmarks of the server in steady state: allocations and time per
// generated token, with one client and with a full batch.

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkServeTokens measures the server per generated token in steady
// state (-benchmem's allocs/op is per token): clients stream long
// generations (or wait for whole responses) from one batch, and the
// clock and the allocation counters start once every client generates
// beyond the block (a window slid per token), its buffers past their
// first growth. The clients read raw bytes into a fixed buffer, so what
// is counted is the server's: the handlers, the writers and the batch.
// allocs/token is the same count with its fraction (the batch's
// counters, read every 20 ms, cost one allocation per read).
func BenchmarkServeTokens(b *testing.B) {
	for _, tc := range []struct {
		clients int
		stream  bool
		extra   string
	}{
		{1, true, ""}, {32, true, ""}, {32, false, ""},
		{32, true, `,"temperature":0.8,"top_k":10,"top_p":0.95,"stop":["zzz"]`},
	} {
		name := fmt.Sprintf("clients=%d/stream=%t", tc.clients, tc.stream)
		if tc.extra != "" {
			name += "/knobs"
		}
		b.Run(name, func(b *testing.B) {
			s, ts := newTestServer(b, func(c *Config) {
				c.Limits.Slots, c.Limits.MaxTokens = 32, 1<<20
				c.Limits.MaxResponseBytes, c.Limits.MaxInFlightBytes = 1<<30, 1<<34
			})
			batch := s.models[0].engine.batch
			body := fmt.Sprintf(`{"prompt":"the ","max_tokens":%d,"stream":%t,"seed":1%s}`, 1<<20, tc.stream, tc.extra)
			var conns []net.Conn
			done := make(chan struct{}, tc.clients)
			for range tc.clients {
				c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
				if err != nil {
					b.Fatal(err)
				}
				conns = append(conns, c)
				fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				go func() {
					buf := make([]byte, 32<<10)
					for {
						if _, err := c.Read(buf); err != nil {
							done <- struct{}{}
							return
						}
					}
				}()
			}
			// Past the block and the buffers' first growth (1024 tokens).
			for batch.Stats().Tokens < int64(tc.clients)*1100 {
				time.Sleep(20 * time.Millisecond)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := batch.Stats().Tokens
			b.ResetTimer()
			for batch.Stats().Tokens < start+int64(b.N) {
				time.Sleep(20 * time.Millisecond)
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			tokens := batch.Stats().Tokens - start
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(tokens), "allocs/token")
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
			for _, c := range conns {
				c.Close()
			}
			for range conns {
				<-done
			}
			for s.slots.busy() > 0 {
				time.Sleep(time.Millisecond)
			}
		})
	}
}
