// The vocabulary side of binding: a trie of the tokens' bytes, and the
// characters that the vocabulary's base units (single characters and
// single bytes) can write, over which liveness is computed.

package grammar

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// vocab is what a Matcher knows of its vocabulary.
type vocab struct {
	size int
	trie []trieNode // trie[0] is the root

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

type trieNode struct {
	kids []trieKid // by ascending byte
	ids  []int32   // tokens whose text ends here
}

type trieKid struct {
	b    byte
	next int32
}

// newVocab analyses tokens. Tokens of no bytes are kept (their ids count)
// but never allowed.
func newVocab(tokens [][]byte) (*vocab, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrNotAllowed)
	}
	if len(tokens) > MaxVocab {
		return nil, fmt.Errorf("%w: %d tokens, more than the cap of %d", ErrTooLarge, len(tokens), MaxVocab)
	}
	v := &vocab{size: len(tokens), trie: []trieNode{{}}}
	type edge struct {
		from int32
		b    byte
	}
	kids := map[edge]int32{}
	var whole []runeRange
	for id, t := range tokens {
		if len(t) > MaxTokenBytes {
			return nil, fmt.Errorf("%w: token %d has %d bytes, more than the cap of %d", ErrTooLarge, id, len(t), MaxTokenBytes)
		}
		if len(t) == 0 {
			continue
		}
		if len(t) == 1 {
			v.single[t[0]] = true
		}
		if r, n := utf8.DecodeRune(t); n == len(t) && (r != utf8.RuneError || n > 1) {
			whole = append(whole, runeRange{r, r})
		}
		at := int32(0)
		for _, b := range t {
			next, ok := kids[edge{at, b}]
			if !ok {
				next = int32(len(v.trie))
				v.trie = append(v.trie, trieNode{})
				kids[edge{at, b}] = next
				v.trie[at].kids = append(v.trie[at].kids, trieKid{b, next})
			}
			at = next
		}
		v.trie[at].ids = append(v.trie[at].ids, int32(id))
	}
	for i := range v.trie {
		slices.SortFunc(v.trie[i].kids, func(a, b trieKid) int { return int(a.b) - int(b.b) })
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
