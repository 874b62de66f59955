// Sets of code points as sorted ranges: the labels of the automaton's
// character edges.

package grammar

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// runeRange is the inclusive range lo..hi of code points.
type runeRange struct{ lo, hi rune }

// runeSet is a set of code points: sorted, disjoint, non-adjacent ranges.
type runeSet []runeRange

// validRunes is every code point a UTF-8 text can hold (no surrogates).
var validRunes = runeSet{{0, 0xD7FF}, {0xE000, utf8.MaxRune}}

// allRunes is every code point, surrogates included, as regexp/syntax
// counts them.
var allRunes = runeSet{{0, utf8.MaxRune}}

// makeSet normalizes ranges (in any order, possibly overlapping) into a
// runeSet, clipping them to 0..MaxRune.
func makeSet(rs []runeRange) runeSet {
	rs = slices.Clone(rs)
	n := 0
	for _, r := range rs {
		r.lo, r.hi = max(r.lo, 0), min(r.hi, utf8.MaxRune)
		if r.lo <= r.hi {
			rs[n] = r
			n++
		}
	}
	rs = rs[:n]
	slices.SortFunc(rs, func(a, b runeRange) int { return int(a.lo) - int(b.lo) })
	out := runeSet{}
	for _, r := range rs {
		if k := len(out) - 1; k >= 0 && r.lo <= out[k].hi+1 {
			out[k].hi = max(out[k].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// single is the set of one code point.
func single(r rune) runeSet { return runeSet{{r, r}} }

func (s runeSet) empty() bool { return len(s) == 0 }

// contains reports whether r is in s.
func (s runeSet) contains(r rune) bool {
	i, j := 0, len(s)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s[h].hi < r {
			i = h + 1
		} else {
			j = h
		}
	}
	return i < len(s) && s[i].lo <= r
}

// meets reports whether s holds a code point in lo..hi.
func (s runeSet) meets(lo, hi rune) bool {
	i, j := 0, len(s)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s[h].hi < lo {
			i = h + 1
		} else {
			j = h
		}
	}
	return i < len(s) && s[i].lo <= hi
}

// intersects reports whether s and t share a code point.
func (s runeSet) intersects(t runeSet) bool {
	i, j := 0, 0
	for i < len(s) && j < len(t) {
		switch {
		case s[i].hi < t[j].lo:
			i++
		case t[j].hi < s[i].lo:
			j++
		default:
			return true
		}
	}
	return false
}

func (s runeSet) intersect(t runeSet) runeSet {
	var out runeSet
	i, j := 0, 0
	for i < len(s) && j < len(t) {
		lo, hi := max(s[i].lo, t[j].lo), min(s[i].hi, t[j].hi)
		if lo <= hi {
			out = append(out, runeRange{lo, hi})
		}
		if s[i].hi < t[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// complement is every code point (0..MaxRune) outside s.
func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, runeRange{next, utf8.MaxRune})
	}
	return out
}

func (s runeSet) minus(t runeSet) runeSet { return s.intersect(t.complement()) }

func (s runeSet) equal(t runeSet) bool { return slices.Equal(s, t) }

// String writes s for a message: 'x' for one character, else a class such
// as [0-9a-f] or, when that is shorter, its negation [^"\\].
func (s runeSet) String() string {
	s = s.intersect(validRunes)
	if len(s) == 1 && s[0].lo == s[0].hi {
		return quoteRune(s[0].lo)
	}
	neg := s.complement().intersect(validRunes)
	if len(neg) < len(s) {
		return "[^" + classBody(neg) + "]"
	}
	return "[" + classBody(s) + "]"
}

func classBody(s runeSet) string {
	var b strings.Builder
	for i, r := range s {
		if i == 8 {
			b.WriteString("...")
			break
		}
		b.WriteString(classRune(r.lo))
		if r.hi > r.lo {
			if r.hi > r.lo+1 {
				b.WriteByte('-')
			}
			b.WriteString(classRune(r.hi))
		}
	}
	return b.String()
}

// quoteRune writes r between single quotes, escaping what is not
// printable.
func quoteRune(r rune) string {
	q := fmt.Sprintf("%q", r)
	return q
}

func classRune(r rune) string {
	switch r {
	case '\\', ']', '[', '-', '^':
		return `\` + string(r)
	}
	q := quoteRune(r)
	return q[1 : len(q)-1]
}
