package server

// promises_test.go guards documented promises of docs/serving.md and the
// package documentation that no other test held (docs/testing.md lists
// them with the rest).

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestServingDocCurlExample sends docs/serving.md's curl request and
// wants the answer it shows, field for field (the id's random part and
// the creation time aside): the text cmd/generate prints, the seed at
// the top and in the choice, the usage and the fingerprint.
func TestServingDocCurlExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/serving.md")
	if err != nil {
		t.Fatal(err)
	}
	_, curl, _ := strings.Cut(string(doc), "### curl")
	_, req, ok1 := strings.Cut(curl, "-d '")
	req, _, ok2 := strings.Cut(req, "'")
	_, answer, ok3 := strings.Cut(curl, "```json\n")
	answer, _, ok4 := strings.Cut(answer, "\n```")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatal("docs/serving.md's curl example has no request body or no JSON answer")
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(strings.Replace(answer, `"created":…`, `"created":0`, 1)), &want); err != nil {
		t.Fatalf("the documented answer is not JSON once its creation time is a number: %v\n%s", err, answer)
	}
	_, ts := newTestServer(t, nil)
	r := post(t, ts, req)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	got := r.json(t)
	if id, _ := got["id"].(string); !strings.HasPrefix(id, "cmpl-") || want["id"] != "cmpl-…" {
		t.Errorf("id %q, want cmpl- and random digits (the docs show %q)", id, want["id"])
	}
	if c, ok := got["created"].(float64); !ok || c <= 0 {
		t.Errorf("created %v, want a Unix time", got["created"])
	}
	got["id"], got["created"] = want["id"], want["created"]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the answer\n%s\nis not the documented one\n%s", r.body, answer)
	}
	if h := r.header.Get("Minigpt-Seed"); h != "42" {
		t.Errorf("Minigpt-Seed %q, want the request's seed 42", h)
	}
}

// TestFingerprintHashesWeights: "system_fingerprint hashes the weights
// and vocabulary": a model differing in one weight gets another, the same
// weights the same.
func TestFingerprintHashesWeights(t *testing.T) {
	m, v := lanternBay()
	same, other := m.Clone(), m.Clone()
	p := other.Params()
	p[len(p)-1] += 1e-9
	s, err := New(Config{Models: []Model{{Name: "a", Model: m, Vocab: v}, {Name: "b", Model: same, Vocab: v}, {Name: "c", Model: other, Vocab: v}}})
	if err != nil {
		t.Fatal(err)
	}
	fp := map[string]string{}
	for _, sm := range s.models {
		fp[sm.name] = sm.fingerprint
	}
	if fp["a"] != fp["b"] || fp["a"] == fp["c"] || !strings.HasPrefix(fp["a"], "fp_") {
		t.Errorf("fingerprints %v: want a = b (the same weights) and c different", fp)
	}
}

// TestTraceNeedsOneChoice: "trace | … (one choice only)": two prompts
// with n 1 are refused as n 2 is, naming trace; a one-prompt array is
// one choice.
func TestTraceNeedsOneChoice(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, body := range []string{`{"prompt":["the ","a "],"trace":3,"max_tokens":2}`, `{"prompt":"the ","n":2,"trace":3,"max_tokens":2}`} {
		r := post(t, ts, body)
		if e := r.apiError(t).Error; r.status != 400 || e.Param == nil || *e.Param != "trace" {
			t.Errorf("%s: status %d, %s; want a 400 naming trace", body, r.status, r.body)
		}
	}
	if r := post(t, ts, `{"prompt":["the "],"trace":3,"max_tokens":2}`); r.status != 200 {
		t.Errorf("one prompt in an array with trace: status %d: %s", r.status, r.body)
	}
}

// TestChatCapsMustAgree: "max_completion_tokens, max_tokens | … the same
// cap (both only with the same value)": either order of two different
// values is a 400, the same value twice is the cap.
func TestChatCapsMustAgree(t *testing.T) {
	_, ts := newTestServer(t, nil)
	const user = `"messages":[{"role":"user","content":"the "}]`
	for _, caps := range []string{`"max_tokens":6,"max_completion_tokens":5`, `"max_tokens":5,"max_completion_tokens":6`} {
		r := do(t, "POST", ts.URL+"/v1/chat/completions", "{"+user+","+caps+"}")
		if r.status != 400 || !strings.Contains(string(r.body), "differ") {
			t.Errorf("%s: status %d, %s; want a 400 saying they differ", caps, r.status, r.body)
		}
	}
	r := do(t, "POST", ts.URL+"/v1/chat/completions", "{"+user+`,"max_tokens":5,"max_completion_tokens":5}`)
	if r.status != 200 || r.json(t)["usage"].(map[string]any)["completion_tokens"] != 5.0 {
		t.Errorf("the same cap twice: status %d, %s; want 5 tokens", r.status, r.body)
	}
}
