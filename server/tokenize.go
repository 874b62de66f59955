package server

// This file owns POST /v1/tokenize, an extension for the playground's
// Tokenize tab: a text's tokens under a model's tokenizer or GPT-2's,
// with their ids, bytes, byte spans and characters, and for BPE every
// token of their merge trees; GET /v1/tokenizers, the tokenizers it
// offers beside the models'; and GPT-2's tokenizer, read from
// Config.GPT2.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"example.org/minigpt/internal/bpe"
	"example.org/minigpt/server/internal/api"
)

// GPT-2's published tokenizer files, as Config.GPT2 holds them.
const (
	gpt2Encoder = "encoder.json"
	gpt2Merges  = "vocab.bpe"
)

// loadGPT2 reads GPT-2's tokenizer from fsys.
func loadGPT2(fsys fs.FS) (*bpe.Tokenizer, error) {
	enc, err := fsys.Open(gpt2Encoder)
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	merges, err := fsys.Open(gpt2Merges)
	if err != nil {
		return nil, err
	}
	defer merges.Close()
	return bpe.LoadGPT2(enc, merges)
}

// tokenizeFields are the fields POST /v1/tokenize accepts.
var tokenizeFields = []string{"model", "text", "tokenizer"}

// The tokenizers a request may ask for.
const (
	tokenizerModel = "model" // the model's own (the default)
	tokenizerGPT2  = "gpt2"  // GPT-2's, with Config.GPT2
)

// tokenizeJSON is POST /v1/tokenize's answer.
type tokenizeJSON struct {
	Object      string          `json:"object"`          // "tokenization"
	Tokenizer   string          `json:"tokenizer"`       // "model" or "gpt2"
	Model       string          `json:"model,omitempty"` // the model whose tokenizer it is
	Type        string          `json:"type"`            // "char" or "bpe"
	Description string          `json:"description"`     // "24 characters", "byte-level BPE, 512 tokens (256 merges)"
	VocabSize   int             `json:"vocab_size"`
	Characters  int             `json:"characters"` // the text's
	Bytes       int             `json:"bytes"`      // its UTF-8 bytes
	Tokens      []tokenizedJSON `json:"tokens"`
	// Nodes holds every token of the merge trees of Tokens, by id: for a
	// BPE tokenizer whose merges the server has, each merged token with
	// the two it joins (Left, then Right, both made before it), down to
	// single bytes. Absent for characters.
	Nodes map[int]nodeJSON `json:"nodes,omitempty"`
}

// tokenizedJSON is one token of the text: its id, its form (as logprobs
// write it), its bytes, where they are in the text's UTF-8 (Start to End)
// and the character they begin in.
type tokenizedJSON struct {
	ID         int             `json:"id"`
	Token      string          `json:"token"`
	Bytes      json.RawMessage `json:"bytes"`
	Start      int             `json:"start"`
	End        int             `json:"end"`
	TextOffset int             `json:"text_offset"`
}

// nodeJSON is a token of a merge tree: a byte (no parts), or the merge of
// rank Rank (it is merge number Rank, counted from 0, of those the
// tokenizer applies in order) joining Left and Right.
type nodeJSON struct {
	Token string          `json:"token"`
	Bytes json.RawMessage `json:"bytes"`
	Left  *int            `json:"left,omitempty"`
	Right *int            `json:"right,omitempty"`
	Rank  *int            `json:"rank,omitempty"`
}

