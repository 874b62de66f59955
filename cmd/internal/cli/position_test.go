package cli

import (
	"errors"
	"strings"
	"testing"

	"example.org/minigpt"
)

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

func TestCheckText(t *testing.T) {
	vocab, err := minigpt.NewVocab("abc \n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text  string
		vocab *minigpt.Vocab
		want  string // "" for no error
	}{
		{"abc cab", vocab, ""},
		{"abc\ncaZb", vocab, `unusable text: 'Z' (U+005A) at character 6 (counting from 0), line 2, column 3 is not in the model's vocabulary, in "abc\ncaZb"; the model knows "\n abc"`},
		{"ab é", vocab, `'é' (U+00E9) at character 3 (counting from 0) is not in the model's vocabulary`},
		// A real U+FFFD is a character like any other.
		{"ab\uFFFD", nil, ""},
		{"ab\uFFFD", vocab, `'�' (U+FFFD) at character 2 (counting from 0)`},
		// Bytes that are not UTF-8 are named by the character they stand
		// in for, and their byte offset.
		{"aé\xffb", nil, `unusable text: not valid UTF-8 (byte offset 3) at character 2 (counting from 0), in "aé�b"`},
		{"a\nb\xc3", vocab, `not valid UTF-8 (byte offset 3) at character 3 (counting from 0), line 2, column 2, in`},
	} {
		err := CheckText(tc.text, tc.vocab)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckText(%q): %v", tc.text, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, minigpt.ErrBadText)):
			t.Errorf("CheckText(%q) = %v, want an ErrBadText with %q", tc.text, err, tc.want)
		}
	}
}
