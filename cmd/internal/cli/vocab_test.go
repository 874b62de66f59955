package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
)

// bpeVocab learns 300 tokens from a text whose accented letters stay in
// pieces of one byte.
func bpeVocab(t *testing.T) *minigpt.Vocab {
	t.Helper()
	v, err := minigpt.NewBPEVocab(context.Background(), strings.Repeat(minigpt.LanternBay[:500]+"naïve café ", 10), 300)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIsBPEAndQuoteToken(t *testing.T) {
	lb, err := minigpt.NewVocab(minigpt.LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	// Characters of every length, U+FFFD among them: still characters.
	wide, err := minigpt.NewVocab("aé€🙂\uFFFD")
	if err != nil {
		t.Fatal(err)
	}
	bpe := bpeVocab(t)
	for _, tc := range []struct {
		vocab *minigpt.Vocab
		want  bool
	}{{lb, false}, {wide, false}, {bpe, true}} {
		if got := IsBPE(tc.vocab); got != tc.want {
			t.Errorf("IsBPE(%s) = %v", tc.vocab, got)
		}
	}
	theID := -1
	for id := range bpe.Size() {
		if bpe.Token(id) == " the" {
			theID = id
		}
	}
	if theID < 256 {
		t.Fatalf("no token \" the\" among the merges of %s", bpe)
	}
	for _, tc := range []struct {
		vocab *minigpt.Vocab
		isBPE bool
		id    int
		want  string
	}{
		{lb, false, 0, `' '`},
		{wide, false, 4, `'🙂'`}, // after U+FFFD in code point order
		{wide, false, 3, `'�'`},
		{bpe, true, 'e', `"e"`},
		{bpe, true, 0xc3, `"\xc3"`}, // the first byte of é and ï
		{bpe, true, theID, `" the"`},
	} {
		if got := QuoteToken(tc.vocab, tc.isBPE, tc.id); got != tc.want {
			t.Errorf("QuoteToken(%s, %d) = %s, want %s", tc.vocab, tc.id, got, tc.want)
		}
	}
	if got, want := TokenBytes("é!"), []int{0xc3, 0xa9, '!'}; !slices.Equal(got, want) {
		t.Errorf("TokenBytes = %v, want %v", got, want)
	}
}

// Tokenizer gives the vocabulary's own tokenizer: the same tokens, the
// same ids on any text, the merges that make them.
func TestTokenizer(t *testing.T) {
	v := bpeVocab(t)
	tok, err := Tokenizer(v)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != v.Size() || tok.String() != v.String() {
		t.Fatalf("%s, want %s", tok, v)
	}
	for id := range v.Size() {
		if tok.Token(id) != v.Token(id) {
			t.Fatalf("token %d: %q, the vocabulary's %q", id, tok.Token(id), v.Token(id))
		}
	}
	text := "the keeper's naïve café — über 42 times"
	want, _ := v.Encode(text)
	if got := tok.Encode(text); !slices.Equal(got, want) {
		t.Errorf("Encode: %v, the vocabulary's %v", got, want)
	}
	if DecodedLen(v, want) != len(text) {
		t.Errorf("DecodedLen = %d, want %d", DecodedLen(v, want), len(text))
	}
	lb, _ := minigpt.NewVocab(minigpt.LanternBay)
	if _, err := Tokenizer(lb); err == nil || !strings.Contains(err.Error(), "24 characters, not a BPE tokenizer") {
		t.Errorf("a character vocabulary: %v", err)
	}
}

// A BPE vocabulary encodes any text: CheckText refuses only bytes that
// are not UTF-8.
func TestCheckTextBPE(t *testing.T) {
	v := bpeVocab(t)
	if err := CheckText("Quay ZEBRA 🙂 日本", v); err != nil {
		t.Errorf("valid text: %v", err)
	}
	if err := CheckText("the \xff", v); !errors.Is(err, minigpt.ErrBadText) || !strings.Contains(err.Error(), "not valid UTF-8 (byte offset 4)") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}
