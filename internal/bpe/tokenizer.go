package bpe

// This file holds the Tokenizer itself: its tokens and merges, the checks
// every way of making one goes through, and what it says of its tokens.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits every tokenizer keeps, whether trained, loaded or read: they
// bound what a hostile file can make the reader allocate.
const (
	// MaxVocabSize bounds the tokens of a tokenizer: the 256 bytes, the
	// merges and the special tokens (GPT-2 has 50,257).
	MaxVocabSize = 1 << 17
	// MaxTokenBytes bounds the length of one token. Training never makes
	// a longer one (such a pair is not merged); GPT-2's longest is 128.
	MaxTokenBytes = 1024
	// MaxTotalBytes bounds the sum of the lengths of all tokens.
	MaxTotalBytes = 1 << 24
	// MaxSpecials bounds the special tokens, and MaxSpecialBytes the
	// length of each one's text.
	MaxSpecials     = 256
	MaxSpecialBytes = 64
)

// NumBytes is the number of byte tokens, ids 0 to 255; merge r makes
// token NumBytes+r.
const NumBytes = 256

// EndOfText is GPT-2's special token, id 50256 in its vocabulary.
const EndOfText = "<|endoftext|>"

var (
	// ErrBadTokenizer is wrapped by every error about data that does not
	// describe a valid tokenizer: a serialised one, its JSON form, or
	// GPT-2's files.
	ErrBadTokenizer = errors.New("bpe: not a valid tokenizer")
	// ErrUnknownToken is wrapped by the errors of Decode and Tree for an
	// id outside the vocabulary.
	ErrUnknownToken = errors.New("bpe: unknown token id")
)

// Pair is two adjacent tokens, Left then Right: what a merge joins.
type Pair struct{ Left, Right int }

// Tokenizer is a byte-level BPE tokenizer: the 256 single bytes, merges
// that each join two tokens into a new one, and special tokens that text
// never encodes to. It is immutable and safe for concurrent use.
//
// Ids are laid out the same way in every tokenizer: 0 to 255 are the
// bytes (in byte order for a trained tokenizer; GPT-2 has its own
// order), NumBytes+r is the token merge r makes, and the special tokens
// come after the merges. A merge joins only tokens made before it, so
// every token's bytes are those of a finite tree of merges over bytes.
//
// The zero Tokenizer has no tokens (Encode gives no ids, Decode refuses
// every id): it is there for UnmarshalBinary and UnmarshalJSON to fill.
type Tokenizer struct {
	byteOf   [NumBytes]byte   // byteOf[id]: the byte of token id < 256
	idOf     [NumBytes]int32  // idOf[b]: the token of byte b
	merges   []Pair           // merges[r] makes token NumBytes+r
	specials []string         // specials[s] is token NumBytes+len(merges)+s
	ranks    map[uint64]int32 // pairKey(merges[r]) -> r
	ends     []int32          // token id's bytes: text[ends[id-1]:ends[id]] (from 0 for id 0)
	text     string           // every token's bytes, one after the other
}

// pairKey packs two token ids (each < 2^31) into a map key that orders as
// the pair does: by left id, then right.
func pairKey(a, b int32) uint64 { return uint64(a)<<32 | uint64(b) }

// newTokenizer checks and builds a tokenizer: byteOf must be a
// permutation of the bytes (nil: byte order), each merge must join two
// tokens made before it and not repeat an earlier merge's pair, and
// the specials must be distinct non-empty UTF-8 texts. Every error wraps
// ErrBadTokenizer.
func newTokenizer(byteOf *[NumBytes]byte, merges []Pair, specials []string) (*Tokenizer, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadTokenizer, fmt.Sprintf(format, a...))
	}
	if n := NumBytes + len(merges) + len(specials); n > MaxVocabSize {
		return nil, bad("%d tokens, more than %d", n, MaxVocabSize)
	}
	if len(specials) > MaxSpecials {
		return nil, bad("%d special tokens, more than %d", len(specials), MaxSpecials)
	}
	t := &Tokenizer{
		merges:   slices.Clone(merges),
		specials: slices.Clone(specials),
		ranks:    make(map[uint64]int32, len(merges)),
		ends:     make([]int32, 0, NumBytes+len(merges)+len(specials)),
	}
	var seen [NumBytes]bool
	for id := range NumBytes {
		b := byte(id)
		if byteOf != nil {
			b = byteOf[id]
		}
		if seen[b] {
			return nil, bad("byte %#02x is token %d and token %d", b, t.idOf[b], id)
		}
		seen[b] = true
		t.byteOf[id], t.idOf[b] = b, int32(id)
	}
	// First the lengths, so that the limits are checked before the bytes
	// are allocated, once.
	total := 0
	for range NumBytes {
		total++
		t.ends = append(t.ends, int32(total))
	}
	for r, m := range merges {
		id := NumBytes + r
		if m.Left < 0 || m.Left >= id || m.Right < 0 || m.Right >= id {
			return nil, bad("merge %d (token %d) joins %d and %d: both must be tokens made before it, 0 to %d", r, id, m.Left, m.Right, id-1)
		}
		k := pairKey(int32(m.Left), int32(m.Right))
		if q, dup := t.ranks[k]; dup {
			return nil, bad("merge %d joins %d and %d again, as merge %d did", r, m.Left, m.Right, q)
		}
		t.ranks[k] = int32(r)
		n := t.tokenLen(m.Left) + t.tokenLen(m.Right)
		if n > MaxTokenBytes {
			return nil, bad("merge %d makes a token of %d bytes, more than %d", r, n, MaxTokenBytes)
		}
		if total+n > MaxTotalBytes {
			return nil, bad("the tokens up to merge %d hold more than %d bytes", r, MaxTotalBytes)
		}
		total += n
		t.ends = append(t.ends, int32(total))
	}
	for s, name := range specials {
		switch {
		case name == "" || len(name) > MaxSpecialBytes:
			return nil, bad("special token %d has %d bytes, want 1 to %d", s, len(name), MaxSpecialBytes)
		case !utf8.ValidString(name):
			return nil, bad("special token %d (%q) is not valid UTF-8", s, name)
		case slices.Contains(specials[:s], name):
			return nil, bad("special token %q is listed twice", name)
		}
		total += len(name)
		t.ends = append(t.ends, int32(total))
	}
	// A Builder grown once: what it has written reads as a string without
	// a copy, and later writes do not move it.
	var b strings.Builder
	b.Grow(total)
	b.Write(t.byteOf[:])
	for _, m := range merges {
		b.WriteString(t.token(b.String(), m.Left))
		b.WriteString(t.token(b.String(), m.Right))
	}
	for _, name := range specials {
		b.WriteString(name)
	}
	t.text = b.String()
	return t, nil
}

