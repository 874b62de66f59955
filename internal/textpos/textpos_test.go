package textpos

import "testing"

func TestAt(t *testing.T) {
	for _, c := range []struct {
		text string
		pos  int
		want string
	}{
		{"abc", 0, "at character 0 (counting from 0)"},
		{"abc", 2, "at character 2 (counting from 0)"},
		{"ab\ncd", 0, "at character 0 (counting from 0), line 1, column 1"},
		{"ab\ncd", 2, "at character 2 (counting from 0), line 1, column 3"}, // the newline itself
		{"ab\ncd", 3, "at character 3 (counting from 0), line 2, column 1"},
		{"é\nœx", 3, "at character 3 (counting from 0), line 2, column 2"}, // characters, not bytes
	} {
		if got := At(c.text, c.pos); got != c.want {
			t.Errorf("At(%q, %d) = %q, want %q", c.text, c.pos, got, c.want)
		}
	}
}
