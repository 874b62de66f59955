package cli

// This file holds the one way every command names a position in its
// input, and the check of a text against a vocabulary that uses it.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/internal/textpos"
)

// At names character pos of text, counted in characters (runes) from 0,
// as every command's errors do (internal/textpos): "at character 7
// (counting from 0)"; when text has more than one line, with the line and
// column as an editor counts them, from 1: "at character 7 (counting from
// 0), line 2, column 3". The playground's messages say the same.
func At(text string, pos int) string { return textpos.At(text, pos) }

// CheckText reports the first thing in text that vocab cannot encode,
// with its position (At) and an excerpt around it, as one line however
// long the text: bytes that are not UTF-8, or a character outside vocab
// (a nil vocab checks only the UTF-8). The error wraps
// minigpt.ErrBadText; the caller prefixes the flag.
func CheckText(text string, vocab *minigpt.Vocab) error {
	var known map[rune]bool
	if vocab != nil {
		known = make(map[rune]bool, vocab.Size())
		for _, c := range vocab.Chars() {
			known[c] = true
		}
	}
	pos := 0
	for off, c := range text {
		switch {
		case c == utf8.RuneError && !strings.HasPrefix(text[off:], "\uFFFD"):
			return fmt.Errorf("%w: not valid UTF-8 (byte offset %d) %s, in %s", minigpt.ErrBadText, off, At(text, pos), Excerpt(text, pos, 20))
		case known != nil && !known[c]:
			msg := fmt.Sprintf("%q (%U) %s is not in the model's vocabulary, in %s", c, c, At(text, pos), Excerpt(text, pos, 20))
			if chars := vocab.Chars(); len(chars) <= 100 {
				msg += fmt.Sprintf("; the model knows %q", string(chars))
			}
			return fmt.Errorf("%w: %s", minigpt.ErrBadText, msg)
		}
		pos++
	}
	return nil
}
