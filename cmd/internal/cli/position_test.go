package cli

import "testing"

func TestAt(t *testing.T) {
	for _, tc := range []struct {
		text string
		pos  int
		want string
	}{
		{"the keeper", 0, "at character 0 (counting from 0)"},
		{"the keeper", 7, "at character 7 (counting from 0)"},
		// Lines and columns as an editor shows them, from 1: 'e' is the
		// third character of the second line.
		{"ab\ncde", 5, "at character 5 (counting from 0), line 2, column 3"},
		{"ab\ncde", 0, "at character 0 (counting from 0), line 1, column 1"},
		{"ab\ncde", 2, "at character 2 (counting from 0), line 1, column 3"}, // the newline ends line 1
		{"ab\ncde", 3, "at character 3 (counting from 0), line 2, column 1"},
		// Characters, not bytes: "é" is two bytes, one character.
		{"é\néz", 3, "at character 3 (counting from 0), line 2, column 2"},
		{"\n\n\nx", 3, "at character 3 (counting from 0), line 4, column 1"},
	} {
		if got := At(tc.text, tc.pos); got != tc.want {
			t.Errorf("At(%q, %d) = %q, want %q", tc.text, tc.pos, got, tc.want)
		}
	}
}
