package server

// POST /v1/tokenize and GET /v1/tokenizers: a text's tokens under a
// model's tokenizer and GPT-2's, their spans, and the merge trees.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"example.org/minigpt/internal/bpe"
)

// tokenizeView mirrors POST /v1/tokenize's answer.
type tokenizeView struct {
	Object, Tokenizer, Model, Type, Description string
	VocabSize                                   int `json:"vocab_size"`
	Characters, Bytes                           int
	Tokens                                      []struct {
		ID         int
		Token      string
		Bytes      []int
		Start, End int
		TextOffset int `json:"text_offset"`
	}
	Nodes map[string]struct {
		Token             string
		Bytes             []int
		Left, Right, Rank *int
	}
}

func tokenizeOf(t *testing.T, url, body string) tokenizeView {
	t.Helper()
	r := do(t, "POST", url+"/v1/tokenize", body)
	var v tokenizeView
	if r.status != 200 || json.Unmarshal(r.body, &v) != nil {
		t.Fatalf("%s: %d %s", body, r.status, r.body)
	}
	return v
}

// TestTokenizeBPE: the model's own ids; spans that tile the text; each
// token's bytes, form and character; and merge trees whose every merge
// joins the bytes of its two parts, made before it, as the merges of an
// independent training on the same text are.
func TestTokenizeBPE(t *testing.T) {
	_, ts := newTestServer(t, withBPE)
	_, v := bpeServed()
	text := "the café’s keeper 🙂 walks\n"
	got := tokenizeOf(t, ts.URL, fmt.Sprintf(`{"model":"bpe","text":%q}`, text))
	ids, _ := v.Encode(text)
	if got.Object != "tokenization" || got.Tokenizer != "model" || got.Model != "bpe" || got.Type != "bpe" || got.VocabSize != 300 ||
		got.Description != v.String() || got.Bytes != len(text) || got.Characters != utf8.RuneCountInString(text) || len(got.Tokens) != len(ids) {
		t.Fatalf("%+v", got)
	}
	at := 0
	for i, tk := range got.Tokens {
		b := toBytes(tk.Bytes)
		if tk.ID != ids[i] || string(b) != v.Token(ids[i]) || !bytes.Equal(tokenBytes(t, tk.Token), b) || tk.Start != at || tk.End != at+len(b) {
			t.Errorf("token %d: %+v, want id %d %q at %d", i, tk, ids[i], v.Token(ids[i]), at)
		}
		if want := charAt([]byte(text), tk.Start); tk.TextOffset != want {
			t.Errorf("token %d at character %d, want %d", i, tk.TextOffset, want)
		}
		at += len(b)
	}
	if at != len(text) {
		t.Errorf("the tokens hold %d bytes of %d", at, len(text))
	}
	// NewBPEVocab learns from the first 90% of the text's characters: an
	// independent bpe.Train on them gives the merges the nodes show.
	runes := []rune(bpeText)
	ref, err := bpe.Train(context.Background(), string(runes[:len(runes)*9/10]), 300)
	if err != nil {
		t.Fatal(err)
	}
	merged := 0
	for key, n := range got.Nodes {
		var id int
		fmt.Sscan(key, &id)
		b := toBytes(n.Bytes)
		if string(b) != v.Token(id) || !bytes.Equal(tokenBytes(t, n.Token), b) {
			t.Errorf("node %d: %+v, token %q", id, n, v.Token(id))
		}
		if n.Left == nil {
			if len(b) != 1 || n.Right != nil || n.Rank != nil {
				t.Errorf("node %d without parts: %+v", id, n)
			}
			continue
		}
		merged++
		l, r := got.Nodes[fmt.Sprint(*n.Left)], got.Nodes[fmt.Sprint(*n.Right)]
		p, _ := ref.Parts(id)
		if *n.Left >= id || *n.Right >= id || *n.Rank != id-256 || string(toBytes(l.Bytes))+string(toBytes(r.Bytes)) != string(b) ||
			p != (bpe.Pair{Left: *n.Left, Right: *n.Right}) {
			t.Errorf("node %d %q: merge %d of %d and %d; independently %v", id, b, *n.Rank, *n.Left, *n.Right, p)
		}
	}
	for _, tk := range got.Tokens {
		if _, ok := got.Nodes[fmt.Sprint(tk.ID)]; !ok {
			t.Errorf("token %d has no node", tk.ID)
		}
	}
	if merged < 5 {
		t.Errorf("%d merged tokens in the trees: the case is not tested", merged)
	}
}

