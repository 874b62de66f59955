// Matcher: a Grammar bound to a vocabulary, with the per-sample State and
// the masks of allowed tokens.

package grammar

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
)

// Matcher is a Grammar bound to one vocabulary. It is immutable in what it
// answers and safe for concurrent use: its cache of states, masks and
// transitions sits behind a mutex, and every answer is a function of the
// State asked about alone, whatever else ran before or at the same time.
type Matcher struct {
	g    *Grammar
	v    *vocab
	need []int32 // per state: frames finishing its rule must open (analysis.go)
	dist []int64 // per state: fewest base units that finish its rule

	mu     sync.Mutex
	c      *cache
	sc     scratch
	one    [1]frameRef
	start  *node
	budget int // cache bytes before a flush (MaxCacheBytes; tests lower it)
}

// State is where one sample stands in the constraint: a small value the
// sampler owns and replaces with each Advance. The zero State is not
// valid; Start gives the first.
type State struct{ n *node }

// node is the content of a State, interned: the parse items, whether the
// text so far is a whole match, and the bytes of a character a token left
// unfinished. The content never changes; the caches do.
type node struct {
	owner  *Matcher
	items  []item // by ascending (pos, depth)
	accept bool   // the root rule may end here
	npend  uint8
	pend   [3]byte
	base   *node // with npend > 0: the node without the partial character
	id     uint64
	gen    uint32
	rem    int64 // fewest base units that complete the text (Remaining)

	// Caches of this generation, nil after a flush.
	rnext []*node         // by character class (npend == 0): nil not yet known, dead for none
	rmap  map[int32]*node // rnext when the grammar has too many classes for a slice
	bnext *[256]*node     // by byte: lead bytes, continuation bytes; nil, dead likewise
	mask  []uint64        // allowed tokens
	succ  []*node         // the state after each allowed token, in id order
	rank  []int32         // rank[w]: allowed tokens below id 64*w
	count int             // allowed tokens
	most  int64           // the largest rem of a successor

	fwd   *node
	fwdAt uint32
}

// after returns the node after allowed token id: succ is in id order,
// so its index is the number of allowed tokens below id.
func (n *node) after(id int32) *node { return n.succ[n.index(id)] }

func (n *node) index(id int32) int32 {
	w := id >> 6
	return n.rank[w] + int32(bits.OnesCount64(n.mask[w]&(1<<(id&63)-1)))
}

// successor is a token the mask walk found allowed, and the node after it.
type successor struct {
	id   int32
	next *node
}

// item is one parse position: the automaton state pos, with the stacks of
// open calls it may return through.
type item struct {
	pos int32
	ss  *stackSet
}

// cache holds one generation of interned sets and nodes.
type cache struct {
	gen    uint32
	bytes  int
	lastID uint64
	nodes  map[uint64][]*node
	pends  map[pendKey]*node
	sets   map[uint64][]*stackSet
	unions map[[2]uint64]*stackSet
	diffs  map[[2]uint64]*stackSet
	all    []*node
}

type pendKey struct {
	base  uint64
	npend uint8
	pend  [3]byte
}

func newCache(gen uint32) *cache {
	return &cache{
		gen:    gen,
		nodes:  map[uint64][]*node{},
		pends:  map[pendKey]*node{},
		sets:   map[uint64][]*stackSet{},
		unions: map[[2]uint64]*stackSet{},
		diffs:  map[[2]uint64]*stackSet{},
	}
}

func (c *cache) newID() uint64 {
	c.lastID++
	return c.lastID
}

// Bind ties g to a vocabulary: tokens[i] is the text of token i, as
// bytes. A token may be one character, several, or part of one (a
// byte-level BPE token); a token of no bytes is never allowed (pass nil
// for special tokens the constraint must never allow). Bind refuses, with
// an error wrapping ErrUnsatisfiable that names the missing characters, a
// constraint that no text over the vocabulary completes. It is
// NewVocabulary then BindVocabulary; a server binding many constraints to
// one model prepares the vocabulary once.
func (g *Grammar) Bind(tokens [][]byte) (*Matcher, error) {
	v, err := NewVocabulary(tokens)
	if err != nil {
		return nil, err
	}
	return g.BindVocabulary(v)
}