// tokenLen is the length of token id while the tokenizer is being built.
func (t *Tokenizer) tokenLen(id int) int {
	if id == 0 {
		return int(t.ends[0])
	}
	return int(t.ends[id] - t.ends[id-1])
}

// token is token id's bytes in text, all the tokens' bytes or a prefix
// holding id's.
func (t *Tokenizer) token(text string, id int) string {
	start := int32(0)
	if id > 0 {
		start = t.ends[id-1]
	}
	return text[start:t.ends[id]]
}

// VocabSize returns the number of tokens: 256 bytes, the merges and the
// special tokens. Ids run from 0 to VocabSize()-1.
func (t *Tokenizer) VocabSize() int { return len(t.ends) }

// NumMerges returns the number of merges.
func (t *Tokenizer) NumMerges() int { return len(t.merges) }

// Merges returns a copy of the merges in the order they are applied:
// Merges()[r] makes token NumBytes+r.
func (t *Tokenizer) Merges() []Pair { return slices.Clone(t.merges) }

// Specials returns the special tokens' texts; the first one's id is
// NumBytes+NumMerges(), the next one's the id after it.
func (t *Tokenizer) Specials() []string { return slices.Clone(t.specials) }

// SpecialID returns the id of the special token whose text is name.
func (t *Tokenizer) SpecialID(name string) (int, bool) {
	if s := slices.Index(t.specials, name); s >= 0 {
		return NumBytes + len(t.merges) + s, true
	}
	return 0, false
}

// WithSpecials returns a tokenizer with t's tokens and, after them, the
// special tokens names: a trained tokenizer has none, and a model that
// learns where documents end needs one (EndOfText, say). The names must
// be new, non-empty UTF-8 texts of at most MaxSpecialBytes.
func (t *Tokenizer) WithSpecials(names ...string) (*Tokenizer, error) {
	return newTokenizer(&t.byteOf, t.merges, append(slices.Clone(t.specials), names...))
}

// IsSpecial reports whether id is a special token's.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= NumBytes+len(t.merges) && id < t.VocabSize()
}

// Token returns token id's bytes, as a string (a special token's is its
// text), or "" for an id outside the vocabulary. It does not allocate.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.ends) {
		return ""
	}
	return t.token(t.text, id)
}

// TokenBytes returns a new slice holding token id's bytes (a special
// token's are its text), or nil for an id outside the vocabulary. Token
// is the same without the copy.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.ends) {
		return nil
	}
	return []byte(t.Token(id))
}

// Parts returns the two tokens that the merge making token id joined,
// and false for a byte token, a special token or an id outside the
// vocabulary.
func (t *Tokenizer) Parts(id int) (Pair, bool) {
	r := id - NumBytes
	if r < 0 || r >= len(t.merges) {
		return Pair{}, false
	}
	return t.merges[r], true
}

// Node is a token in a merge tree: a byte or special token (no parts),
// or the merge of Left and Right.
type Node struct {
	ID          int
	Bytes       []byte
	Left, Right *Node // both nil, or both set
}

// Tree returns the merge tree of token id: which two tokens made it,
// which two made each of them, down to single bytes. Rank order is id
// order: a node's parts have smaller ids than it.
func (t *Tokenizer) Tree(id int) (*Node, error) {
	if id < 0 || id >= t.VocabSize() {
		return nil, fmt.Errorf("%w: %d, want 0 to %d", ErrUnknownToken, id, t.VocabSize()-1)
	}
	return t.tree(id), nil
}

func (t *Tokenizer) tree(id int) *Node {
	n := &Node{ID: id, Bytes: t.TokenBytes(id)}
	if p, ok := t.Parts(id); ok {
		n.Left, n.Right = t.tree(p.Left), t.tree(p.Right)
	}
	return n
}

// Equal reports whether t and u have the same tokens under the same
// ids: the same byte order, merges and special tokens.
func (t *Tokenizer) Equal(u *Tokenizer) bool {
	return t.byteOf == u.byteOf && slices.Equal(t.merges, u.merges) && slices.Equal(t.specials, u.specials)
}

// String describes the tokenizer in a few words: "byte-level BPE, 512
// tokens (256 merges)".
func (t *Tokenizer) String() string {
	s := fmt.Sprintf("byte-level BPE, %d tokens (%d merges", t.VocabSize(), len(t.merges))
	if len(t.specials) > 0 {
		s += fmt.Sprintf(", %d special", len(t.specials))
	}
	return s + ")"
}
