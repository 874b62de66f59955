// Package textpos names a position in a text the one way every error of
// the module does: "at character 7 (counting from 0)", and, when the text
// has more than one line, ", line 2, column 3" (from 1, as editors count).
package textpos

import (
	"fmt"
	"strings"
)

// At names character pos of text, counted in characters (runes) from 0,
// with its line and column when text has more than one line.
func At(text string, pos int) string {
	s := fmt.Sprintf("at character %d (counting from 0)", pos)
	if !strings.Contains(text, "\n") {
		return s
	}
	line, col, i := 1, 1, 0
	for _, c := range text {
		if i == pos {
			break
		}
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i++
	}
	return fmt.Sprintf("%s, line %d, column %d", s, line, col)
}
