package bpe

// This file holds Encode and Decode: text to token ids the GPT-2 way
// (split into pieces, then merges in rank order within each piece) and
// back to the exact bytes.

import (
	"fmt"
	"strings"
)

// Encode returns the token ids of text, which may hold any bytes: it
// splits text into pieces (Split) and, within each piece, starts from
// its bytes and applies the merges in rank order, each merge joining
// every occurrence of its pair from left to right, as GPT-2's encoder
// does. Special tokens are never produced: text that reads
// "<|endoftext|>" is encoded as those 13 characters, as GPT-2's own
// encoder does; a caller who wants the special token appends its id
// (SpecialID). Decode of the result returns text, byte for byte.
func (t *Tokenizer) Encode(text string) []int {
	return t.AppendEncode(make([]int, 0, len(text)/3+1), text)
}

// Pieces longer than heapPieceLen bytes are merged with a heap (n log n)
// rather than by scanning for the best pair after each merge (n² in the
// worst case, and faster for the short pieces words make).
const heapPieceLen = 48

// Pieces up to cachePieceLen bytes are remembered within one call of
// AppendEncode, up to cacheEntries of them: a long text repeats its words.
const (
	cachePieceLen = 32
	cacheEntries  = 1 << 14
	cacheMinText  = 4 << 10 // a shorter text does not pay for the map
)

// AppendEncode appends the token ids of text (see Encode) to dst and
// returns the extended slice.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	if t.VocabSize() == 0 {
		return dst // the zero Tokenizer
	}
	var e encoder
	e.t = t
	if len(text) >= cacheMinText {
		e.cache = make(map[string]uint64, 1024)
	}
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		dst = e.piece(dst, text[i:j])
		i = j
	}
	return dst
}

// encoder holds one AppendEncode call's working memory.
type encoder struct {
	t     *Tokenizer
	word  []int32 // the piece's tokens as merges apply
	heap  pieceHeap
	cache map[string]uint64 // piece -> its tokens in memo (offset<<32 | count)
	memo  []int32
}

