package bpe

// This file holds the tests of Encode, Decode and the token accessors:
// round trips of any bytes, the heap against the scan, merge trees.

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// mixedTokenizer is a tokenizer trained on testdata/mixed.txt (many
// scripts, digits, emoji and whitespace) to 700 tokens, shared by the
// tests.
var mixedTokenizer = sync.OnceValues(func() (*Tokenizer, error) {
	text, err := os.ReadFile(filepath.Join("testdata", "mixed.txt"))
	if err != nil {
		return nil, err
	}
	return Train(context.Background(), string(text), 700)
})

func testTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := mixedTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// roundTripTexts are texts whose encoding the tests decode again.
var roundTripTexts = []string{
	"", "a", " ", "the lamp keeper's lamp", "naïve café  \n\n", "😀👍🏽 🇫🇷", "1,000.50 ½",
	"\xff", "\xe2\x82", "a\xffb\xc3", "\x00\x01\x7f", strings.Repeat("ab", 500),
	strings.Repeat(" ", 300) + "x", strings.Repeat("\xf0\x9f\x98", 40), "<|endoftext|>",
}

func checkRoundTrip(t *testing.T, tok *Tokenizer, text string) []int {
	t.Helper()
	ids := tok.Encode(text)
	for _, id := range ids {
		if id < 0 || id >= tok.VocabSize() || tok.IsSpecial(id) {
			t.Fatalf("Encode(%q) gives id %d", text, id)
		}
	}
	got, err := tok.Decode(ids)
	if err != nil || got != text {
		t.Fatalf("Decode(Encode(%q)) = %q, %v", text, got, err)
	}
	return ids
}

func TestRoundTrip(t *testing.T) {
	tok := testTokenizer(t)
	for _, text := range roundTripTexts {
		checkRoundTrip(t, tok, text)
	}
	big := shakespeare(t)
	if ids := checkRoundTrip(t, tok, big); len(ids) >= len(big) {
		t.Errorf("tiny Shakespeare: %d tokens for %d bytes", len(ids), len(big))
	}
}

// Encode of any bytes decodes to them, whether the pieces are merged by
// scanning or with the heap, and the two ways agree.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok := testTokenizer(t)
		text := string(data)
		checkRoundTrip(t, tok, text)
		for _, p := range append(Split(text), text) {
			scan, heap := bytesOf(tok, p), bytesOf(tok, p)
			scan = tok.mergeScan(scan)
			heap = tok.mergeHeap(heap, &pieceHeap{})
			if !slices.Equal(scan, heap) {
				t.Fatalf("piece %q: scanning merges to %v, the heap to %v", p, scan, heap)
			}
		}
	})
}

// bytesOf is a piece's byte tokens.
func bytesOf(tok *Tokenizer, p string) []int32 {
	w := make([]int32, len(p))
	for i := range len(p) {
		w[i] = tok.idOf[p[i]]
	}
	return w
}

// The heap and the scan agree on pieces long enough to need many merges
// and full of ties between equal pairs ("aaaa…", "abab…").
func TestMergeHeapMatchesScan(t *testing.T) {
	tok := testTokenizer(t)
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "e", "th", " ", "é", "😀", "1"}
	for range 2000 {
		var b strings.Builder
		for range 1 + r.IntN(200) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		p := b.String()
		scan := tok.mergeScan(bytesOf(tok, p))
		heap := tok.mergeHeap(bytesOf(tok, p), &pieceHeap{})
		if !slices.Equal(scan, heap) {
			t.Fatalf("piece %q: scanning merges to %v, the heap to %v", p, scan, heap)
		}
	}
}

// A long text encodes as its pieces do one by one: the cache of pieces
// that long texts use changes nothing.
func TestEncodeCacheChangesNothing(t *testing.T) {
	tok := testTokenizer(t)
	text := shakespeare(t)[:100_000]
	var want []int
	for _, p := range Split(text) {
		want = append(want, tok.Encode(p)...)
	}
	if got := tok.Encode(text); !slices.Equal(got, want) {
		t.Fatal("encoding the text whole differs from encoding its pieces")
	}
}

