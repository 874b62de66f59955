package server

// The output's format with the rest of the server: batched beside free
// requests, streamed, cut short (format_incomplete), traced, and its
// fields fuzzed.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// guidedJobs are constrained requests of every kind beside free ones,
// streamed or not, with n, beams, logprobs, the trace, echo, stop
// strings, two prompts and both models.
func guidedJobs() []servingJob {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	formats := []string{
		`"guided_regex":` + q(sentence),
		`"guided_choice":["yes","no","the lamp glows"]`,
		`"grammar":` + q(wordsGrammar),
		`"response_format":{"type":"regex","regex":` + q(words) + `}`,
		``, // free
		`"model":"json","prompt":" ","guided_json":` + personSchema,
		`"model":"json","prompt":" ","response_format":{"type":"json_object"}`,
		`"model":"json","prompt":" "`, // free, on the other model
	}
	knobs := []string{
		`"n":3,"temperature":1.4`, `"temperature":0`, `"num_beams":3,"n":2`,
		`"n":2,"logprobs":3,"top_p":0.9`, `"trace":4`, `"echo":true,"stop":["o"]`, `"prompt":["the ","a "],"n":2,"top_k":4`,
	}
	var jobs []servingJob
	for i, f := range formats {
		for j, k := range knobs {
			fields := []string{`"prompt":"the "`, `"max_tokens":120`, fmt.Sprintf(`"seed":%d`, i*10+j), k}
			if f != "" {
				fields = append(fields, f)
			}
			// Later fields win in a JSON object: drop the earlier prompt.
			if strings.Count(strings.Join(fields, ","), `"prompt":`) > 1 {
				fields = fields[1:]
			}
			stream := (i+j)%2 == 0
			if stream {
				fields = append(fields, `"stream":true`)
			}
			jobs = append(jobs, servingJob{body: "{" + strings.Join(fields, ",") + "}", stream: stream, delay: time.Duration(j) * 3 * time.Millisecond})
		}
	}
	return jobs
}

// TestGuidedBatchedMatchesAlone: constrained requests arriving among free
// ones into the running batches give, byte for byte, the responses each
// gets alone, at several batch sizes.
func TestGuidedBatchedMatchesAlone(t *testing.T) {
	jobs := guidedJobs()
	limits := func(c *Config) {
		c.Limits.Queue, c.Limits.QueueTimeout = len(jobs), time.Minute
	}
	ref, refTS := newGuidedServer(t, func(c *Config) { limits(c); c.Limits.Slots = 8 })
	for _, m := range ref.models {
		m.engine.alone = true
	}
	want := make([]string, len(jobs))
	for i, j := range jobs {
		status, body, err := serve(context.Background(), refTS.URL, j)
		if err != nil || status != 200 {
			t.Fatalf("job %d alone: %d %v %s\n%s", i, status, err, body, j.body)
		}
		want[i] = body
	}
	rowsList := []int{6, 32}
	if testing.Short() {
		rowsList = rowsList[1:]
	}
	for _, rows := range rowsList {
		_, ts := newGuidedServer(t, func(c *Config) { limits(c); c.Limits.Slots = rows })
		got, errs := serveTogether(ts.URL, jobs)
		for i, j := range jobs {
			switch {
			case errs[i] != nil:
				t.Errorf("rows %d, job %d %s: %v", rows, i, j.body, errs[i])
			case got[i] != want[i]:
				t.Errorf("rows %d, job %d %s: batched\n%s\nalone\n%s", rows, i, j.body, got[i], want[i])
			}
		}
	}
}