// serveTokenize answers POST /v1/tokenize.
func (s *Server) serveTokenize(w http.ResponseWriter, r *http.Request) {
	f, aerr := api.ReadObject(w, r, s.limits.MaxBodyBytes, tokenizeFields, "POST /v1/tokenize accepts "+strings.Join(tokenizeFields, ", "))
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	out, aerr := s.tokenize(f)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	b, _ := json.Marshal(out)
	if int64(len(b)) > s.limits.MaxResponseBytes {
		api.WriteError(w, api.BadParam("text", "response_too_large", "the tokens of this text take %d bytes, above this server's limit of %d per response: send a shorter text", len(b), s.limits.MaxResponseBytes))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// tokenize reads and answers a tokenize request.
func (s *Server) tokenize(f api.Fields) (*tokenizeJSON, *api.Error) {
	raw, ok := f["text"]
	if !ok || api.IsNull(raw) {
		return nil, api.BadParam("text", "missing_parameter", "text is required: the text to split into tokens")
	}
	var text string
	if err := f.Str("text", &text); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(text); n > s.limits.MaxPromptChars {
		return nil, api.BadParam("text", "invalid_value", "text has %d characters, above this server's limit of %d", n, s.limits.MaxPromptChars)
	}
	which := tokenizerModel
	if err := f.Str("tokenizer", &which); err != nil {
		return nil, err
	}
	out := &tokenizeJSON{Object: "tokenization", Tokenizer: which, Characters: countChars(text), Bytes: len(text)}
	var ids []int
	var token func(int) string
	var merges *bpe.Tokenizer
	switch which {
	case "", tokenizerModel:
		out.Tokenizer = tokenizerModel
		m, aerr := s.requestModel(f)
		if aerr != nil {
			return nil, aerr
		}
		vc := m.vocab
		out.Model, out.Type, out.Description, out.VocabSize = m.name, vc.kind, vc.describe, vc.size()
		var err error
		if ids, err = m.engine.encode(text); err != nil {
			return nil, api.BadParam("text", "unknown_character", "text: %v (model %s knows only %q)", err, m.name, vc.chars)
		}
		token = func(id int) string { return vc.tokens[id] }
		merges = vc.merges
	case tokenizerGPT2:
		if f.Has("model") {
			return nil, api.BadParam("model", "invalid_value", "model names whose tokenizer to use: with tokenizer %q, leave it out", tokenizerGPT2)
		}
		if s.gpt2 == nil {
			return nil, api.BadParam("tokenizer", "unsupported_tokenizer", "this server has no GPT-2 tokenizer: serve -gpt2 DIR loads it from GPT-2's encoder.json and vocab.bpe")
		}
		out.Type, out.Description, out.VocabSize = kindBPE, "GPT-2's "+s.gpt2.String(), s.gpt2.VocabSize()
		ids, token, merges = s.gpt2.Encode(text), s.gpt2.Token, s.gpt2
	default:
		return nil, api.BadParam("tokenizer", "invalid_value", "tokenizer %q is not one of %q (the model's) and %q (GPT-2's)", which, tokenizerModel, tokenizerGPT2)
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		tokens = append(tokens, token(id))
	}
	// charOffsets indexes tokens by id: give it the tokens in order instead.
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	offsets := charOffsets(nil, text, order, tokens, 0)
	out.Tokens = make([]tokenizedJSON, len(ids))
	at := 0
	for i, id := range ids {
		t := tokens[i]
		out.Tokens[i] = tokenizedJSON{ID: id, Token: tokenForm(t), Bytes: json.RawMessage(jsonArray(t)), Start: at, End: at + len(t), TextOffset: offsets[i]}
		at += len(t)
	}
	if merges != nil {
		out.Nodes = make(map[int]nodeJSON)
		for _, id := range ids {
			addNodes(out.Nodes, merges, id)
		}
	}
	return out, nil
}

// addNodes adds token id and the tokens of its merge tree to nodes.
func addNodes(nodes map[int]nodeJSON, t *bpe.Tokenizer, id int) {
	for stack := []int{id}; len(stack) > 0; {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, done := nodes[id]; done {
			continue
		}
		b := t.Token(id)
		n := nodeJSON{Token: tokenForm(b), Bytes: json.RawMessage(jsonArray(b))}
		if p, ok := t.Parts(id); ok {
			rank := id - bpe.NumBytes
			n.Left, n.Right, n.Rank = &p.Left, &p.Right, &rank
			stack = append(stack, p.Left, p.Right)
		}
		nodes[id] = n
	}
}

// serveTokenizers lists the tokenizers POST /v1/tokenize offers beside
// the models' own: GET /v1/tokenizers.
func (s *Server) serveTokenizers(w http.ResponseWriter, r *http.Request) {
	type tokenizerJSON struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Type        string `json:"type"`
		Description string `json:"description"`
		VocabSize   int    `json:"vocab_size"`
	}
	list := struct {
		Object string          `json:"object"`
		Data   []tokenizerJSON `json:"data"`
	}{Object: "list", Data: []tokenizerJSON{}}
	if s.gpt2 != nil {
		list.Data = append(list.Data, tokenizerJSON{tokenizerGPT2, "tokenizer", kindBPE, fmt.Sprintf("GPT-2's %s", s.gpt2), s.gpt2.VocabSize()})
	}
	api.WriteJSON(w, list)
}
