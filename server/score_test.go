package server

// POST /v1/score and the trace's attention weights (trace_attention).

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
)

type scoreView struct {
	Object        string `json:"object"`
	Model         string `json:"model"`
	ContextLength int    `json:"context_length"`
	Stride        int    `json:"stride"`
	Summary       struct {
		Tokens      int     `json:"tokens"`
		Loss        float64 `json:"loss"`
		Perplexity  float64 `json:"perplexity"`
		BitsPerChar float64 `json:"bits_per_char"`
	} `json:"summary"`
	Tokens []struct {
		Pos     int     `json:"pos"`
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bits    float64 `json:"bits"`
		Context int     `json:"context"`
		Top     []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top"`
	} `json:"tokens"`
}

// TestScoreMatchesTheLibrary: every character's log-probability, context
// and top predictions are Model.Score's, the summary their mean, for
// several strides over a text longer than the block.
func TestScoreMatchesTheLibrary(t *testing.T) {
	_, ts := newTestServer(t, nil)
	m, vocab := lanternBay()
	text := string([]rune(minigpt.LanternBay)[:100])
	ids, _ := vocab.Encode(text)
	for _, stride := range []int{0, 1, 9, 32} {
		body, _ := json.Marshal(map[string]any{"text": text, "stride": stride, "top_n": 3})
		r := do(t, "POST", ts.URL+"/v1/score", string(body))
		var got scoreView
		if r.status != 200 || json.Unmarshal(r.body, &got) != nil {
			t.Fatalf("stride %d: %d %s", stride, r.status, r.body)
		}
		want, err := m.Score(context.Background(), ids, stride, 3)
		if err != nil {
			t.Fatal(err)
		}
		loss := 0.0
		for _, w := range want {
			loss -= w.Logprob
		}
		loss /= float64(len(want))
		sum := scoreSummaryJSON{len(want), loss, math.Exp(loss), loss / math.Ln2}
		wantStride := stride
		if stride == 0 {
			wantStride = 32
		}
		if got.Object != "score" || got.Model != "lanternbay" || got.ContextLength != 32 || got.Stride != wantStride ||
			got.Summary != sum || sum.Tokens != 99 {
			t.Errorf("stride %d: %+v, want %+v", stride, got.Summary, sum)
		}
		if len(got.Tokens) != len(want) {
			t.Fatalf("stride %d: %d tokens, want %d", stride, len(got.Tokens), len(want))
		}
		chars := vocab.Chars()
		for i, tk := range got.Tokens {
			w := want[i]
			if tk.Pos != w.Pos || tk.Token != string(chars[w.Chosen.ID]) || tk.Logprob != w.Logprob || tk.Context != w.Context || tk.Bits != -w.Logprob/math.Ln2 || len(tk.Top) != 3 {
				t.Fatalf("stride %d, token %d: %+v, want %+v", stride, i, tk, w)
			}
			for k, c := range tk.Top {
				if c.Token != string(chars[w.Top[k].ID]) || c.Logprob != w.Top[k].Logprob {
					t.Fatalf("stride %d, token %d, top %d: %+v, want %+v", stride, i, k, c, w.Top[k])
				}
			}
		}
	}
	// Without top_n, no top.
	r := do(t, "POST", ts.URL+"/v1/score", `{"text":"the lamp"}`)
	if strings.Contains(string(r.body), `"top"`) || r.status != 200 {
		t.Errorf("no top_n: %d %s", r.status, r.body)
	}
}

func TestScoreRefusals(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) {
		c.Limits.MaxPromptChars = 50
		c.Limits.MaxResponseBytes = 6000
		c.Limits.MaxInFlightBytes = 6000
	})
	for _, tc := range []struct {
		body   string
		status int
		param  string
		want   string
	}{
		{`{"text":"the lamp","temperature":1}`, 400, "temperature", `unknown parameter "temperature"`},
		{`{}`, 400, "text", "text is required"},
		{`{"text":3}`, 400, "text", "must be a string"},
		{`{"text":"t"}`, 400, "text", "text has 1 characters: scoring needs at least 2"},
		{`{"text":"` + strings.Repeat("a", 51) + `"}`, 400, "text", "limit of 50"},
		{`{"text":"the Lamp"}`, 400, "text", `'L' (U+004C) at character 4 (counting from 0)`},
		{`{"text":"the lamp","stride":33}`, 400, "stride", "[0, 32]"},
		{`{"text":"the lamp","stride":-1}`, 400, "stride", "[0, 32]"},
		{`{"text":"the lamp","top_n":21}`, 400, "top_n", "[0, 20]"},
		{`{"text":"the lamp","model":"gpt-4"}`, 404, "model", `model "gpt-4" does not exist`},
		{`{"text":"` + strings.Repeat("a", 50) + `","top_n":5}`, 400, "top_n", "limit of 6000 per request"},
	} {
		r := do(t, "POST", ts.URL+"/v1/score", tc.body)
		e := r.apiError(t)
		if r.status != tc.status || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%.50s: %d %s; want %d %q %q", tc.body, r.status, r.body, tc.status, tc.param, tc.want)
		}
	}
}

