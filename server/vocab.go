package server

// This file owns what the server derives once from a model's vocabulary:
// whether it reads characters or byte-level BPE tokens, each token's
// bytes and the forms a response gives them, and a BPE vocabulary's
// merges (for POST /v1/tokenize). With engine.go it is the only file that
// calls the minigpt library.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/internal/bpe"
)

// Tokenizer kinds, as GET /v1/models and POST /v1/tokenize name them.
const (
	kindChar = "char" // one token a character: the lessons' vocabulary
	kindBPE  = "bpe"  // byte-level BPE: a token is bytes, several characters or part of one
)

// vocabulary is a model's tokens in the forms the server writes them.
type vocabulary struct {
	kind     string   // kindChar or kindBPE
	describe string   // minigpt.Vocab.String(): "24 characters", "byte-level BPE, 512 tokens (256 merges)"
	tokens   []string // token id -> its bytes
	display  []string // token id -> its form in a per-token field (logprobs' tokens, a trace, /v1/models' vocab): tokenForm
	forms    []string // token id -> display as JSON string content
	arrays   []string // token id -> its bytes as a JSON array ("[195,169]"), chat logprobs' "bytes"
	// chars is a character vocabulary's characters in id order, which
	// messages quote; "" for BPE.
	chars string
	// merges is a BPE vocabulary's tokenizer, for the merge trees of POST
	// /v1/tokenize; nil for characters, or when it cannot be read back.
	merges *bpe.Tokenizer
	// The longest forms, which bound a response's size (size.go): a
	// token's JSON in a text, its JSON form, its JSON array.
	longestText, longestForm, longestArray int
}

// newVocabulary derives v's forms; m is its model (see bpeMerges).
func newVocabulary(m *minigpt.Model, v *minigpt.Vocab) *vocabulary {
	n := v.Size()
	vc := &vocabulary{kind: kindChar, describe: v.String(), tokens: make([]string, n), display: make([]string, n),
		forms: make([]string, n), arrays: make([]string, n)}
	var chars []byte
	for id := range n {
		t := v.Token(id)
		vc.tokens[id] = t
		// A character vocabulary's every token is one whole character;
		// BPE's bytes 128 to 255 alone are not.
		if r, size := utf8.DecodeRuneInString(t); size != len(t) || (r == utf8.RuneError && size <= 1) {
			vc.kind = kindBPE
		}
		chars = append(chars, t...)
		vc.display[id] = tokenForm(t)
		vc.forms[id] = jsonContent(vc.display[id])
		vc.arrays[id] = jsonArray(t)
		vc.longestText = max(vc.longestText, len(appendJSONText(nil, t)))
		vc.longestForm = max(vc.longestForm, len(vc.forms[id]))
		vc.longestArray = max(vc.longestArray, len(vc.arrays[id]))
	}
	if vc.kind == kindChar {
		vc.chars = string(chars)
		return vc
	}
	vc.merges, _ = bpeMerges(m, v) // without them, /v1/tokenize gives no merge trees
	return vc
}

// size is the number of tokens.
func (vc *vocabulary) size() int { return len(vc.tokens) }

// tokenForm is a token's form in a per-token field: its text when its
// bytes are valid UTF-8, else, as OpenAI's completions API writes a token
// that holds part of a character, "bytes:" and each byte as \xNN
// ("bytes:\xe2\x80"), so that the field is valid JSON and says exactly
// which bytes the token holds.
func tokenForm(t string) string {
	if t != "" && utf8.ValidString(t) {
		return t
	}
	b := []byte("bytes:")
	for i := range len(t) {
		b = append(b, '\\', 'x', hexDigits[t[i]>>4], hexDigits[t[i]&15])
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

// jsonContent is s as JSON string content, without the quotes.
func jsonContent(s string) string {
	b := appendJSONText(nil, s)
	return string(b)
}

// jsonArray is t's bytes as a JSON array of numbers.
func jsonArray(t string) string {
	b := []byte("[")
	for i := range len(t) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(t[i]), 10)
	}
	return string(append(b, ']'))
}

// errHeaderRead stops WriteSafetensors once bpeMerges has the header.
var errHeaderRead = errors.New("header read")

// bpeMerges returns v's BPE tokenizer, read back from the safetensors
// metadata the library writes for m and v (docs/interop.md: format "2"
// carries the tokenizer's JSON form in minigpt.tokenizer), since the
// library does not hand its tokenizer out. Only the header is kept: the
// write stops there.
func bpeMerges(m *minigpt.Model, v *minigpt.Vocab) (*bpe.Tokenizer, error) {
	var h headerCatcher
	err := minigpt.WriteSafetensors(&h, &minigpt.Checkpoint{Model: m, Vocab: v}, "F64")
	if err != nil && !errors.Is(err, errHeaderRead) {
		return nil, err
	}
	if h.need == 0 || len(h.buf) < h.need {
		return nil, errors.New("no safetensors header")
	}
	var hdr struct {
		Meta map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(h.buf[8:h.need], &hdr); err != nil {
		return nil, err
	}
	if hdr.Meta["minigpt.format"] != "2" {
		return nil, fmt.Errorf("safetensors format %q carries no tokenizer", hdr.Meta["minigpt.format"])
	}
	tok, err := bpe.ReadJSON([]byte(hdr.Meta["minigpt.tokenizer"]))
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() != v.Size() {
		return nil, fmt.Errorf("the tokenizer has %d tokens, the vocabulary %d", tok.VocabSize(), v.Size())
	}
	for id := range v.Size() {
		if tok.Token(id) != v.Token(id) {
			return nil, fmt.Errorf("token %d: the tokenizer's %q, the vocabulary's %q", id, tok.Token(id), v.Token(id))
		}
	}
	return tok, nil
}

// headerCatcher keeps the first bytes written to it, up to the end of a
// safetensors header (its 8-byte length, then the JSON), and refuses
// the rest.
type headerCatcher struct {
	buf  []byte
	need int // 8 + the header's length, once known
}

// maxHeader bounds the header kept, as the library's reader does.
const maxHeader = 100_000_000

func (h *headerCatcher) Write(p []byte) (int, error) {
	if h.need > 0 && len(h.buf) >= h.need {
		return 0, errHeaderRead
	}
	h.buf = append(h.buf, p...)
	if h.need == 0 && len(h.buf) >= 8 {
		n := binary.LittleEndian.Uint64(h.buf)
		if n > maxHeader {
			return 0, fmt.Errorf("safetensors header of %d bytes", n)
		}
		h.need = 8 + int(n)
	}
	if h.need > 0 && len(h.buf) >= h.need {
		h.buf = bytes.Clone(h.buf[:h.need])
	}
	return len(p), nil
}
