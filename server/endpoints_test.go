package server

// The endpoints besides completions: models, health, metrics, the
// playground, mounting under a prefix, bad configs.

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt"
)

func TestModels(t *testing.T) {
	m, v := lanternBay()
	other, err := minigpt.NewModel(minigpt.Config{VocabSize: 3, BlockSize: 8, EmbedDim: 8, Heads: 2, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	abc, _ := minigpt.NewVocab("abc")
	_, ts := newTestServer(t, func(c *Config) {
		c.Models = []Model{{Name: "lanternbay", Model: m, Vocab: v}, {Name: "tiny", Model: other, Vocab: abc}}
	})
	list := do(t, "GET", ts.URL+"/v1/models", "").json(t)
	if list["object"] != "list" {
		t.Errorf("object %v", list["object"])
	}
	data := list["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("%d models", len(data))
	}
	lb := data[0].(map[string]any)
	if lb["id"] != "lanternbay" || lb["object"] != "model" || lb["owned_by"] != "minigpt" ||
		lb["context_length"] != 32.0 || lb["parameters"] != 104728.0 || len(lb["vocab"].([]any)) != 24 {
		t.Errorf("lanternbay: %v", lb)
	}
	one := do(t, "GET", ts.URL+"/v1/models/tiny", "").json(t)
	if one["id"] != "tiny" || strings.Join(toStrings(one["vocab"]), "") != "abc" {
		t.Errorf("tiny: %v", one)
	}
	// The two models differ, and so do their fingerprints.
	if lb["system_fingerprint"] == one["system_fingerprint"] {
		t.Error("two models share a fingerprint")
	}
	// A request naming the second model uses it (its vocabulary).
	if got := text(t, ts, `{"model":"tiny","prompt":"ab","max_tokens":10,"seed":1}`); strings.Trim(got, "abc") != "" || len(got) != 10 {
		t.Errorf("tiny model wrote %q", got)
	}
	if r := post(t, ts, `{"model":"tiny","prompt":"the "}`); r.status != 400 {
		t.Errorf("lanternbay prompt on the tiny model: %d", r.status)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestNewRefusesBadConfig(t *testing.T) {
	m, v := lanternBay()
	abc, _ := minigpt.NewVocab("abc")
	for name, cfg := range map[string]Config{
		"no models":      {},
		"empty name":     {Models: []Model{{Name: "", Model: m, Vocab: v}}},
		"slash in name":  {Models: []Model{{Name: "a/b", Model: m, Vocab: v}}},
		"no vocabulary":  {Models: []Model{{Name: "a", Model: m}}},
		"vocab mismatch": {Models: []Model{{Name: "a", Model: m, Vocab: abc}}},
		"duplicate":      {Models: []Model{{Name: "a", Model: m, Vocab: v}, {Name: "a", Model: m, Vocab: v}}},
		"negative limit": {Models: []Model{{Name: "a", Model: m, Vocab: v}}, Limits: Limits{Slots: -1}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestHealth(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.Slots = 3 })
	r := do(t, "GET", ts.URL+"/health", "")
	h := r.json(t)
	if r.status != 200 || h["status"] != "ok" || h["slots"] != 3.0 || h["busy"] != 0.0 || h["queued"] != 0.0 || len(h) != 4 {
		t.Errorf("health %d %v: docs/serving.md lists status, slots, busy and queued", r.status, h)
	}
}

// TestMetrics parses the exposition format line by line and checks the
// counters against the requests made.
func TestMetrics(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for range 3 {
		post(t, ts, `{"prompt":"the ","max_tokens":7}`)
	}
	post(t, ts, `{"prompt":"the ","temperature":-1}`)
	do(t, "GET", ts.URL+"/nowhere", "")
	r := do(t, "GET", ts.URL+"/metrics", "")
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	sample := regexp.MustCompile(`^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+$`)
	values := map[string]float64{}
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			typed[strings.Fields(line)[2]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		if !sample.MatchString(line) {
			t.Errorf("malformed line %q", line)
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, _ := strconv.ParseFloat(line[i+1:], 64)
		values[line[:i]] = v
	}
	for key, want := range map[string]float64{
		`minigpt_http_requests_total{path="/v1/completions",code="200"}`: 3,
		`minigpt_http_requests_total{path="/v1/completions",code="400"}`: 1,
		`minigpt_http_requests_total{path="other",code="404"}`:           1,
		`minigpt_generated_tokens_total{model="lanternbay"}`:             21,
		`minigpt_prompt_tokens_total{model="lanternbay"}`:                12,
		`minigpt_completion_duration_seconds_count`:                      4,
		`minigpt_completion_duration_seconds_bucket{le="+Inf"}`:          4,
		`minigpt_queue_depth`: 0,
		`minigpt_slots_busy`:  0,
	} {
		if got, ok := values[key]; !ok || got != want {
			t.Errorf("%s = %v (present %t), want %v", key, got, ok, want)
		}
	}
	for _, name := range []string{"minigpt_http_requests_total", "minigpt_completion_duration_seconds", "minigpt_queue_depth", "minigpt_generated_tokens_total"} {
		if !typed[name] {
			t.Errorf("no # TYPE for %s", name)
		}
	}
	// Buckets are cumulative.
	prev := 0.0
	for _, le := range append(latencyBuckets, 0) {
		key := `minigpt_completion_duration_seconds_bucket{le="` + strconv.FormatFloat(le, 'g', -1, 64) + `"}`
		if le == 0 {
			key = `minigpt_completion_duration_seconds_bucket{le="+Inf"}`
		}
		if values[key] < prev {
			t.Errorf("%s = %v below the previous bucket %v", key, values[key], prev)
		}
		prev = values[key]
	}
}

func TestPlayground(t *testing.T) {
	_, ts := newTestServer(t, nil)
	r := do(t, "GET", ts.URL+"/", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %v", r.status, r.header)
	}
	csp := r.header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	page := string(r.body)
	// Nothing external, nothing inline that the CSP would block.
	for _, bad := range []string{"http://", "https://", "<style", "onclick=", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(m, `src="playground/`) {
			t.Errorf("inline or external script %q", m)
		}
	}
	scripts := regexp.MustCompile(`<script src="playground/([a-z]+\.js)"`).FindAllStringSubmatch(page, -1)
	if len(scripts) < 5 {
		t.Errorf("the page loads %d scripts, want the five of the playground", len(scripts))
	}
	files := []string{"style.css"}
	for _, m := range scripts {
		files = append(files, m[1])
	}
	for _, f := range files {
		r := do(t, "GET", ts.URL+"/playground/"+f, "")
		if r.status != 200 || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d", f, r.status)
		}
		if strings.HasSuffix(f, ".js") && (strings.Contains(string(r.body), ".innerHTML") || strings.Contains(string(r.body), "http://") || strings.Contains(string(r.body), "https://")) {
			t.Errorf("%s uses innerHTML or names an external URL", f)
		}
	}
}

// TestMountUnderPrefix: a program can mount the server in its own mux.
func TestMountUnderPrefix(t *testing.T) {
	s, _ := newTestServer(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/minigpt/", http.StripPrefix("/minigpt", s))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("host app")) })
	ts := httptest.NewServer(mux)
	defer ts.Close()
	if got := do(t, "GET", ts.URL+"/", "").body; string(got) != "host app" {
		t.Errorf("host route: %q", got)
	}
	r := do(t, "POST", ts.URL+"/minigpt/v1/completions", `{"prompt":"the ","max_tokens":5,"temperature":0}`)
	if c := r.completion(t); c.Choices[0].Text != "boats" {
		t.Errorf("mounted completion %q", c.Choices[0].Text)
	}
	if r := do(t, "GET", ts.URL+"/minigpt/", ""); r.status != 200 || !strings.Contains(string(r.body), "playground/app.js") {
		t.Errorf("mounted playground: %d", r.status)
	}
}