// TestTokenizeCharacters: a character model's tokens are the characters,
// with no trees; a character outside its vocabulary is refused by name.
func TestTokenizeCharacters(t *testing.T) {
	_, ts := newTestServer(t, nil)
	_, v := lanternBay()
	got := tokenizeOf(t, ts.URL, `{"text":"the lamp"}`)
	if got.Type != "char" || got.Model != "lanternbay" || got.VocabSize != 24 || len(got.Tokens) != 8 || got.Nodes != nil {
		t.Fatalf("%+v", got)
	}
	for i, tk := range got.Tokens {
		if c := "the lamp"[i : i+1]; tk.Token != c || v.Token(tk.ID) != c || tk.Start != i || tk.TextOffset != i {
			t.Errorf("token %d: %+v", i, tk)
		}
	}
	r := do(t, "POST", ts.URL+"/v1/tokenize", `{"text":"the Lamp"}`)
	if e := r.apiError(t).Error; r.status != 400 || *e.Code != "unknown_character" || !strings.Contains(e.Message, `'L'`) {
		t.Errorf("%d %s", r.status, r.body)
	}
	if got := tokenizeOf(t, ts.URL, `{"text":""}`); len(got.Tokens) != 0 || got.Characters != 0 {
		t.Errorf("empty text: %+v", got)
	}
}

// TestTokenizeGPT2: with Config.GPT2, GPT-2's ids for the files' merges,
// worked out by hand: " the" is 258, made of " t" (256) and "he" (257),
// themselves of GPT-2's byte ids for ' ' (220), 't' (83), 'h' (71) and
// 'e' (68); without it, a 400 that says how to turn it on.
func TestTokenizeGPT2(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.GPT2 = gpt2Files() })
	got := tokenizeOf(t, ts.URL, `{"tokenizer":"gpt2","text":" thethe\u00e9"}`)
	var ids []int
	for _, tk := range got.Tokens {
		ids = append(ids, tk.ID)
	}
	// One piece: " the", then 't' and "he"; é is two bytes, GPT-2's ids
	// for 0xc3 (106+0xc3-0xae = 127) and 0xa9 (94+0xa9-0xa1 = 102).
	if want := []int{258, 83, 257, 127, 102}; !slices.Equal(ids, want) || got.Type != "bpe" || got.Tokenizer != "gpt2" || got.Model != "" || got.VocabSize != 259 {
		t.Errorf("ids %v, want %v: %+v", ids, want, got)
	}
	want := map[string][3]int{"258": {256, 257, 2}, "256": {220, 83, 0}, "257": {71, 68, 1}}
	for id, w := range want {
		n, ok := got.Nodes[id]
		if !ok || n.Left == nil || *n.Left != w[0] || *n.Right != w[1] || *n.Rank != w[2] {
			t.Errorf("node %s: %+v, want parts %v", id, n, w)
		}
	}
	if n := got.Nodes["127"]; n.Token != `bytes:\xc3` || n.Left != nil {
		t.Errorf("node 127: %+v", n)
	}
	r := do(t, "GET", ts.URL+"/v1/tokenizers", "")
	if !strings.Contains(string(r.body), `"id":"gpt2"`) || !strings.Contains(string(r.body), `"vocab_size":259`) {
		t.Errorf("tokenizers: %s", r.body)
	}

	_, plain := newTestServer(t, nil)
	for _, tc := range []struct{ body, param, want string }{
		{`{"tokenizer":"gpt2","text":"a"}`, "tokenizer", "serve -gpt2 DIR"},
		{`{"tokenizer":"gpt4","text":"a"}`, "tokenizer", `tokenizer "gpt4" is not one of`},
		{`{"model":"lanternbay","tokenizer":"gpt2","text":"a"}`, "model", "leave it out"},
		{`{"model":"nope","text":"a"}`, "model", "does not exist"},
		{`{"text":"a","stride":1}`, "stride", "unknown parameter"},
		{`{"text":5}`, "text", "string"},
		{`{}`, "text", "text is required"},
	} {
		url := plain.URL
		if tc.param == "model" && strings.Contains(tc.body, "gpt2") {
			url = ts.URL
		}
		r := do(t, "POST", url+"/v1/tokenize", tc.body)
		e := r.apiError(t).Error
		if r.status/100 != 4 || e.Param == nil || *e.Param != tc.param || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %d %s", tc.body, r.status, r.body)
		}
	}
	if r := do(t, "GET", plain.URL+"/v1/tokenizers", ""); string(r.body) != `{"object":"list","data":[]}`+"\n" {
		t.Errorf("no GPT-2: %s", r.body)
	}
	// Damaged files are refused when the server is made.
	bad := gpt2Files()
	bad["vocab.bpe"].Data = []byte("#version: 0.2\nĠ x\n")
	m, v := lanternBay()
	if _, err := New(Config{Models: []Model{{Name: "a", Model: m, Vocab: v}}, GPT2: bad}); err == nil || !strings.Contains(err.Error(), "GPT-2") {
		t.Errorf("damaged GPT-2 files: %v", err)
	}
}

// TestTokenizeLimits: a text above MaxPromptChars, or whose tokens
// would take more than MaxResponseBytes, is refused.
func TestTokenizeLimits(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Limits.MaxPromptChars, c.Limits.MaxResponseBytes = 10, 600 })
	for body, want := range map[string]string{
		`{"text":"the lamp the lamp"}`: "above this server's limit of 10",
		`{"text":"the lamp t"}`:        "above this server's limit of 600 per response",
	} {
		r := do(t, "POST", ts.URL+"/v1/tokenize", body)
		if e := r.apiError(t).Error; r.status != 400 || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}