// TestGuidedStreamMatchesWhole: a constrained request streamed gives the
// text, finish reasons and format_incomplete of the same request whole,
// on both routes.
func TestGuidedStreamMatchesWhole(t *testing.T) {
	_, ts := newGuidedServer(t, nil)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, fields := range []string{
		`"guided_regex":` + q(sentence) + `,"n":4,"temperature":1.7`,
		`"guided_regex":` + q(sentence) + `,"n":4,"stop":["glow","dri"]`, // some cut short
		`"guided_choice":["yes","no"],"num_beams":2,"n":2`,
		`"guided_grammar":` + q(wordsGrammar) + `,"n":3,"logprobs":2`,
		`"model":"json","guided_json":` + personSchema + `,"n":3,"stop":["true"]`,
		`"model":"json","response_format":{"type":"json_object"},"n":2,"top_k":6`,
	} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			content := "the "
			if strings.Contains(fields, `"model":"json"`) {
				content = " "
			}
			prompt := fmt.Sprintf(`"prompt":%q`, content)
			if path != "/v1/completions" {
				prompt = fmt.Sprintf(`"messages":[{"role":"user","content":%q}]`, content)
				fields = strings.Replace(fields, `"logprobs":2`, `"logprobs":true,"top_logprobs":2`, 1)
			}
			body := fmt.Sprintf(`{%s,"max_tokens":100,"seed":5,%s}`, prompt, fields)
			whole := outcomes(t, ts, path, body)
			streamed := outcomes(t, ts, path, strings.Replace(body, "{", `{"stream":true,`, 1))
			if !slices.Equal(whole, streamed) {
				t.Errorf("%s %s:\nwhole    %+v\nstreamed %+v", path, body, whole, streamed)
			}
		}
	}
}

// TestGuidedFormatIncomplete: a text that a stop string or the request's
// time cuts short of its format says so with "format_incomplete": true,
// in its choice and on its stream's last chunk; a whole match, and a
// free request, carry no such field.
func TestGuidedFormatIncomplete(t *testing.T) {
	_, ts := newGuidedServer(t, nil)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	field := regexp.MustCompile(`"format_incomplete":[a-z]+`)
	check := func(ts *httptest.Server, path, body string, want []outcome) {
		t.Helper()
		for _, stream := range []bool{false, true} {
			b := body
			if stream {
				b = strings.Replace(body, "{", `{"stream":true,`, 1)
			}
			got := outcomes(t, ts, path, b)
			raw := do(t, "POST", ts.URL+path, b).body
			n := 0
			for _, o := range want {
				if o.incomplete {
					n++
				}
			}
			if fields := field.FindAll(raw, -1); len(fields) != n {
				t.Errorf("%s %s: %d format_incomplete fields, want %d:\n%s", path, b, len(fields), n, raw)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s:\ngot  %+v\nwant %+v", path, b, got, want)
			}
		}
	}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		prompt := `"prompt":"the "`
		if path != "/v1/completions" {
			prompt = `"messages":[{"role":"user","content":"the "}]`
		}
		// The format's text begins "the ": that stop string cuts it at once.
		check(ts, path, `{`+prompt+`,"max_tokens":40,"guided_regex":`+q(sentence)+`,"stop":["the "]}`, []outcome{{"", "stop", true}})
		check(ts, path, `{`+prompt+`,"max_tokens":40,"guided_choice":["the lamp glows"],"stop":["x"]}`, []outcome{{"the lamp glows", "stop", false}})
		check(ts, path, `{`+prompt+`,"max_tokens":40,"guided_choice":["the lamp glows","the lamp"],"stop":["glow"],"n":2,"temperature":0}`, []outcome{{"the lamp ", "stop", true}, {"the lamp ", "stop", true}})
		check(ts, path, `{`+prompt+`,"max_tokens":40,"guided_choice":["the lamp glows","the lamp"],"stop":[" glow"],"temperature":0}`, []outcome{{"the lamp", "stop", false}})
		check(ts, path, `{`+prompt+`,"max_tokens":12,"temperature":0,"stop":["e"]}`, []outcome{{"boats com", "stop", false}})
	}

	// Cut by the request's time: the long format falls short; one whose
	// every prefix is a whole match does not, nor does a free request.
	_, slow := newGuidedServer(t, func(c *Config) { c.Limits.RequestTimeout = 100 * time.Millisecond })
	for _, tc := range []struct {
		fields     string
		incomplete bool
	}{
		{`"guided_regex":"[a-z ]{1000}[a-z ]{1000}[a-z ]{1000}"`, true},
		{`"guided_regex":"[a-z ]{1000}[a-z ]{1000}[a-z ]{1000}","logprobs":1`, true},
		{`"guided_regex":"[a-z ]{0,1000}[a-z ]{0,1000}[a-z ]{0,1000}"`, false},
		{``, false},
	} {
		for _, stream := range []string{`"stream":false`, `"stream":true`} {
			body := `{"prompt":"the ","max_tokens":3000,` + stream + `,` + tc.fields + `}`
			body = strings.Replace(body, ",}", "}", 1)
			got := outcomes(t, slow, "/v1/completions", body)
			if len(got) != 1 || got[0].finish != "length" || got[0].incomplete != tc.incomplete || len(got[0].text) >= 3000 {
				t.Errorf("%s: %+v, want a text cut at finish length, incomplete %v", body, got, tc.incomplete)
			}
		}
	}
}

