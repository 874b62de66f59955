// A Matcher's steps: the node after a character or a byte, partial
// characters of several bytes, and the mask walk over the token trie.

package grammar

import "math/bits"

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
