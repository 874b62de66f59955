package bpe

// This file holds Train: byte-level BPE learnt from a text, with pair
// counts kept up to date merge by merge instead of recounted.

import (
	"context"
	"fmt"
	"slices"
)

// Train learns a tokenizer of vocabSize tokens (256 to MaxVocabSize) from
// text, which may hold any bytes. It splits text into pieces (Split),
// counts each distinct piece, and starting from the 256 bytes repeatedly
// merges the pair of adjacent tokens that occurs most often within the
// pieces (occurrences may overlap: "aaa" holds the pair (a, a) twice)
// into a new token, which then replaces every occurrence of the pair in
// each piece from left to right, as Encode applies it.
//
// The tie rule: among pairs that occur equally often, the one with the
// smaller left token id wins, and of those the one with the smaller
// right token id. A pair whose token would be longer than MaxTokenBytes
// is never merged. So the same text and size give the same merges on
// every machine and at any GOMAXPROCS (Train runs on one goroutine).
//
// Training stops early, with fewer merges, when no pair is left to
// merge: every piece is then one token. It returns ctx's error if ctx is
// done first. The text may be up to 2 GiB; training keeps each distinct
// piece, some 24 bytes for each of their bytes, and a count for each pair.
func Train(ctx context.Context, text string, vocabSize int) (*Tokenizer, error) {
	if vocabSize < NumBytes || vocabSize > MaxVocabSize {
		return nil, fmt.Errorf("bpe: vocabulary size %d, want %d to %d", vocabSize, NumBytes, MaxVocabSize)
	}
	if len(text) > maxTrainBytes {
		return nil, fmt.Errorf("bpe: a text of %d bytes to train on, more than %d", len(text), maxTrainBytes)
	}
	tr := newTrainer(text, vocabSize)
	merges := make([]Pair, 0, vocabSize-NumBytes)
	total := NumBytes
	for len(merges) < vocabSize-NumBytes {
		if len(merges)%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p, ok := tr.best()
		if !ok {
			break
		}
		n := int(tr.length[p.Left] + tr.length[p.Right])
		if total+n > MaxTotalBytes {
			return nil, fmt.Errorf("bpe: the tokens after %d merges would hold more than %d bytes", len(merges), MaxTotalBytes)
		}
		total += n
		tr.merge(p, int32(NumBytes+len(merges)))
		merges = append(merges, p)
	}
	return newTokenizer(nil, merges, nil)
}

// trainer holds the distinct pieces of a text as linked lists of tokens
// in one array (a piece's tokens keep their places: a merge joins a node
// and its next one into the first and marks the second dead), the
// count of every pair, and where each pair may occur.
type trainer struct {
	tok        []int32 // node -> its token, or dead
	next, prev []int32 // node -> its neighbour in its piece, or -1
	freq       []int64 // node -> how often its piece occurs in the text
	length     []int32 // token -> its length in bytes

	count   map[uint64]int64   // pair -> occurrences in the text
	where   map[uint64][]int32 // pair -> nodes where it may start (some stale)
	heap    countHeap          // pairs by count; entries whose count is stale are skipped
	tooLong map[uint64]bool    // pairs never merged: their token would pass MaxTokenBytes

	changed []uint64 // pairs whose count this merge changed
}

const dead = -1

// maxTrainBytes keeps node numbers within int32.
const maxTrainBytes = 1<<31 - 1

func newTrainer(text string, vocabSize int) *trainer {
	pieces := map[string]int64{}
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		if j-i > 1 { // a piece of one byte holds no pair
			pieces[text[i:j]]++
		}
		i = j
	}
	// Sorted, so that the nodes are laid out the same way in every run;
	// the merges do not depend on it (counts are sums, and the pieces do
	// not interact).
	keys := make([]string, 0, len(pieces))
	nodes := 0
	for p := range pieces {
		keys = append(keys, p)
		nodes += len(p)
	}
	slices.Sort(keys)
	tr := &trainer{
		tok:     make([]int32, 0, nodes),
		next:    make([]int32, 0, nodes),
		prev:    make([]int32, 0, nodes),
		freq:    make([]int64, 0, nodes),
		length:  make([]int32, NumBytes, vocabSize),
		count:   map[uint64]int64{},
		where:   map[uint64][]int32{},
		tooLong: map[uint64]bool{},
	}
	for i := range NumBytes {
		tr.length[i] = 1
	}
	for _, p := range keys {
		f := pieces[p]
		start := int32(len(tr.tok))
		for i := range len(p) {
			node := start + int32(i)
			tr.tok = append(tr.tok, int32(p[i]))
			tr.prev = append(tr.prev, node-1)
			tr.next = append(tr.next, node+1)
			tr.freq = append(tr.freq, f)
			if i > 0 {
				k := pairKey(int32(p[i-1]), int32(p[i]))
				tr.count[k] += f
				tr.where[k] = append(tr.where[k], node-1)
			}
		}
		tr.prev[start] = -1
		tr.next[len(tr.next)-1] = -1
	}
	tr.heap = make(countHeap, 0, len(tr.count))
	for k, c := range tr.count {
		tr.heap = append(tr.heap, pairCount{c, k})
	}
	tr.heap.init()
	return tr
}

