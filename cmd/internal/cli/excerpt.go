package cli

// This file holds Excerpt, the bit of text shown around a position an
// error names.

import "strconv"

// Excerpt quotes at most radius characters on each side of character pos
// (counted in runes from 0) of s, with "…" where s goes on, so that an
// error about one character of a 100 KB prompt is one readable line:
//
//	Excerpt("the lamp keeper", 4, 3) == `…"he lamp"…`
func Excerpt(s string, pos, radius int) string {
	r := []rune(s)
	pos = max(0, min(pos, len(r)))
	lo, hi := max(0, pos-radius), min(len(r), pos+radius+1)
	q := strconv.Quote(string(r[lo:hi]))
	if lo > 0 {
		q = "…" + q
	}
	if hi < len(r) {
		q += "…"
	}
	return q
}