// BindVocabulary is Bind for a prepared vocabulary.
func (g *Grammar) BindVocabulary(voc *Vocabulary) (*Matcher, error) {
	v := voc.v
	m := &Matcher{g: g, v: v, budget: MaxCacheBytes}
	m.need = g.need(v.prod)
	unit := make([]int64, len(g.sets))
	for i, s := range g.sets {
		unit[i] = v.unitCost(s)
	}
	m.dist = g.distance(unit)
	m.c = newCache(0)
	m.sc.init(len(g.states))
	if start := g.rules[g.root].start; int(m.need[start]) > MaxStackDepth {
		return nil, m.unsatisfiable()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.startNode()
	if err == nil && n == nil {
		err = m.unsatisfiable()
	}
	if err == nil {
		err = m.fillMask(n)
	}
	if err != nil {
		return nil, err
	}
	m.start = n
	return m, nil
}

// bindBudget is Bind with a cache budget of its own, for tests of the
// flush.
func (g *Grammar) bindBudget(tokens [][]byte, budget int) (*Matcher, error) {
	m, err := g.Bind(tokens)
	if m != nil {
		m.budget = budget
	}
	return m, err
}

// unsatisfiable explains why no text over the vocabulary completes g.
func (m *Matcher) unsatisfiable() error {
	g := m.g
	sets, more, total := g.missing(m.v.prod, 4)
	verb := "needs"
	if strings.HasSuffix(g.noun, "s") {
		verb = "need"
	}
	if total == 0 {
		return fmt.Errorf("%w: %s %s rule calls nested deeper than the cap of %d", ErrUnsatisfiable, g.noun, verb, MaxStackDepth)
	}
	var parts []string
	for _, s := range sets {
		if len(s) == 1 && s[0].lo == s[0].hi {
			parts = append(parts, s.String())
		} else {
			parts = append(parts, "one of "+s.String())
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("%w: %s %s characters the model never writes", ErrUnsatisfiable, g.noun, verb)
	}
	if more {
		parts = append(parts, "more")
	}
	list := parts[0]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return fmt.Errorf("%w: %s %s %s, which the model never writes", ErrUnsatisfiable, g.noun, verb, list)
}

// Start returns the state before any token.
func (m *Matcher) Start() State { return State{m.start} }

// VocabSize returns the number of tokens the matcher was bound to.
func (m *Matcher) VocabSize() int { return m.v.size }

// Complete reports whether the text of s is a whole match.
func (m *Matcher) Complete(s State) bool {
	return s.n != nil && s.n.owner == m && s.n.accept && s.n.npend == 0
}

// MustEnd reports whether the text of s is a whole match that no token
// may extend: the sampler then stops with finish reason "stop".
func (m *Matcher) MustEnd(s State) bool {
	if !m.Complete(s) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	return err == nil && n.count == 0
}

// Remaining returns the fewest tokens that complete the text of s: 0 when
// it is complete. It counts base units (tokens of one character or one
// byte), so a completion of that many tokens exists; one using longer
// tokens may be shorter. It ignores MaxStackDepth, which only a completion
// nesting rule calls past the cap could make wrong.
func (m *Matcher) Remaining(s State) int {
	if s.n == nil || s.n.owner != m || s.n.rem == inf {
		return -1
	}
	return int(min(s.n.rem, int64(^uint(0)>>1)))
}

// Allowed sets mask[i] to whether token i may come next: exactly the
// tokens after which the text can still be completed over the vocabulary
// (see the package documentation for when this is exact). mask must have
// VocabSize entries.
func (m *Matcher) Allowed(s State, mask []bool) error {
	return m.AllowedWithin(s, -1, mask)
}

// AllowedWithin is Allowed, less the tokens after which no completion of
// at most budget tokens in all (this one included) exists, by the count of
// Remaining; budget < 0 means no bound. A sampler that passes the tokens
// it has left completes the text by its last token whenever
// Remaining(Start()) fitted.
func (m *Matcher) AllowedWithin(s State, budget int, mask []bool) error {
	if len(mask) != m.v.size {
		return fmt.Errorf("%w: mask of %d entries for a vocabulary of %d", ErrNotAllowed, len(mask), m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return err
	}
	clear(mask)
	if budget == 0 {
		return nil
	}
	all := budget < 0 || int64(budget-1) >= n.most
	for w, word := range n.mask {
		for word != 0 {
			i := w<<6 + bits.TrailingZeros64(word)
			word &= word - 1
			mask[i] = all || n.after(int32(i)).rem <= int64(budget-1)
		}
	}
	return nil
}

// AllowedBits is Allowed into a bitset, for large vocabularies: bit
// i%64 of mask[i/64] is set when token i may come next. mask must have
// (VocabSize+63)/64 words.
func (m *Matcher) AllowedBits(s State, mask []uint64) error {
	if len(mask) != (m.v.size+63)/64 {
		return fmt.Errorf("%w: mask of %d words for a vocabulary of %d", ErrNotAllowed, len(mask), m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return err
	}
	copy(mask, n.mask)
	return nil
}

// Allows reports whether token tok may come next in s.
func (m *Matcher) Allows(s State, tok int) bool {
	if tok < 0 || tok >= m.v.size {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	return err == nil && n.mask[tok>>6]&(1<<(tok&63)) != 0
}

// Advance returns the state after token tok. A token Allowed does not
// allow is an error wrapping ErrNotAllowed. The error wraps ErrTooComplex
// when the next state, or one a token could lead to from it, would hold
// more than MaxItems items; that depends on the state alone.
func (m *Matcher) Advance(s State, tok int) (State, error) {
	if tok < 0 || tok >= m.v.size {
		return State{}, fmt.Errorf("%w: token %d outside the vocabulary of %d", ErrNotAllowed, tok, m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return State{}, err
	}
	if n.mask[tok>>6]&(1<<(tok&63)) == 0 {
		return State{}, fmt.Errorf("%w: token %d cannot follow here", ErrNotAllowed, tok)
	}
	next := n.after(int32(tok))
	// Compute the next mask now, so that an error surfaces here and
	// Allowed, MustEnd never meet one.
	if next.mask == nil {
		if err := m.fillMask(next); err != nil {
			return State{}, err
		}
	}
	return State{next}, nil
}

var errBadState = fmt.Errorf("%w: state of another matcher, or the zero State", ErrNotAllowed)

// ready returns the node of s in the current generation with its mask,
// flushing the cache first when it is over budget. m.mu is held.
func (m *Matcher) ready(s State) (*node, error) {
	if s.n == nil || s.n.owner != m {
		return nil, errBadState
	}
	if m.c.bytes > m.budget {
		m.flush()
	}
	n := m.resolve(s.n)
	if n.mask == nil {
		if err := m.fillMask(n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// flush starts a new generation of the cache: every node of the old one
// drops its caches (its content stays, for the States that hold it).
func (m *Matcher) flush() {
	for _, n := range m.c.all {
		n.rnext, n.rmap, n.bnext, n.mask, n.succ, n.rank = nil, nil, nil, nil, nil, nil
	}
	m.c = newCache(m.c.gen + 1)
}

// resolve returns n's content interned in the current generation.
func (m *Matcher) resolve(n *node) *node {
	if n.gen == m.c.gen {
		return n
	}
	if n.fwd != nil && n.fwdAt == m.c.gen {
		return n.fwd
	}
	var t *node
	if n.npend > 0 {
		t = m.pendNode(m.resolve(n.base), n.pend, n.npend)
	} else {
		items := make([]item, len(n.items))
		for i, it := range n.items {
			items[i] = item{it.pos, m.translate(it.ss)}
		}
		t = m.internNode(items, n.accept)
	}
	n.fwd, n.fwdAt = t, m.c.gen
	return t
}

func nodeKey(items []item, accept bool) uint64 {
	h := uint64(14695981039346656037)
	if accept {
		h = (h ^ 1) * 1099511628211
	}
	for _, it := range items {
		h = (h ^ uint64(uint32(it.pos))) * 1099511628211
		h = (h ^ it.ss.id) * 1099511628211
	}
	return h
}

// internNode returns the node of items (sorted) and accept, with no
// partial character.
func (m *Matcher) internNode(items []item, accept bool) *node {
	c := m.c
	k := nodeKey(items, accept)
	for _, n := range c.nodes[k] {
		if n.accept == accept && itemsEqual(n.items, items) {
			return n
		}
	}
	n := &node{owner: m, items: append([]item(nil), items...), accept: accept, id: c.newID(), gen: c.gen, rem: inf}
	if accept {
		n.rem = 0
	} else {
		for _, it := range items {
			n.rem = min(n.rem, satAdd(m.dist[it.pos], it.ss.cost))
		}
	}
	c.nodes[k] = append(c.nodes[k], n)
	c.all = append(c.all, n)
	c.bytes += 256 + 16*len(items)
	return n
}

func itemsEqual(a, b []item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pendNode returns the node of base with the partial character p[:np]
// read. The caller has checked that some character it begins can follow.
func (m *Matcher) pendNode(base *node, p [3]byte, np uint8) *node {
	k := pendKey{base.id, np, p}
	if n, ok := m.c.pends[k]; ok {
		return n
	}
	n := &node{owner: m, items: base.items, npend: np, pend: p, base: base, id: m.c.newID(), gen: m.c.gen, rem: inf}
	if m.v.contFull {
		lo, hi := pendRange(p[:np])
		left := int64(seqLen(p[0]) - int(np))
		for _, it := range base.items {
			for _, e := range m.g.states[it.pos].runes {
				if m.g.sets[e.set].meets(lo, hi) && m.live(e.to, it.ss.depth) {
					n.rem = min(n.rem, satAdd(left, satAdd(m.dist[e.to], it.ss.cost)))
				}
			}
		}
	}
	m.c.pends[k] = n
	m.c.all = append(m.c.all, n)
	m.c.bytes += 256
	return n
}

// live reports whether state q at depth d can still finish its rule, and
// so the whole text, within the stack cap using base units.
func (m *Matcher) live(q int32, d int32) bool {
	return int(m.need[q]) <= MaxStackDepth-int(d)
}

// startNode computes the node before any token; nil when dead.
func (m *Matcher) startNode() (*node, error) {
	m.sc.begin()
	if err := m.add(m.g.rules[m.g.root].start, bottom); err != nil {
		return nil, err
	}
	return m.closeNode()
}

// dead marks, in a cache of transitions, a step after which no text
// continues.
var dead = &node{}

// denseClasses is the most character classes for which a node keeps its
// transitions in a slice rather than a map.
const denseClasses = 256

// runeStep returns the node after reading r in n (npend == 0), nil when
// no text continues that way.
func (m *Matcher) runeStep(n *node, r rune) (*node, error) {
	cls := m.g.class(r)
	var next *node
	if n.rnext != nil {
		next = n.rnext[cls]
	} else if n.rmap != nil {
		next = n.rmap[cls]
	}
	if next == dead {
		return nil, nil
	}
	if next != nil {
		return next, nil
	}
	m.sc.begin()
	for _, it := range n.items {
		for _, e := range m.g.states[it.pos].runes {
			if m.g.sets[e.set].contains(r) {
				if err := m.add(e.to, it.ss); err != nil {
					return nil, err
				}
			}
		}
	}
	next, err := m.closeNode()
	if err != nil {
		return nil, err
	}
	mark := next
	if next == nil {
		mark = dead
	}
	switch {
	case len(m.g.bounds) <= denseClasses:
		if n.rnext == nil {
			n.rnext = make([]*node, len(m.g.bounds))
			m.c.bytes += 8 * len(m.g.bounds)
		}
		n.rnext[cls] = mark
	default:
		if n.rmap == nil {
			n.rmap = map[int32]*node{}
		}
		n.rmap[cls] = mark
		m.c.bytes += 48
	}
	return next, nil
}

// byteStep returns the node after reading byte b in n, nil when no text
// continues that way (invalid UTF-8 included).
func (m *Matcher) byteStep(n *node, b byte) (*node, error) {
	if n.npend == 0 && b < 0x80 {
		return m.runeStep(n, rune(b))
	}
	if n.bnext != nil {
		if next := n.bnext[b]; next == dead {
			return nil, nil
		} else if next != nil {
			return next, nil
		}
	}
	next, err := m.partialStep(n, b)
	if err != nil {
		return nil, err
	}
	if n.bnext == nil {
		n.bnext = new([256]*node)
		m.c.bytes += 8 * 256
	}
	n.bnext[b] = next
	if next == nil {
		n.bnext[b] = dead
	}
	return next, nil
}

// partialStep reads a byte of a character of several bytes: it begins,
// continues or ends a partial character.
func (m *Matcher) partialStep(n *node, b byte) (*node, error) {
	if n.npend == 0 {
		p := [3]byte{b}
		if seqLen(b) < 2 || !m.canBegin(n, p[:1]) {
			return nil, nil
		}
		return m.pendNode(n, p, 1), nil
	}
	p, np := n.pend, n.npend
	if lo, hi := contRange(p[:np]); b < lo || b > hi {
		return nil, nil
	}
	if int(np)+1 == seqLen(p[0]) {
		var full [4]byte
		copy(full[:], p[:np])
		full[np] = b
		return m.runeStep(n.base, decodeRune(full[:np+1]))
	}
	p[np] = b
	np++
	if !m.canBegin(n.base, p[:np]) {
		return nil, nil
	}
	return m.pendNode(n.base, p, np), nil
}

func decodeRune(p []byte) rune {
	var r rune
	switch len(p) {
	case 2:
		r = rune(p[0]&0x1F)<<6 | rune(p[1]&0x3F)
	case 3:
		r = rune(p[0]&0x0F)<<12 | rune(p[1]&0x3F)<<6 | rune(p[2]&0x3F)
	case 4:
		r = rune(p[0]&0x07)<<18 | rune(p[1]&0x3F)<<12 | rune(p[2]&0x3F)<<6 | rune(p[3]&0x3F)
	}
	return r
}

// canBegin reports whether some character beginning with the partial
// sequence p can be read in base and leave the text completable.
func (m *Matcher) canBegin(base *node, p []byte) bool {
	lo, hi := pendRange(p)
	for _, it := range base.items {
		for _, e := range m.g.states[it.pos].runes {
			if m.g.sets[e.set].meets(lo, hi) && m.live(e.to, it.ss.depth) {
				return true
			}
		}
	}
	return false
}

// fillMask computes which tokens n allows, walking the token trie: a
// token is allowed when the node after its bytes is alive and, if it ends
// inside a character, base units can finish that character.
func (m *Matcher) fillMask(n *node) error {
	v := m.v
	mask := make([]uint64, (v.size+63)/64)
	found := m.sc.found[:0]
	count, most := 0, int64(0)
	type visit struct {
		t int32
		n *node
	}
	stack := []visit{{0, n}}
	for len(stack) > 0 {
		at := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, kid := range v.kids[v.kidAt[at.t]:v.kidAt[at.t+1]] {
			next, err := m.byteStep(at.n, v.edge[kid])
			if err != nil {
				return err
			}
			if next == nil {
				continue
			}
			if next.npend == 0 || v.contFull {
				for _, id := range v.ids[v.idAt[kid]:v.idAt[kid+1]] {
					mask[id>>6] |= 1 << (id & 63)
					found = append(found, successor{id, next})
					count++
					most = max(most, next.rem)
				}
			}
			if v.kidAt[kid+1] > v.kidAt[kid] {
				stack = append(stack, visit{kid, next})
			}
		}
	}
	rank := make([]int32, len(mask))
	total := int32(0)
	for w, word := range mask {
		rank[w] = total
		total += int32(bits.OnesCount64(word))
	}
	n.mask, n.rank, n.count, n.most = mask, rank, count, most
	n.succ = make([]*node, count)
	for _, f := range found {
		n.succ[n.index(f.id)] = f.next
	}
	clear(found)
	m.sc.found = found[:0]
	m.c.bytes += 12*len(mask) + 8*count
	return nil
}

// errTooComplex is the closure's error past MaxItems.
var errTooComplex = fmt.Errorf("%w: a state would hold more than %d parse items", ErrTooComplex, MaxItems)
