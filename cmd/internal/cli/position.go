package cli

// This file holds the one way every command names a position in its
// input.

import (
	"fmt"
	"strings"
)

// At names character pos of text, counted in characters (runes) from 0,
// as every command's errors do: "at character 7 (counting from 0)"; when
// text has more than one line, with the line and column as an editor
// counts them, from 1: "at character 7 (counting from 0), line 2,
// column 3". The playground's messages say the same.
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