// One piece of 300,000 letters encodes in n log n (the scan would take
// minutes): this test would time out, not fail, if it did not.
func TestLongPiece(t *testing.T) {
	tok := testTokenizer(t)
	checkRoundTrip(t, tok, strings.Repeat("ab", 150_000))
	checkRoundTrip(t, tok, strings.Repeat(" ", 300_000))
}

func TestDecodeRefusesUnknownIDs(t *testing.T) {
	tok := testTokenizer(t)
	for _, ids := range [][]int{{-1}, {'a', tok.VocabSize()}, {1 << 40}} {
		got, err := tok.Decode(ids)
		if !errors.Is(err, ErrUnknownToken) || !strings.Contains(err.Error(), "at position") {
			t.Errorf("Decode(%v) = %q, %v", ids, got, err)
		}
	}
	if b, err := tok.AppendDecode([]byte("x"), []int{'a', -5}); err == nil || string(b) != "xa" {
		t.Errorf("AppendDecode: %q, %v; want the tokens before the bad one", b, err)
	}
}

func TestTokenAccessors(t *testing.T) {
	tok := testTokenizer(t)
	for _, id := range []int{-1, tok.VocabSize()} {
		if tok.Token(id) != "" || tok.TokenBytes(id) != nil {
			t.Errorf("token %d outside the vocabulary: %q", id, tok.Token(id))
		}
		if _, ok := tok.Parts(id); ok {
			t.Errorf("Parts(%d) is ok", id)
		}
		if _, err := tok.Tree(id); !errors.Is(err, ErrUnknownToken) {
			t.Errorf("Tree(%d): %v", id, err)
		}
	}
	b := tok.TokenBytes(300)
	b[0] ^= 0xff
	if tok.TokenBytes(300)[0] == b[0] {
		t.Error("TokenBytes returns the tokenizer's own memory")
	}
	for id := range tok.VocabSize() {
		p, ok := tok.Parts(id)
		if ok != (id >= NumBytes) {
			t.Fatalf("Parts(%d): %v", id, ok)
		}
		if ok && tok.Token(p.Left)+tok.Token(p.Right) != tok.Token(id) {
			t.Fatalf("token %d %q is not %q + %q", id, tok.Token(id), tok.Token(p.Left), tok.Token(p.Right))
		}
	}
}