// best returns the pair to merge next: the most frequent, by the tie
// rule (see Train), whose token is not too long; false if none is left.
func (tr *trainer) best() (Pair, bool) {
	for len(tr.heap) > 0 {
		top := tr.heap.pop()
		if top.count <= 0 || tr.count[top.pair] != top.count || tr.tooLong[top.pair] {
			continue // stale: the pair's count has changed since
		}
		a, b := int32(top.pair>>32), int32(top.pair&0xffffffff)
		if tr.length[a]+tr.length[b] > MaxTokenBytes {
			tr.tooLong[top.pair] = true
			continue
		}
		return Pair{int(a), int(b)}, true
	}
	return Pair{}, false
}

// merge joins every occurrence of p into token id, from left to right
// within each piece, and updates the counts of the pairs around them.
func (tr *trainer) merge(p Pair, id int32) {
	a, b := int32(p.Left), int32(p.Right)
	k := pairKey(a, b)
	nodes := tr.where[k]
	delete(tr.where, k)
	// Left to right within each piece: node numbers grow along a piece.
	slices.Sort(nodes)
	tr.length = append(tr.length, tr.length[a]+tr.length[b])
	tr.changed = tr.changed[:0]
	for i, x := range nodes {
		if i > 0 && x == nodes[i-1] {
			continue
		}
		y := tr.next[x]
		if tr.tok[x] != a || y < 0 || tr.tok[y] != b {
			continue // stale, or overlapping an occurrence just joined ("aaa")
		}
		f := tr.freq[x]
		tr.add(k, -f, -1)
		if w := tr.prev[x]; w >= 0 {
			tr.add(pairKey(tr.tok[w], a), -f, -1)
			tr.add(pairKey(tr.tok[w], id), f, w)
		}
		z := tr.next[y]
		if z >= 0 {
			tr.add(pairKey(b, tr.tok[z]), -f, -1)
			tr.add(pairKey(id, tr.tok[z]), f, x)
			tr.prev[z] = x
		}
		tr.tok[x], tr.tok[y] = id, dead
		tr.next[x] = z
	}
	slices.Sort(tr.changed)
	for _, c := range slices.Compact(tr.changed) {
		if n := tr.count[c]; n > 0 {
			tr.heap.push(pairCount{n, c})
		} else {
			delete(tr.count, c) // no occurrence is left: forget where it was
			delete(tr.where, c)
		}
	}
}

// add changes pair k's count by d, and notes that k may start at node
// at (at >= 0).
func (tr *trainer) add(k uint64, d int64, at int32) {
	tr.count[k] += d
	tr.changed = append(tr.changed, k)
	if at >= 0 {
		tr.where[k] = append(tr.where[k], at)
	}
}

// pairCount is a heap entry: a pair and its count when it was pushed.
type pairCount struct {
	count int64
	pair  uint64
}

// before is the heap's order, the tie rule: the larger count first, then
// the smaller pair (left id, then right id).
func (x pairCount) before(y pairCount) bool {
	return x.count > y.count || x.count == y.count && x.pair < y.pair
}

// countHeap is a binary heap of pairCounts, first by before at the root.
type countHeap []pairCount

func (h countHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *countHeap) push(x pairCount) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *countHeap) pop() pairCount {
	s := *h
	top := s[0]
	s[0] = s[len(s)-1]
	*h = s[:len(s)-1]
	h.down(0)
	return top
}

func (h countHeap) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
