package main

// Every flag and environment variable of serve, checked on a running
// server.

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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// probe is a running server's URL and output, for a flag's check.
type probe struct {
	t *testing.T
	s *serving
}

// post sends a JSON body to /v1/completions with headers (name, value
// pairs; "Host" sets the request's host) and returns the status and body.
func (p probe) post(body string, header ...string) (int, string) {
	return p.do("POST", "/v1/completions", body, header...)
}

func (p probe) do(method, path, body string, header ...string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.s.url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b) + "\n" + fmt.Sprint(resp.Header)
}

// hold starts a long streaming generation and returns once it runs; it
// ends with the test.
func (p probe) hold() {
	p.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", p.s.url+"/v1/completions", strings.NewReader(`{"prompt":"the ","max_tokens":100000,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { resp.Body.Close() })
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		p.t.Fatalf("holding request: %q %v", line, err)
	}
}

// TestEveryFlagAndVariable starts cmd/serve with each flag (and the
// environment variable it reads) and checks the running server does what
// the flag says (issue 30: -queue 0 getting the default queue, and
// $MINIGPT_API_KEY being ignored, went unnoticed). Every flag of the flag
// set must have a row.
func TestEveryFlagAndVariable(t *testing.T) {
	dir := t.TempDir()
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: 3, BlockSize: 8, EmbedDim: 8, Heads: 2, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := minigpt.NewVocab("xyz")
	ckpt := filepath.Join(dir, "tiny.ckpt")
	if err := minigpt.SaveCheckpoint(ckpt, &minigpt.Checkpoint{Model: m, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	// Chat templates: each message's content twice; each followed by a
	// space.
	twice, spaced := filepath.Join(dir, "twice.tmpl"), filepath.Join(dir, "spaced.tmpl")
	os.WriteFile(twice, []byte("{{range .Messages}}{{.Content}}{{.Content}}{{end}}"), 0o644)
	os.WriteFile(spaced, []byte("{{range .Messages}}{{.Content}} {{end}}"), 0o644)
	expect := func(p probe, status int, got int, body string, contains ...string) {
		p.t.Helper()
		if got != status {
			p.t.Errorf("status %d, want %d: %.300s", got, status, body)
		}
		for _, c := range contains {
			if !strings.Contains(body, c) {
				p.t.Errorf("response lacks %q: %.300s", c, body)
			}
		}
	}
	rows := []struct {
		flag  string // or the environment variable
		args  []string
		env   map[string]string
		check func(p probe)
	}{
		{"addr", nil, nil, func(p probe) {
			if !strings.HasPrefix(p.s.url, "http://127.0.0.1:") {
				p.t.Errorf("listening on %s", p.s.url)
			}
		}},
		{"model", []string{"-model", ckpt, "-model", "named=" + ckpt}, nil, func(p probe) {
			// A bare path names the model after its file; name=path
			// names it.
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 200, st, body, `"id":"tiny"`, `"id":"named"`, `"id":"lanternbay"`)
			if strings.Index(body, `"tiny"`) > strings.Index(body, `"lanternbay"`) {
				p.t.Error("the -model checkpoint is not the first (default) model")
			}
			st, body = p.post(`{"prompt":"xy","max_tokens":4,"seed":1}`)
			expect(p, 200, st, body) // the default model is tiny: "the " would be refused
		}},
		{"chat-template", []string{"-model", ckpt, "-chat-template", twice, "-chat-template", "lanternbay=" + spaced}, nil, func(p probe) {
			// The bare file is every model's template but the one
			// named: the prompt's length shows which made it.
			st, body := p.do("POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}],"max_tokens":1}`)
			expect(p, 200, st, body, `"prompt_tokens":4,`) // "xxyy"
			st, body = p.do("POST", "/v1/chat/completions", `{"model":"lanternbay","messages":[{"role":"user","content":"the"},{"role":"user","content":"keeper"}],"max_tokens":1}`)
			expect(p, 200, st, body, `"prompt_tokens":11,`) // "the keeper "
		}},
		{"gpt2", []string{"-gpt2", writeGPT2(t, filepath.Join(dir, "gpt2"))}, nil, func(p probe) {
			// The fixture's merges make " the" one token, id 258.
			st, body := p.do("POST", "/v1/tokenize", `{"tokenizer":"gpt2","text":" the"}`)
			expect(p, 200, st, body, `"tokenizer":"gpt2"`, `"tokens":[{"id":258,"token":" the","bytes":[32,116,104,101],"start":0,"end":4,"text_offset":0}]`)
			st, body = p.do("GET", "/v1/tokenizers", "")
			expect(p, 200, st, body, `"id":"gpt2"`)
			if !strings.Contains(p.s.stdout.String(), "GPT-2's tokenizer") {
				p.t.Errorf("stdout does not mention GPT-2's tokenizer: %q", p.s.stdout)
			}
		}},
		{"api-key", []string{"-api-key", "k1"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 401, st, body)
			st, body = p.post(`{"prompt":"the ","max_tokens":1}`, "Authorization", "Bearer k1")
			expect(p, 200, st, body)
			if !strings.Contains(p.s.stdout.String(), "Authorization: Bearer") {
				p.t.Errorf("stdout does not mention the key: %q", p.s.stdout)
			}
		}},
		{"MINIGPT_API_KEY", nil, map[string]string{"MINIGPT_API_KEY": "k2"}, func(p probe) {
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 401, st, body)
			st, body = p.do("GET", "/v1/models", "", "Authorization", "Bearer k2")
			expect(p, 200, st, body)
		}},
		{"api-key over MINIGPT_API_KEY", []string{"-api-key", "flag"}, map[string]string{"MINIGPT_API_KEY": "env"}, func(p probe) {
			st, body := p.do("GET", "/v1/models", "", "Authorization", "Bearer env")
			expect(p, 401, st, body)
			st, body = p.do("GET", "/v1/models", "", "Authorization", "Bearer flag")
			expect(p, 200, st, body)
		}},
		{"cors-origin", []string{"-cors-origin", "https://app.example"}, nil, func(p probe) {
			st, body := p.do("GET", "/v1/models", "")
			expect(p, 200, st, body, "Access-Control-Allow-Origin:[https://app.example]")
		}},
		{"allowed-hosts", []string{"-allowed-hosts", "proxy.example, other.example"}, nil, func(p probe) {
			for _, h := range []string{"proxy.example", "other.example:8443"} {
				st, body := p.do("GET", "/v1/models", "", "Host", h)
				expect(p, 200, st, body)
			}
			st, body := p.do("GET", "/v1/models", "", "Host", "attacker.example")
			expect(p, 403, st, body, "host_not_allowed")
		}},
		{"slots", []string{"-slots", "3"}, nil, func(p probe) {
			st, body := p.do("GET", "/health", "")
			expect(p, 200, st, body, `"slots":3,`)
		}},
		{"queue", []string{"-queue", "0", "-slots", "1", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 429, st, body, "queue is full", "0 queued")
			if d := time.Since(start); d > time.Second {
				p.t.Errorf("-queue 0: 429 after %v, as if queued", d)
			}
			st, body = p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_queue_capacity 0\n")
		}},
		{"queue 2", []string{"-queue", "2"}, nil, func(p probe) {
			st, body := p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_queue_capacity 2\n")
		}},
		{"queue-timeout", []string{"-queue-timeout", "150ms", "-slots", "1", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 429, st, body, "timed out waiting")
			if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
				p.t.Errorf("429 after %v with -queue-timeout 150ms", d)
			}
		}},
		{"max-body", []string{"-max-body", "100"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"` + strings.Repeat("a", 100) + `"}`)
			expect(p, 413, st, body, "100 bytes")
		}},
		{"max-tokens", []string{"-max-tokens", "5"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":6}`)
			expect(p, 400, st, body, "[0, 5]")
		}},
		{"max-prompt", []string{"-max-prompt", "3"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1}`)
			expect(p, 400, st, body, "limit of 3")
		}},
		{"max-choices", []string{"-max-choices", "2"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":1,"n":3}`)
			expect(p, 400, st, body, "[1, 2]")
		}},
		{"max-response", []string{"-max-response", "5000"}, nil, func(p probe) {
			st, body := p.post(`{"prompt":"the ","max_tokens":100,"logprobs":5}`)
			expect(p, 400, st, body, "response_too_large", "limit of 5000")
		}},
		{"max-inflight", []string{"-max-inflight", "77777777"}, nil, func(p probe) {
			st, body := p.do("GET", "/metrics", "")
			expect(p, 200, st, body, "minigpt_inflight_budget_bytes 77777777\n")
		}},
		{"request-timeout", []string{"-request-timeout", "200ms", "-max-tokens", "1000000"}, nil, func(p probe) {
			start := time.Now()
			st, body := p.post(`{"prompt":"the ","max_tokens":1000000}`)
			expect(p, 200, st, body, `"finish_reason":"length"`)
			if d := time.Since(start); d > 5*time.Second {
				p.t.Errorf("-request-timeout 200ms: answered after %v", d)
			}
		}},
		{"write-timeout", []string{"-write-timeout", "200ms", "-slots", "1", "-queue", "0"}, nil, func(p probe) {
			c, err := net.Dial("tcp", strings.TrimPrefix(p.s.url, "http://"))
			if err != nil {
				p.t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			body := `{"prompt":"the ","max_tokens":4096,"logprobs":20,"stream":true}`
			fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			waitBusy(p.t, p.s.url, 1)
			waitBusy(p.t, p.s.url, 0) // the client never reads: it loses its slot
		}},
		{"drain-timeout", []string{"-drain-timeout", "200ms", "-max-tokens", "100000"}, nil, func(p probe) {
			p.hold()
			start := time.Now()
			if code := cli.ExitCode("serve", p.s.stop(p.t), io.Discard); code != cli.ExitInterrupted {
				p.t.Errorf("exit %d, want %d", code, cli.ExitInterrupted)
			}
			if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
				p.t.Errorf("stopped %v after the signal with -drain-timeout 200ms", d)
			}
		}},
		{"header-timeout", []string{"-header-timeout", "200ms"}, nil, func(p probe) {
			c, err := net.Dial("tcp", strings.TrimPrefix(p.s.url, "http://"))
			if err != nil {
				p.t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") // never ends its headers
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			io.Copy(io.Discard, c)
			if d := time.Since(start); d < 150*time.Millisecond || d > 4*time.Second {
				p.t.Errorf("connection closed %v after unfinished headers with -header-timeout 200ms", d)
			}
		}},
		{"training", []string{"-training"}, nil, func(p probe) {
			st, body := p.do("GET", "/v1/fine_tuning/jobs", "")
			expect(p, 200, st, body, `"object":"list"`)
			if !strings.Contains(p.s.stdout.String(), "training jobs are on") {
				p.t.Errorf("stdout does not mention training: %q", p.s.stdout)
			}
		}},
		{"train-dir", []string{"-training", "-train-dir", dir}, nil, func(p probe) {
			st, body := p.do("POST", "/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"file-lanternbay","suffix":"flag","hyperparameters":{"steps":2,"batch_size":2}}`)
			expect(p, 200, st, body, `"status":"`)
			id := jsonField(p.t, body, "id")
			waitFor(p.t, "the job to succeed", func() bool {
				_, body := p.do("GET", "/v1/fine_tuning/jobs/"+id, "")
				return strings.Contains(body, `"status":"succeeded"`)
			})
			files, _ := filepath.Glob(filepath.Join(dir, "ft-scratch-flag-*.ckpt"))
			if len(files) != 1 {
				p.t.Fatalf("-train-dir holds %v", files)
			}
			if _, err := minigpt.LoadCheckpoint(files[0]); err != nil {
				p.t.Error(err)
			}
		}},
		{"train-max-file", []string{"-training", "-train-max-file", "100"}, nil, func(p probe) {
			st, body := p.do("POST", "/v1/files", `{"purpose":"fine-tune","content":"`+strings.Repeat("a", 101)+`"}`)
			expect(p, 400, st, body, `"param":"content"`, "limit of 100 bytes")
		}},
		{"train-max-steps", []string{"-training", "-train-max-steps", "5"}, nil, func(p probe) {
			st, body := p.do("POST", "/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"steps":6}}`)
			expect(p, 400, st, body, "hyperparameters.steps", "[1, 5]")
		}},
		{"train-max-params", []string{"-training", "-train-max-params", "1000"}, nil, func(p probe) {
			st, body := p.do("POST", "/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"file-lanternbay"}`)
			expect(p, 400, st, body, "too_many_parameters", "limit of 1000")
		}},
		{"train-queue", []string{"-training", "-train-queue", "0"}, nil, func(p probe) {
			job := `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"steps":5000}}`
			st, body := p.do("POST", "/v1/fine_tuning/jobs", job)
			expect(p, 200, st, body)
			st, body = p.do("POST", "/v1/fine_tuning/jobs", job)
			expect(p, 429, st, body, "0 are waiting")
		}},
		{"log", []string{"-log"}, nil, func(p probe) {
			p.do("GET", "/health", "")
			waitFor(p.t, "the log line", func() bool { return strings.Contains(p.s.stderr.String(), "path=/health status=200") })
		}},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		name, _, _ := strings.Cut(row.flag, " ")
		covered[name] = true
		t.Run(row.flag, func(t *testing.T) {
			for k, v := range row.env {
				t.Setenv(k, v)
			}
			row.check(probe{t, startServe(t, row.args...)})
		})
	}
	var o options
	newFlagSet(&o).VisitAll(func(f *flag.Flag) {
		if !covered[f.Name] {
			t.Errorf("flag -%s has no row in this test", f.Name)
		}
	})
	if !covered["MINIGPT_API_KEY"] {
		t.Error("$MINIGPT_API_KEY has no row")
	}
}

// writeGPT2 writes, in directory dir, files in the form of GPT-2's
// encoder.json and vocab.bpe: the 256 bytes under GPT-2's ids (its
// byte-to-unicode table: the printable bytes '!'..'~', '¡'..'¬' and
// '®'..'ÿ' first, standing for themselves, then the others in byte order,
// standing for U+0100 on), and three merges, "Ġ t", "h e", "Ġt he", so
// that " the" is token 258. It returns dir.
func writeGPT2(t *testing.T, dir string) string {
	t.Helper()
	enc := map[string]int{}
	next, other := 0, rune(0x100)
	var others []int
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			enc[string(rune(b))] = next
			next++
		} else {
			others = append(others, b)
		}
	}
	for range others {
		enc[string(other)] = next
		next, other = next+1, other+1
	}
	enc["Ġt"], enc["he"], enc["Ġthe"] = 256, 257, 258
	j, _ := json.Marshal(enc)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "encoder.json"), j, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.bpe"), []byte("#version: 0.2\nĠ t\nh e\nĠt he\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonField returns the string field name of the JSON object at the start
// of body.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(strings.NewReader(body)).Decode(&m); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	v, _ := m[name].(string)
	return v
}