// TestGuidedTrace: the trace lists the grammar stage right after raw,
// and every candidate the format forbids is cut by it, with probability
// 0 from there on; the chosen one is always allowed.
func TestGuidedTrace(t *testing.T) {
	_, ts := newGuidedServer(t, nil)
	_, vocab := lanternBay()
	c := post(t, ts, fmt.Sprintf(`{"prompt":"the ","max_tokens":12,"guided_regex":"[aeiou]+","trace":%d,"temperature":0.8,"top_k":3,"seed":4}`, vocab.Size())).completion(t)
	steps := c.Choices[0].Trace
	if len(steps) == 0 || strings.Trim(c.Choices[0].Text, "aeiou") != "" {
		t.Fatalf("text %q, %d steps", c.Choices[0].Text, len(steps))
	}
	for i, st := range steps {
		if !slices.Equal(st.Stages, []string{"raw", "grammar", "temperature", "top-k"}) {
			t.Fatalf("step %d: stages %v", i, st.Stages)
		}
		if len(st.Candidates) != vocab.Size() {
			t.Fatalf("step %d: %d candidates, want the whole vocabulary", i, len(st.Candidates))
		}
		for _, cand := range st.Candidates {
			vowel := strings.Contains("aeiou", cand.Token)
			switch {
			case vowel && cand.CutBy == "grammar", !vowel && cand.CutBy != "grammar":
				t.Errorf("step %d: %q cut by %q", i, cand.Token, cand.CutBy)
			case !vowel && (cand.Probs[1] != 0 || cand.Probs[3] != 0):
				t.Errorf("step %d: forbidden %q keeps probabilities %v", i, cand.Token, cand.Probs)
			case cand.Chosen && !vowel:
				t.Errorf("step %d: chose %q", i, cand.Token)
			}
		}
	}
}

