package server

// This file owns generated text as a response writes it: JSON string
// content written as encoding/json escapes it (bytes that are not UTF-8
// as U+FFFD), and the character each token begins in (text_offset).

import (
	"encoding/json"
	"unicode/utf8"
)

// asciiEscapes is each ASCII byte as encoding/json writes it inside a
// string ("\n", "\u003c", or the byte itself).
var asciiEscapes = func() (t [utf8.RuneSelf]string) {
	for b := range t {
		j, _ := json.Marshal(string(rune(b)))
		t[b] = string(j[1 : len(j)-1])
	}
	return t
}()

// appendJSONText appends s as JSON string content, without the quotes,
// byte for byte as encoding/json writes it: HTML's <, > and & escaped,
// U+2028 and U+2029 escaped, and every byte that does not begin a valid
// UTF-8 character written as one U+FFFD (utf8.DecodeRune's reading, so
// each counts as one character of the text).
func appendJSONText[S string | []byte](dst []byte, s S) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if e := asciiEscapes[c]; len(e) != 1 {
				dst = append(append(dst, s[start:i]...), e...)
				start = i + 1
			}
			i++
			continue
		}
		r, n := decodeAt(s, i)
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028':
			dst = append(append(dst, s[start:i]...), `\u2028`...)
		case r == '\u2029':
			dst = append(append(dst, s[start:i]...), `\u2029`...)
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	return append(dst, s[start:]...)
}

// countChars is the number of characters of text as a response writes it:
// utf8.DecodeRune's steps, a byte that begins no valid character counting
// as one (it is written as U+FFFD).
func countChars[S string | []byte](text S) int {
	n := 0
	for i := 0; i < len(text); n++ {
		_, size := decodeAt(text, i)
		i += size
	}
	return n
}

// decodeAt is utf8.DecodeRune of s[i:].
func decodeAt[S string | []byte](s S, i int) (rune, int) {
	if t, ok := any(s).(string); ok {
		return utf8.DecodeRuneInString(t[i:])
	}
	return utf8.DecodeRune(any(s).([]byte)[i:])
}

// charOffsets appends, for each token of ids (whose bytes, tokens[id],
// follow one another from the start of text), base plus the index of the
// character of text that the token's first byte is in: OpenAI's
// text_offset, in characters. A token that begins inside a character
// (the rest of one a token before it began) gets that character's index;
// a token past the end of text (none should be) the character count.
func charOffsets[S string | []byte](dst []int, text S, ids []int, tokens []string, base int) []int {
	_, size := decodeAt(text, 0) // the character at byte pos, its size in bytes and its index
	pos, index := 0, 0
	at := 0 // the token's first byte
	for _, id := range ids {
		for size > 0 && at >= pos+size {
			pos += size
			index++
			_, size = decodeAt(text, pos)
		}
		dst = append(dst, base+index)
		at += len(tokens[id])
	}
	return dst
}
