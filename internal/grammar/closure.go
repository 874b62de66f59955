// The closure of a step: from the items a character (or the start)
// reaches, every item reachable without reading, through empty moves,
// rule calls and rule ends.

package grammar

import (
	"fmt"
	"slices"
)

// maxItems is MaxItems, lowered by tests.
var maxItems = MaxItems

// errTooComplex is the closure's error past MaxItems.
var errTooComplex = fmt.Errorf("%w: a state would hold more than %d parse items", ErrTooComplex, MaxItems)

// scratch is the closure's working memory, reused by every step (m.mu is
// held), so a step allocates only for what it interns.
type scratch struct {
	stamp  []uint32 // per state: == cur when head[s] is valid
	head   []int32  // per state: first entry of that state
	cur    uint32
	ents   []entry
	work   []work
	items  []item
	accept bool
	found  []successor // the mask walk's allowed tokens
}

// entry is one (state, depth) of the closure with every stack found so
// far; entries of one state are chained.
type entry struct {
	pos   int32
	ss    *stackSet
	depth int32
	next  int32
}

// work is stacks newly added at a state, still to be followed.
type work struct {
	pos int32
	ss  *stackSet
}

func (sc *scratch) init(n int) {
	sc.stamp = make([]uint32, n)
	sc.head = make([]int32, n)
}

func (sc *scratch) begin() {
	sc.cur++
	if sc.cur == 0 {
		clear(sc.stamp)
		sc.cur = 1
	}
	sc.ents = sc.ents[:0]
	sc.work = sc.work[:0]
	sc.accept = false
}

// add puts the stacks ss at state q into the closure and follows what is
// new of them, unless q cannot finish from that depth.
func (m *Matcher) add(q int32, ss *stackSet) error {
	if err := m.put(q, ss); err != nil {
		return err
	}
	for len(m.sc.work) > 0 {
		w := m.sc.work[len(m.sc.work)-1]
		m.sc.work = m.sc.work[:len(m.sc.work)-1]
		if err := m.follow(w); err != nil {
			return err
		}
	}
	return nil
}

// put records ss at q and queues the part of it that is new.
func (m *Matcher) put(q int32, ss *stackSet) error {
	sc := &m.sc
	if ss == nil || !m.live(q, ss.depth) {
		return nil
	}
	idx := int32(-1)
	if sc.stamp[q] == sc.cur {
		for i := sc.head[q]; i >= 0; i = sc.ents[i].next {
			if sc.ents[i].depth == ss.depth {
				idx = i
				break
			}
		}
	}
	delta := ss
	if idx < 0 {
		if len(sc.ents) >= maxItems {
			return errTooComplex
		}
		next := int32(-1)
		if sc.stamp[q] == sc.cur {
			next = sc.head[q]
		}
		sc.ents = append(sc.ents, entry{pos: q, ss: ss, depth: ss.depth, next: next})
		sc.stamp[q], sc.head[q] = sc.cur, int32(len(sc.ents)-1)
	} else {
		e := &sc.ents[idx]
		if delta = m.diff(ss, e.ss); delta == nil {
			return nil
		}
		e.ss = m.union(e.ss, delta)
	}
	sc.work = append(sc.work, work{q, delta})
	return nil
}

// follow takes the moves that read nothing from state w.pos with stacks
// w.ss.
func (m *Matcher) follow(w work) error {
	g := m.g
	st := &g.states[w.pos]
	for _, t := range st.eps {
		if err := m.put(t, w.ss); err != nil {
			return err
		}
	}
	d := int(w.ss.depth)
	for _, e := range st.refs {
		start := g.rules[e.rule].start
		if g.states[e.to].tail {
			// A call from which the caller can only end returns
			// straight to the caller's caller.
			if err := m.put(start, w.ss); err != nil {
				return err
			}
			continue
		}
		if d+1 > MaxStackDepth || int(m.need[e.to]) > MaxStackDepth-d || int(m.need[start]) > MaxStackDepth-d-1 {
			continue
		}
		if err := m.put(start, m.push(e.to, w.ss)); err != nil {
			return err
		}
	}
	if st.final {
		if w.ss == bottom {
			m.sc.accept = true
		} else {
			for _, f := range w.ss.top {
				if err := m.put(f.ret, f.below); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// closeNode interns the closure's items at states that read (the others
// have done their work), nil when the closure is empty and not accepting.
func (m *Matcher) closeNode() (*node, error) {
	sc := &m.sc
	sc.items = sc.items[:0]
	for _, e := range sc.ents {
		if len(m.g.states[e.pos].runes) > 0 {
			sc.items = append(sc.items, item{e.pos, e.ss})
		}
	}
	if len(sc.items) == 0 && !sc.accept {
		return nil, nil
	}
	slices.SortFunc(sc.items, func(a, b item) int {
		if a.pos != b.pos {
			return int(a.pos - b.pos)
		}
		return int(a.ss.depth - b.ss.depth)
	})
	return m.internNode(sc.items, sc.accept), nil
}
