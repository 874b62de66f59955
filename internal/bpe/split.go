package bpe

// This file holds the split of a text into pieces: GPT-2's pattern,
// written out by hand because Go's regexp has no lookahead.

import (
	"unicode"
	"unicode/utf8"
)

// Pattern is the regular expression, in the syntax of Python's regex
// module, whose matches are the pieces Split returns: GPT-2's. A piece
// is never merged with its neighbours, so a token never spans two.
const Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// class is what the pattern sees in one character.
type class uint8

const (
	classOther  class = iota // [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls, invalid bytes
	classLetter              // \p{L}
	classNumber              // \p{N}
	classSpace               // \s: Unicode's White_Space
)

// asciiClass is classify for the first 128 bytes.
var asciiClass = func() (t [128]class) {
	for c := range t {
		t[c] = classify(rune(c))
	}
	return t
}()

// classify returns r's class. unicode.IsSpace is Unicode's White_Space
// property, the set Python's regex module matches with \s (U+0085 and
// U+00A0 in, U+001C..U+001F and U+FEFF out).
func classify(r rune) class {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// classAt returns the class of the character at s[i] and its length in
// bytes. A byte that does not start a valid UTF-8 sequence is a
// character of one byte in classOther, as U+FFFD (the replacement
// character it would decode to) is.
func classAt(s string, i int) (class, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return classify(r), n
}

// pieceEnd returns the end of the piece that starts at s[i], i < len(s):
// the first alternative of Pattern that matches there, each quantifier
// as greedy as that alternative allows.
func pieceEnd(s string, i int) int {
	// 's 't 're 've 'm 'll 'd, in that order, case-sensitive.
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	// " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": the optional space is
	// taken only if a run of the class follows it, and the three classes
	// are disjoint, so the character after it picks the alternative.
	start := i
	if s[i] == ' ' && i+1 < len(s) {
		start = i + 1
	}
	if c, n := classAt(s, start); c != classSpace {
		j := start + n
		for j < len(s) {
			d, m := classAt(s, j)
			if d != c {
				break
			}
			j += m
		}
		return j
	}
	// The text at i is whitespace (a space followed by whitespace, or any
	// other white space character): take the whole run.
	// "\s+(?!\S)": the longest run not followed by a non-space: the whole
	// run at the end of the text, else the run less its last character.
	// "\s+": a single whitespace character before a non-space.
	j, last := i, i
	for j < len(s) {
		c, n := classAt(s, j)
		if c != classSpace {
			break
		}
		last = j
		j += n
	}
	if j == len(s) || last == i {
		return j
	}
	return last
}

// Split returns the pieces of text that GPT-2's pattern (Pattern)
// matches, in order; they are substrings of text and join to it exactly.
// Any bytes are accepted: a byte outside valid UTF-8 is a character of
// its own that is neither a letter, a number nor white space, as U+FFFD
// would be, so it joins a run of punctuation ("?\xff!" is one piece) and
// its byte is kept as it is.
func Split(text string) []string {
	var pieces []string
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		pieces = append(pieces, text[i:j])
		i = j
	}
	return pieces
}
