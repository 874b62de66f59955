// The interned states of a Matcher: the node behind each State, and the
// cache generation that interns, finds again and flushes them.

package grammar

import "math/bits"

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
