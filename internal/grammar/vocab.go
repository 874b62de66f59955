// The vocabulary side of binding: a trie of the tokens' bytes, and the
// characters that the vocabulary's base units (single characters and
// single bytes) can write, over which liveness is computed.

package grammar

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Vocabulary is a model's tokens prepared for binding: the trie of their
// bytes and what single characters and bytes they hold. Build it once per
// model with NewVocabulary and bind every constraint to it; it is
// immutable and safe for concurrent use.
type Vocabulary struct{ v *vocab }

// NewVocabulary prepares tokens, token i's text being tokens[i], for
// Grammar.BindVocabulary. A token of no bytes is kept (its id counts) but
// never allowed: pass nil for special tokens a constraint must not allow.
func NewVocabulary(tokens [][]byte) (*Vocabulary, error) {
	v, err := newVocab(tokens)
	if err != nil {
		return nil, err
	}
	return &Vocabulary{v}, nil
}

// Size returns the number of tokens.
func (v *Vocabulary) Size() int { return v.v.size }

// vocab is what a Matcher knows of its vocabulary.
type vocab struct {
	size int

	// The trie of the tokens' bytes, node 0 its root, as flat arrays:
	// the children of node t are kids[kidAt[t]:kidAt[t+1]] in ascending
	// order of their byte edge[child]; the tokens whose text ends at t
	// are ids[idAt[t]:idAt[t+1]].
	kidAt, kids []int32
	edge        []byte
	idAt, ids   []int32

	// whole is the set of characters that are a token on their own.
	whole runeSet
	// single[b]: byte b is a token on its own.
	single [256]bool
	// contFull: every continuation byte 0x80..0xBF is a token on its own,
	// so base units can finish any character begun.
	contFull bool
	// prod is every character base units can write: whole, and with
	// contFull the characters whose first byte is a token on its own.
	prod runeSet
}

// newVocab analyses tokens and builds their trie: the tokens sorted by
// their bytes, each shares the path of its common prefix with the one
// before, so the nodes come in depth-first order and each node's children
// in ascending byte order.
func newVocab(tokens [][]byte) (*vocab, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrNotAllowed)
	}
	if len(tokens) > MaxVocab {
		return nil, fmt.Errorf("%w: %d tokens, more than the cap of %d", ErrTooLarge, len(tokens), MaxVocab)
	}
	v := &vocab{size: len(tokens)}
	var whole []runeRange
	order := make([]int32, 0, len(tokens))
	for id, t := range tokens {
		if len(t) > MaxTokenBytes {
			return nil, fmt.Errorf("%w: token %d has %d bytes, more than the cap of %d", ErrTooLarge, id, len(t), MaxTokenBytes)
		}
		if len(t) == 0 {
			continue
		}
		order = append(order, int32(id))
		if len(t) == 1 {
			v.single[t[0]] = true
		}
		if r, n := utf8.DecodeRune(t); n == len(t) && (r != utf8.RuneError || n > 1) {
			whole = append(whole, runeRange{r, r})
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	parent := []int32{-1}
	v.edge = []byte{0}
	end := make([]int32, len(order)) // the node each token of order ends at
	var path []int32                 // nodes along the previous token, below the root
	var prev []byte
	for i, id := range order {
		t := tokens[id]
		common := 0
		for common < len(prev) && common < len(t) && prev[common] == t[common] {
			common++
		}
		path = path[:common]
		for _, b := range t[common:] {
			at := int32(0)
			if len(path) > 0 {
				at = path[len(path)-1]
			}
			parent = append(parent, at)
			v.edge = append(v.edge, b)
			path = append(path, int32(len(parent)-1))
		}
		end[i] = path[len(path)-1]
		prev = t
	}
	n := len(parent)
	v.kidAt = make([]int32, n+1)
	for _, p := range parent[1:] {
		v.kidAt[p+1]++
	}
	for t := range n {
		v.kidAt[t+1] += v.kidAt[t]
	}
	v.kids = make([]int32, n-1)
	fill := slices.Clone(v.kidAt[:n])
	for c := 1; c < n; c++ {
		p := parent[c]
		v.kids[fill[p]] = int32(c)
		fill[p]++
	}
	v.idAt = make([]int32, n+1)
	for _, t := range end {
		v.idAt[t+1]++
	}
	for t := range n {
		v.idAt[t+1] += v.idAt[t]
	}
	v.ids = make([]int32, len(order))
	fill = slices.Clone(v.idAt[:n])
	for i, t := range end {
		v.ids[fill[t]] = order[i]
		fill[t]++
	}
	v.whole = makeSet(whole)
	v.contFull = true
	for b := 0x80; b <= 0xBF; b++ {
		v.contFull = v.contFull && v.single[b]
	}
	prod := slices.Clone(v.whole)
	if v.contFull {
		for b := 0xC2; b <= 0xF4; b++ {
			if v.single[b] {
				lo, hi := pendRange([]byte{byte(b)})
				prod = append(prod, runeRange{lo, hi})
			}
		}
	}
	v.prod = makeSet(prod).intersect(validRunes)
	return v, nil
}

// unitCost returns the fewest base units that write one character of s,
// or inf when they cannot.
func (v *vocab) unitCost(s runeSet) int64 {
	if s.intersects(v.whole) {
		return 1
	}
	best := int64(inf)
	if v.contFull {
		for b := 0xC2; b <= 0xF4; b++ {
			if v.single[b] {
				if lo, hi := pendRange([]byte{byte(b)}); s.meets(lo, hi) {
					best = min(best, int64(seqLen(byte(b))))
				}
			}
		}
	}
	return best
}

// seqLen is the length of the UTF-8 sequence that lead byte b begins, or
// 0 when b cannot begin one.
func seqLen(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b >= 0xC2 && b <= 0xDF:
		return 2
	case b >= 0xE0 && b <= 0xEF:
		return 3
	case b >= 0xF0 && b <= 0xF4:
		return 4
	}
	return 0
}

// contRange is the range of byte that may follow the valid partial
// sequence p (1 to 3 bytes): it excludes overlong forms, surrogates and
// code points above MaxRune.
func contRange(p []byte) (lo, hi byte) {
	if len(p) == 1 {
		switch p[0] {
		case 0xE0:
			return 0xA0, 0xBF
		case 0xED:
			return 0x80, 0x9F
		case 0xF0:
			return 0x90, 0xBF
		case 0xF4:
			return 0x80, 0x8F
		}
	}
	return 0x80, 0xBF
}

// pendRange returns the code points whose UTF-8 form begins with the valid
// partial sequence p: always one range.
func pendRange(p []byte) (lo, hi rune) {
	n := seqLen(p[0])
	var a, z [4]byte
	copy(a[:], p)
	copy(z[:], p)
	for i := len(p); i < n; i++ {
		l, h := contRange(a[:i])
		if i > 1 {
			l, h = 0x80, 0xBF
		}
		a[i], z[i] = l, h
	}
	lo, _ = utf8.DecodeRune(a[:n])
	hi, _ = utf8.DecodeRune(z[:n])
	return lo, hi
}