// TestTraceAttention: with trace_attention each traced step carries
// the attention weights of every layer and head over the characters the
// model saw, the library's own (Step.Attention from the same generation);
// streamed and whole alike.
func TestTraceAttention(t *testing.T) {
	s, ts := newTestServer(t, nil)
	m, vocab := lanternBay()
	c := m.Config()
	prompt := "the lamp keeper walks the harbour wall at "
	res, err := m.Complete(context.Background(), vocab, prompt, minigpt.GenerateOptions{
		MaxNewTokens: 20, Seed: 5, Temperature: 0.9, TraceTopN: 2, TraceAttention: true, Trace: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := res[0].Steps
	body := `{"prompt":"` + prompt + `","max_tokens":20,"seed":5,"temperature":0.9,"trace":2,"trace_attention":true}`
	whole := post(t, ts, body).completion(t)
	streamed := []traceJSON{}
	r := post(t, ts, strings.Replace(body, `{`, `{"stream":true,`, 1))
	for _, ev := range sseEvents(t, r.body) {
		if ev == "[DONE]" {
			break
		}
		var chunk completionJSON
		json.Unmarshal([]byte(ev), &chunk)
		for _, ch := range chunk.Choices {
			streamed = append(streamed, ch.Trace...)
		}
	}
	for name, trace := range map[string][]traceJSON{"whole": whole.Choices[0].Trace, "streamed": streamed} {
		if len(trace) != 20 {
			t.Fatalf("%s: %d steps", name, len(trace))
		}
		for i, tj := range trace {
			st := steps[i]
			if len(tj.Attention) != c.Layers || st.Context != min(len(prompt)+i, c.BlockSize) {
				t.Fatalf("%s step %d: %d layers, context %d", name, i, len(tj.Attention), st.Context)
			}
			for l := range c.Layers {
				for h := range c.Heads {
					row := tj.Attention[l][h]
					want := st.Attention[(l*c.Heads+h)*st.Context : (l*c.Heads+h+1)*st.Context]
					if len(row) != len(want) {
						t.Fatalf("%s step %d layer %d head %d: %d weights, want %d", name, i, l, h, len(row), len(want))
					}
					sum := 0.0
					for k := range row {
						if row[k] != want[k] {
							t.Fatalf("%s step %d layer %d head %d weight %d: %v, library %v", name, i, l, h, k, row[k], want[k])
						}
						sum += row[k]
					}
					if math.Abs(sum-1) > 1e-12 {
						t.Errorf("%s step %d layer %d head %d: weights sum to %v", name, i, l, h, sum)
					}
				}
			}
		}
	}
	// Without trace_attention none, and its size is counted.
	plain := post(t, ts, strings.Replace(body, `,"trace_attention":true`, "", 1)).completion(t)
	if plain.Choices[0].Trace[0].Attention != nil {
		t.Error("attention without trace_attention")
	}
	if with, without := sizeOf(t, s, body), sizeOf(t, s, strings.Replace(body, `,"trace_attention":true`, "", 1)); with-without < 20*int64(c.Layers*c.Heads*c.BlockSize)*floatBytes {
		t.Errorf("size with attention %d, without %d", with, without)
	}
	for b, want := range map[string]string{
		`{"prompt":"the ","trace_attention":true}`:            "give trace too",
		`{"prompt":"the ","trace":2,"trace_attention":"yes"}`: "true or false",
	} {
		if r := post(t, ts, b); r.status != 400 || *r.apiError(t).Error.Param != "trace_attention" || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s", b, r.status, r.body)
		}
	}
}

// TestScoreFieldsAsDocumented: the fields docs/serving.md lists for
// POST /v1/score are the ones the server takes, and each is accepted.
func TestScoreFieldsAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/serving.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`POST /v1/score` \\(an extension\\) takes `\\{([^}]*)\\}`").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/serving.md does not list the fields of POST /v1/score")
	}
	var listed []string
	for _, f := range strings.Split(string(m[1]), ",") {
		listed = append(listed, strings.Trim(strings.TrimSpace(f), `"`))
	}
	if !slices.Equal(listed, scoreFields) {
		t.Errorf("docs/serving.md lists %q, the server takes %q", listed, scoreFields)
	}
	_, ts := newTestServer(t, nil)
	if r := do(t, "POST", ts.URL+"/v1/score", `{"model":"lanternbay","text":"the lamp","stride":4,"top_n":2}`); r.status != 200 {
		t.Errorf("the documented fields: %d %s", r.status, r.body)
	}
}
