package cli

// This file holds what the commands ask of a model's vocabulary beyond
// minigpt.Vocab's methods: which kind it is, how a token is shown, the
// BPE tokenizer itself, and how much text a token holds.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/internal/bpe"
)

// IsBPE reports whether vocab is a byte-level BPE tokenizer rather than
// characters. A BPE vocabulary holds the 256 single bytes, and those from
// 0x80 on are no character on their own; every token of a character
// vocabulary is one whole character.
func IsBPE(vocab *minigpt.Vocab) bool {
	for id := range vocab.Size() {
		t := vocab.Token(id)
		if r, n := utf8.DecodeRuneInString(t); n != len(t) || r == utf8.RuneError && n < 2 {
			return true
		}
	}
	return false
}

// QuoteToken shows token id of vocab as the commands print it: a
// character model's character as a Go rune literal ('e', as ever), a BPE
// token as a Go string literal ("the", " k", or "\xe2\x80" for the first
// bytes of a character). isBPE says which vocab is (IsBPE, found once).
func QuoteToken(vocab *minigpt.Vocab, isBPE bool, id int) string {
	t := vocab.Token(id)
	if !isBPE {
		r, _ := utf8.DecodeRuneInString(t)
		return strconv.QuoteRune(r)
	}
	return strconv.Quote(t)
}

// TokenBytes returns the bytes of a token's text as ints, for JSON (a
// token that is part of a character is no JSON string).
func TokenBytes(tok string) []int {
	out := make([]int, len(tok))
	for i := range len(tok) {
		out[i] = int(tok[i])
	}
	return out
}

// Tokenizer returns the BPE tokenizer of vocab, an error for a character
// vocabulary. minigpt.Vocab hands out its tokenizer in one form only, the
// JSON a safetensors file carries in its metadata, so this writes the
// safetensors file of a model one wide over vocab (some 3·V floats) and
// reads the tokenizer back from its header.
func Tokenizer(vocab *minigpt.Vocab) (*bpe.Tokenizer, error) {
	if !IsBPE(vocab) {
		return nil, fmt.Errorf("the vocabulary is %s, not a BPE tokenizer", vocab)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: vocab.Size(), BlockSize: 1, EmbedDim: 1, Heads: 1, Layers: 1}, 1)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := minigpt.WriteSafetensors(&b, &minigpt.Checkpoint{Model: m, Vocab: vocab}, "F32"); err != nil {
		return nil, err
	}
	data := b.Bytes()
	n := binary.LittleEndian.Uint64(data)
	var header struct {
		Meta map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("the tokenizer's metadata: %w", err)
	}
	js, ok := header.Meta["minigpt.tokenizer"]
	if !ok {
		return nil, fmt.Errorf("the vocabulary is %s, and its metadata holds no tokenizer", vocab)
	}
	return bpe.ReadJSON([]byte(js))
}

// DecodedLen returns the number of bytes the tokens ids of vocab decode
// to.
func DecodedLen(vocab *minigpt.Vocab, ids []int) int {
	n := 0
	for _, id := range ids {
		n += len(vocab.Token(id))
	}
	return n
}