// Tree's leaves, read from left to right, are the token's bytes, each a
// byte token; every inner node is its two children joined.
func TestTree(t *testing.T) {
	tok := testTokenizer(t)
	var walk func(n *Node) string
	walk = func(n *Node) string {
		if string(n.Bytes) != tok.Token(n.ID) {
			t.Fatalf("node %d holds %q, the token is %q", n.ID, n.Bytes, tok.Token(n.ID))
		}
		if n.Left == nil {
			if n.Right != nil || n.ID >= NumBytes {
				t.Fatalf("node %d is a leaf but not a byte", n.ID)
			}
			return string(n.Bytes)
		}
		if n.Left.ID >= n.ID || n.Right.ID >= n.ID {
			t.Fatalf("node %d has parts %d and %d", n.ID, n.Left.ID, n.Right.ID)
		}
		return walk(n.Left) + walk(n.Right)
	}
	for id := range tok.VocabSize() {
		n, err := tok.Tree(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := walk(n); got != tok.Token(id) {
			t.Fatalf("token %d: leaves %q, want %q", id, got, tok.Token(id))
		}
	}
}

// A byte order other than the bytes' own renames the byte tokens and
// nothing else: the same merges, renamed, encode every text to the
// renamed ids.
func TestByteOrderIsOnlyARenaming(t *testing.T) {
	tok := testTokenizer(t)
	var order [NumBytes]byte
	r := rand.New(rand.NewPCG(3, 4))
	for i, j := range r.Perm(NumBytes) {
		order[i] = byte(j)
	}
	var rename [NumBytes]int
	for id, b := range order {
		rename[b] = id
	}
	renamed := func(id int) int {
		if id < NumBytes {
			return rename[id]
		}
		return id
	}
	var merges []Pair
	for _, m := range tok.Merges() {
		merges = append(merges, Pair{renamed(m.Left), renamed(m.Right)})
	}
	perm, err := newTokenizer(&order, merges, []string{EndOfText})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range append(roundTripTexts, shakespeare(t)[:20_000]) {
		want := tok.Encode(text)
		for i := range want {
			want[i] = renamed(want[i])
		}
		if got := checkRoundTrip(t, perm, text); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
	if id, ok := perm.SpecialID(EndOfText); !ok || id != 700 || perm.Token(id) != EndOfText || !perm.IsSpecial(id) {
		t.Errorf("SpecialID: %d, %v", id, ok)
	}
}

func TestNewTokenizerRefuses(t *testing.T) {
	var dup [NumBytes]byte // every byte 0
	for _, tc := range []struct {
		name     string
		order    *[NumBytes]byte
		merges   []Pair
		specials []string
		want     string
	}{
		{"byte twice", &dup, nil, nil, "byte 0x00 is token 0 and token 1"},
		{"future token", nil, []Pair{{'a', 256}}, nil, "merge 0 (token 256) joins 97 and 256"},
		{"negative", nil, []Pair{{-1, 'a'}}, nil, "joins -1 and 97"},
		{"pair twice", nil, []Pair{{'a', 'b'}, {'a', 'b'}}, nil, "merge 1 joins 97 and 98 again, as merge 0 did"},
		{"too long", nil, doubling(11), nil, "makes a token of 2048 bytes"},
		{"empty special", nil, nil, []string{""}, "special token 0 has 0 bytes"},
		{"long special", nil, nil, []string{strings.Repeat("x", MaxSpecialBytes+1)}, "has 65 bytes"},
		{"bad special", nil, nil, []string{"\xff"}, "not valid UTF-8"},
		{"special twice", nil, nil, []string{"<a>", "<a>"}, `special token "<a>" is listed twice`},
		{"too many", nil, make([]Pair, MaxVocabSize), nil, "tokens, more than"},
	} {
		_, err := newTokenizer(tc.order, tc.merges, tc.specials)
		if !errors.Is(err, ErrBadTokenizer) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
	}
}

// doubling returns n merges, each joining the last token to itself: token
// 256+r has 2^(r+1) bytes.
func doubling(n int) []Pair {
	merges := []Pair{{'a', 'a'}}
	for r := 1; r < n; r++ {
		merges = append(merges, Pair{NumBytes + r - 1, NumBytes + r - 1})
	}
	return merges
}

// The zero Tokenizer, there to be unmarshalled into, has no tokens.
func TestZeroTokenizer(t *testing.T) {
	var tok Tokenizer
	if ids := tok.Encode("abc"); len(ids) != 0 || tok.VocabSize() != 0 || tok.Token(0) != "" {
		t.Errorf("the zero Tokenizer encodes to %v", ids)
	}
	if _, err := tok.Decode([]int{0}); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("Decode: %v", err)
	}
}

// One Tokenizer serves many goroutines at once (run under -race), each
// getting what it would alone.
func TestConcurrentEncode(t *testing.T) {
	tok := testTokenizer(t)
	text := shakespeare(t)[:50_000]
	want := tok.Encode(text)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			if got := tok.Encode(text); !slices.Equal(got, want) {
				errs <- "a concurrent Encode differs"
			}
			if d, err := tok.Decode(want); err != nil || d != text {
				errs <- "a concurrent Decode differs"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// WithSpecials adds special tokens after the merges: the same encoding,
// new ids that decode to their texts, and no name twice.
func TestWithSpecials(t *testing.T) {
	tok := testTokenizer(t)
	eot, err := tok.WithSpecials(EndOfText)
	if err != nil {
		t.Fatal(err)
	}
	text := "the keeper's lamp <|endoftext|>"
	if !slices.Equal(eot.Encode(text), tok.Encode(text)) || eot.VocabSize() != tok.VocabSize()+1 {
		t.Errorf("WithSpecials changed the encoding or added %d tokens", eot.VocabSize()-tok.VocabSize())
	}
	if id, ok := eot.SpecialID(EndOfText); !ok || id != tok.VocabSize() || eot.Token(id) != EndOfText {
		t.Errorf("SpecialID = %d, %v", id, ok)
	}
	if _, err := eot.WithSpecials(EndOfText); !errors.Is(err, ErrBadTokenizer) {
		t.Errorf("the same special twice: %v", err)
	}
}
