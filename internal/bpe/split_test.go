package bpe

// This file holds Split's tests on bytes outside UTF-8 (testdata's
// split.golden covers text).

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Bytes outside valid UTF-8, which Python's regex never sees (testdata's
// goldens hold only text): each is a character of the class of U+FFFD,
// neither letter, number nor space.
func TestSplitInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"a\xffb", []string{"a", "\xff", "b"}},
		{" \xff!", []string{" \xff!"}},             // " ?[^\s\p{L}\p{N}]+"
		{"\xe2\x82", []string{"\xe2\x82"}},         // a truncated "€": two characters of one run
		{"\xe2\x82\xac", []string{"\xe2\x82\xac"}}, // the whole "€"
		{"é\xff1", []string{"é", "\xff", "1"}},     // letter, other, number
		{"\xff's", []string{"\xff'", "s"}},         // the run of others takes the apostrophe
		{"  \xff", []string{" ", " \xff"}},         // the lookahead: a space stays for the run
		{"x\xc3", []string{"x", "\xc3"}},           // a lead byte at the end
		{"\xed\xa0\x80", []string{"\xed\xa0\x80"}}, // a surrogate's bytes: three invalid bytes
		{"ab\xf0\x9f\x98", []string{"ab", "\xf0\x9f\x98"}},
	} {
		if got := Split(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// Split cuts any bytes where it cuts them with every invalid byte
// replaced by U+FFFD, and its pieces join to the text.
func FuzzSplitInvalidBytesAreReplacementCharacters(f *testing.F) {
	for _, s := range []string{"a\xffb", " \xff!", "\xe2\x82 x", "don't  \xff's", "\xf0\x9f\x98\x80\xf0\x9f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		text := string(data)
		pieces := Split(text)
		if strings.Join(pieces, "") != text {
			t.Fatalf("the pieces of %q join to %q", text, strings.Join(pieces, ""))
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("Split(%q) has an empty piece", text)
			}
		}
		// at[i] is where byte i of text is in the replaced text.
		var replaced strings.Builder
		at := make([]int, len(text)+1)
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRuneInString(text[i:])
			for k := range n {
				at[i+k] = replaced.Len()
			}
			if r == utf8.RuneError && n == 1 {
				replaced.WriteRune(utf8.RuneError)
			} else {
				replaced.WriteString(text[i : i+n])
			}
			i += n
		}
		at[len(text)] = replaced.Len()
		var want, got []int
		end := 0
		for _, p := range pieces {
			end += len(p)
			got = append(got, at[end])
		}
		end = 0
		for _, p := range Split(replaced.String()) {
			end += len(p)
			want = append(want, end)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Split(%q) = %q; with U+FFFD: %q", text, pieces, Split(replaced.String()))
		}
	})
}
