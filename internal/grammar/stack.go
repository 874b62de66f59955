// Sets of parse stacks, shared and interned: what a grammar state holds
// below each of its positions.

package grammar

// stackSet is a set of stacks of open rule calls, all of the same depth,
// in a canonical form: a trie from the top, its branches (frames) sorted
// by the state the caller resumes at, each resume state once. Two sets of
// the same stacks are one object (within a cache generation), so sets
// compare by pointer, and a state's representation depends on its content
// only, never on the order in which it was computed.
//
// nil is the empty set; bottom is the set holding only the empty stack
// (depth 0, the root rule's level).
type stackSet struct {
	top   []frameRef
	depth int32
	id    uint64
	gen   uint32
	cost  int64 // fewest units that unwind every frame of some stack
	fwd   *stackSet
	fwdAt uint32 // the generation fwd belongs to
}

// frameRef is one open call: the caller resumes at ret, over the stacks
// below.
type frameRef struct {
	ret   int32
	below *stackSet
}

var bottom = &stackSet{}

// setKey hashes a set's frames for interning.
func setKey(top []frameRef) uint64 {
	h := uint64(14695981039346656037)
	for _, f := range top {
		h = (h ^ uint64(uint32(f.ret))) * 1099511628211
		h = (h ^ f.below.id) * 1099511628211
	}
	return h
}

// internSet returns the interned set of frames top (sorted by ret, rets
// distinct, all below sets of depth-1).
func (m *Matcher) internSet(top []frameRef) *stackSet {
	c := m.c
	k := setKey(top)
	for _, s := range c.sets[k] {
		if framesEqual(s.top, top) {
			return s
		}
	}
	s := &stackSet{top: append([]frameRef(nil), top...), depth: top[0].below.depth + 1, id: c.newID(), gen: c.gen, cost: inf}
	for _, f := range top {
		s.cost = min(s.cost, satAdd(m.dist[f.ret], f.below.cost))
	}
	c.sets[k] = append(c.sets[k], s)
	c.bytes += 96 + 16*len(top)
	return s
}

func framesEqual(a, b []frameRef) bool {
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

// push returns the set of one frame: resume at ret over below.
func (m *Matcher) push(ret int32, below *stackSet) *stackSet {
	m.one[0] = frameRef{ret, below}
	return m.internSet(m.one[:])
}

// union returns the stacks of a or b (same depth).
func (m *Matcher) union(a, b *stackSet) *stackSet {
	switch {
	case a == b || b == nil:
		return a
	case a == nil:
		return b
	}
	k := [2]uint64{min(a.id, b.id), max(a.id, b.id)}
	if u, ok := m.c.unions[k]; ok {
		return u
	}
	top := make([]frameRef, 0, len(a.top)+len(b.top))
	i, j := 0, 0
	for i < len(a.top) || j < len(b.top) {
		switch {
		case j == len(b.top) || i < len(a.top) && a.top[i].ret < b.top[j].ret:
			top = append(top, a.top[i])
			i++
		case i == len(a.top) || b.top[j].ret < a.top[i].ret:
			top = append(top, b.top[j])
			j++
		default:
			top = append(top, frameRef{a.top[i].ret, m.union(a.top[i].below, b.top[j].below)})
			i++
			j++
		}
	}
	u := m.internSet(top)
	m.c.unions[k] = u
	m.c.bytes += 48
	return u
}

// diff returns the stacks of a not in b (same depth), nil when none.
func (m *Matcher) diff(a, b *stackSet) *stackSet {
	switch {
	case a == nil || a == b:
		return nil
	case b == nil:
		return a
	}
	k := [2]uint64{a.id, b.id}
	if d, ok := m.c.diffs[k]; ok {
		return d
	}
	var top []frameRef
	j := 0
	for _, f := range a.top {
		for j < len(b.top) && b.top[j].ret < f.ret {
			j++
		}
		if j == len(b.top) || b.top[j].ret != f.ret {
			top = append(top, f)
			continue
		}
		if d := m.diff(f.below, b.top[j].below); d != nil {
			top = append(top, frameRef{f.ret, d})
		}
	}
	var d *stackSet
	if len(top) > 0 {
		d = m.internSet(top)
	}
	m.c.diffs[k] = d
	m.c.bytes += 48
	return d
}

// translate returns s interned in the current generation.
func (m *Matcher) translate(s *stackSet) *stackSet {
	if s == bottom || s.gen == m.c.gen {
		return s
	}
	if s.fwd != nil && s.fwdAt == m.c.gen {
		return s.fwd
	}
	top := make([]frameRef, len(s.top))
	for i, f := range s.top {
		top[i] = frameRef{f.ret, m.translate(f.below)}
	}
	t := m.internSet(top)
	s.fwd, s.fwdAt = t, m.c.gen
	return t
}