// FuzzGuidedFields feeds arbitrary values to the format fields: the
// server never panics, answers a completion or a 400 that names the
// field (or max_tokens), and a pattern or a list of choices it accepts
// is obeyed: the text matches Go's regexp, anchored, or is a choice.
func FuzzGuidedFields(f *testing.F) {
	for _, seed := range []struct {
		field uint8
		value string
	}{
		{0, `"the (lamp|boat)"`}, {0, `"(a|b)*a(a|b){5}"`}, {0, `"[^a-z]"`}, {0, `"\\p{Greek}+"`}, {0, `"x{2000}{2000}"`},
		{1, `["yes","no"]`}, {1, `[""]`}, {1, `["a",null]`},
		{2, `"root ::= \"a\" root | \"b\""`}, {2, `"root ::= (\"a\"*)*"`},
		{3, `{"type":"object"}`}, {3, `"{\"enum\":[\"a\"]}"`}, {3, `[{"type":"string"}]`},
		{5, `{"type":"array","items":{"type":"number"}}`},
		{6, `{"type":"regex","regex":"[ab]+"}`}, {6, `{"type":"json_schema","json_schema":{"name":"x","schema":{"const":1}}}`}, {6, `{"type":"text"}`},
		{7, `null`},
	} {
		f.Add(seed.field, seed.value)
	}
	m, v := lanternBay()
	s, err := New(Config{Models: []Model{{Name: "lanternbay", Model: m, Vocab: v}}, Limits: Limits{MaxTokens: 8, MaxBodyBytes: 4096}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		name := formatFields[int(field)%len(formatFields)]
		if !json.Valid([]byte(value)) {
			b, _ := json.Marshal(value)
			value = string(b)
		}
		body := fmt.Sprintf(`{"prompt":"the ","max_tokens":8,%q:%s}`, name, value)
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(w, r)
		switch w.Code {
		case 200:
			var c completionJSON
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("200 with body %q for %s", w.Body, body)
			}
			text := c.Choices[0].Text
			var re string
			var choices []string
			switch {
			case name == "guided_regex" && strings.HasPrefix(strings.TrimSpace(value), `"`) && json.Unmarshal([]byte(value), &re) == nil:
				if oracle, err := regexp.Compile(`^(?:` + re + `)$`); err == nil && !oracle.MatchString(text) {
					t.Fatalf("%s: %q does not match", body, text)
				}
			case name == "guided_choice" && strings.HasPrefix(strings.TrimSpace(value), "[") && json.Unmarshal([]byte(value), &choices) == nil:
				if !slices.Contains(choices, text) {
					t.Fatalf("%s: %q is no choice", body, text)
				}
			}
		case 400, 413:
			var e errorJSON
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("%d with body %q for %s", w.Code, w.Body, body)
			}
			malformed := e.Error.Code != nil && *e.Error.Code == "invalid_json" // the body itself
			if p := e.Error.Param; w.Code == 400 && !malformed && (p == nil || !(strings.HasPrefix(*p, name) || *p == "max_tokens")) {
				t.Fatalf("%s: 400 naming %v: %s", body, p, e.Error.Message)
			}
		default:
			t.Fatalf("status %d for %s: %s", w.Code, body, w.Body)
		}
	})
}

// TestGuidedCompileTurns: compiles wait for a free compiler, and a
// request that waits past QueueTimeout gets 429, while a free request
// runs; a format is charged formatTokenBytes a token of every row in
// flight, within the engine's cache cap.
func TestGuidedCompileTurns(t *testing.T) {
	s, ts := newGuidedServer(t, func(c *Config) { c.Limits.QueueTimeout = 50 * time.Millisecond })
	for range cap(s.compiling) {
		s.compiling <- struct{}{}
	}
	const guided = `{"prompt":"the ","max_tokens":5,"guided_choice":["yes","no"]}`
	if r := post(t, ts, guided); r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.apiError(t).Error.Message, "constraint compiler") {
		t.Errorf("with every compiler busy: %d %s", r.status, r.body)
	}
	if r := post(t, ts, `{"prompt":"the ","max_tokens":5}`); r.status != 200 {
		t.Errorf("a free request with every compiler busy: %d %s", r.status, r.body)
	}
	for range cap(s.compiling) {
		<-s.compiling
	}
	if got := outcomes(t, ts, "/v1/completions", guided); got[0].finish != "stop" {
		t.Errorf("with the compilers free: %+v", got)
	}

	free := chargeOf(t, s, `{"prompt":["the ","a "],"n":3,"max_tokens":99}`)
	held := chargeOf(t, s, `{"prompt":["the ","a "],"n":3,"max_tokens":99,"guided_regex":"[a-z ]+"}`)
	// 2 prompts × 3 rows × 100 tokens × 1 KiB, and the choices' 25 bytes of format_incomplete.
	if held-free != 2*3*100*1024+6*25 {
		t.Errorf("a format adds %d bytes to the request's charge, want %d", held-free, 2*3*100*1024+6*25)
	}
	if capped := chargeOf(t, s, `{"prompt":"the ","n":16,"max_tokens":4096,"guided_regex":"[a-z ]+"}`) - chargeOf(t, s, `{"prompt":"the ","n":16,"max_tokens":4096}`); capped != 64<<20+16*25 {
		t.Errorf("a long format adds %d bytes, want the cache cap of 64 MiB and 16 × 25", capped)
	}
}