// piece appends the tokens of one piece to dst.
func (e *encoder) piece(dst []int, p string) []int {
	if len(p) == 1 {
		return append(dst, int(e.t.idOf[p[0]]))
	}
	if e.cache != nil && len(p) <= cachePieceLen {
		if v, ok := e.cache[p]; ok {
			for _, id := range e.memo[v>>32 : v>>32+v&0xffffffff] {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	e.word = e.word[:0]
	for i := 0; i < len(p); i++ {
		e.word = append(e.word, e.t.idOf[p[i]])
	}
	var w []int32
	if len(p) > heapPieceLen {
		w = e.t.mergeHeap(e.word, &e.heap)
	} else {
		w = e.t.mergeScan(e.word)
	}
	if e.cache != nil && len(p) <= cachePieceLen && len(e.cache) < cacheEntries {
		e.cache[strings.Clone(p)] = uint64(len(e.memo))<<32 | uint64(len(w))
		e.memo = append(e.memo, w...)
	}
	for _, id := range w {
		dst = append(dst, int(id))
	}
	return dst
}

// mergeScan applies the merges to w in place and returns what is left
// of it, the way GPT-2's encoder does: find the adjacent pair of lowest
// rank, join each of its occurrences from left to right, repeat until no
// pair has a merge.
func (t *Tokenizer) mergeScan(w []int32) []int32 {
	for len(w) > 1 {
		best := int32(-1)
		var a, b int32
		for i := 0; i+1 < len(w); i++ {
			if r, ok := t.ranks[pairKey(w[i], w[i+1])]; ok && (best < 0 || r < best) {
				best, a, b = r, w[i], w[i+1]
			}
		}
		if best < 0 {
			break
		}
		id := int32(NumBytes) + best
		out := w[:0] // writes never pass reads
		for i := 0; i < len(w); i++ {
			if i+1 < len(w) && w[i] == a && w[i+1] == b {
				out = append(out, id)
				i++
			} else {
				out = append(out, w[i])
			}
		}
		w = out
	}
	return w
}

// pieceHeap is the working memory of mergeHeap: the piece as a linked
// list and a min-heap of candidate merges.
type pieceHeap struct {
	next, prev []int32     // neighbours in the list; -1 past an end
	cands      []candidate // a binary min-heap by (rank, position)
}

// candidate is a merge that may apply at position pos: its rank and the
// pair it joins (checked again when it comes off the heap, since the
// tokens at pos may have changed since).
type candidate struct {
	rank, pos   int32
	left, right int32
}

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

// mergeHeap computes what mergeScan does in n log n: the candidate of
// lowest rank comes off a heap, and of equal ranks (the same pair) the
// leftmost first. A merge's new pairs have ranks above its own (a merge
// joins only tokens made before it), so this joins the occurrences of
// each pair from left to right before any later merge, as mergeScan does.
func (t *Tokenizer) mergeHeap(w []int32, h *pieceHeap) []int32 {
	n := len(w)
	if n < 2 {
		return w
	}
	h.next, h.prev, h.cands = h.next[:0], h.prev[:0], h.cands[:0]
	for i := range n {
		h.next = append(h.next, int32(i+1))
		h.prev = append(h.prev, int32(i-1))
	}
	h.next[n-1] = -1
	push := func(pos int32) {
		nx := h.next[pos]
		if nx < 0 {
			return
		}
		if r, ok := t.ranks[pairKey(w[pos], w[nx])]; ok {
			h.push(candidate{r, pos, w[pos], w[nx]})
		}
	}
	for i := range n - 1 {
		push(int32(i))
	}
	const dead = -1
	for len(h.cands) > 0 {
		c := h.pop()
		nx := h.next[c.pos]
		if w[c.pos] != c.left || nx < 0 || w[nx] != c.right {
			continue // stale: one of the two was joined to another neighbour
		}
		w[c.pos] = int32(NumBytes) + c.rank
		w[nx] = dead
		after := h.next[nx]
		h.next[c.pos] = after
		if after >= 0 {
			h.prev[after] = c.pos
		}
		if p := h.prev[c.pos]; p >= 0 {
			push(p)
		}
		push(c.pos)
	}
	out := w[:0]
	for i := int32(0); i >= 0; i = h.next[i] {
		out = append(out, w[i])
	}
	return out
}

func (h *pieceHeap) push(c candidate) {
	h.cands = append(h.cands, c)
	i := len(h.cands) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.cands[i].less(h.cands[p]) {
			break
		}
		h.cands[i], h.cands[p] = h.cands[p], h.cands[i]
		i = p
	}
}

func (h *pieceHeap) pop() candidate {
	top := h.cands[0]
	last := len(h.cands) - 1
	h.cands[0] = h.cands[last]
	h.cands = h.cands[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.cands[l].less(h.cands[m]) {
			m = l
		}
		if r < last && h.cands[r].less(h.cands[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.cands[i], h.cands[m] = h.cands[m], h.cands[i]
		i = m
	}
	return top
}

// Decode returns the bytes of the tokens ids, one after the other, as a
// string (which may not be valid UTF-8: a token can hold part of a
// character). A special token decodes to its text. An id outside the
// vocabulary is an error (wrapping ErrUnknownToken) that names its
// position.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	b, err := t.AppendDecode(nil, ids)
	return string(b), err
}

// AppendDecode appends the bytes of the tokens ids to dst (see Decode)
// and returns the extended slice; on an error, dst holds the tokens
// before the bad one.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int) ([]byte, error) {
	for i, id := range ids {
		if id < 0 || id >= len(t.ends) {
			return dst, fmt.Errorf("%w: %d at position %d, want 0 to %d", ErrUnknownToken, id, i, len(t.ends)-1)
		}
		dst = append(dst, t.Token(id)...)
	}
	return dst, nil
}
