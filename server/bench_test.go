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

// BenchmarkServeGuided measures the output's format through the server,
// one client, each request whole: "long" requests generate 200 tokens
// each, free or held to a format that never ends earlier, and report the
// time per token; "short" ones are a three-token free request and a
// choice of three words, whose ns/op shows what compiling the format
// adds to a request. Run with -count to interleave the cases.
func BenchmarkServeGuided(b *testing.B) {
	for _, tc := range []struct{ name, fields string }{
		{"long/free", `"max_tokens":200`},
		{"long/regex", `"max_tokens":200,"guided_regex":"([a-z]{1,8}[ .])+"`},
		{"long/grammar", `"max_tokens":200,"guided_grammar":"root ::= sentence+\nsentence ::= word (\" \" word)* \". \"\nword ::= [a-z]+"`},
		{"json/free", `"model":"json","prompt":" ","max_tokens":200`},
		{"json/object", `"model":"json","prompt":" ","max_tokens":200,"response_format":{"type":"json_object"}`},
		{"short/free", `"max_tokens":3`},
		{"short/choice", `"max_tokens":8,"guided_choice":["yes","no","maybe"]`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, ts := newGuidedServer(b, nil)
			tokens, seed := 0, 0
			for b.Loop() {
				seed++
				body := fmt.Sprintf(`{"prompt":"the ","seed":%d,%s}`, seed, tc.fields)
				c := post(b, ts, body).completion(b)
				tokens += c.Usage.CompletionTokens
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}

// BenchmarkGuidedCompile measures compiling a request's format for its
// model, as each constrained request does once.
func BenchmarkGuidedCompile(b *testing.B) {
	s, _ := newGuidedServer(b, nil)
	for _, tc := range []struct {
		name, model, kind string
		src               []string
	}{
		{"regex", "lanternbay", "regex", []string{sentence}},
		{"choice", "lanternbay", "choice", []string{"yes", "no", "the lamp glows"}},
		{"grammar", "lanternbay", "grammar", []string{wordsGrammar}},
		{"json-schema", "json", "json-schema", []string{personSchema}},
		{"json-object", "json", "json-object", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := s.model(tc.model)
			b.ReportAllocs()
			for b.Loop() {
				if err := m.engine.constrain(&format{field: tc.kind, param: tc.kind, kind: tc.kind, src: tc.src}, m.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
