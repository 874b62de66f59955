package server

// Generated text as responses write it: JSON string content byte for byte
// as encoding/json's, written in pieces that never split a character,
// and character offsets.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonTextCases hold every kind of byte a token can hold: escapes,
// HTML, U+2028, characters of 2 to 4 bytes, their first bytes alone,
// stray continuation bytes and bytes that are never UTF-8.
var jsonTextCases = []string{
	"", "plain", "\x00\x01\x1f\"\\/\b\f\n\r\t", "<b>&amp;</b>", "\u2028\u2029", "é—🙂",
	"\xe2\x80", "a\xf0\x9f", "\x80\xbf", "\xc0\xaf\xff\xfe", "\xed\xa0\x80", "ok\xe2\x80\x99s", strings.Repeat("\xf0\x9f\x99", 3),
}

func TestAppendJSONTextIsEncodingJSON(t *testing.T) {
	for _, s := range jsonTextCases {
		checkJSONText(t, s)
	}
}

func FuzzAppendJSONText(f *testing.F) {
	for _, s := range jsonTextCases {
		f.Add(s)
	}
	f.Fuzz(checkJSONText)
}

// checkJSONText holds appendJSONText and countChars to encoding/json and
// to unicode/utf8, and the encoder's piecewise writing to the whole.
func checkJSONText(t *testing.T, s string) {
	want, _ := json.Marshal(s)
	if got := appendJSONText(nil, s); !bytes.Equal(got, want[1:len(want)-1]) {
		t.Fatalf("%q: %s, encoding/json %s", s, got, want)
	}
	if got := appendJSONText(nil, []byte(s)); !bytes.Equal(got, want[1:len(want)-1]) {
		t.Fatalf("%q as bytes: %s, encoding/json %s", s, got, want)
	}
	var back string
	json.Unmarshal(want, &back)
	if n := countChars(s); n != utf8.RuneCountInString(back) || n != countChars([]byte(s)) {
		t.Fatalf("%q: %d characters, written as %d", s, n, utf8.RuneCountInString(back))
	}
	// Long, so that the encoder writes it in pieces: the same bytes.
	long := strings.Repeat(s+"é", 1+3000/(len(s)+2))
	var buf bytes.Buffer
	e := encoder{w: bufio.NewWriter(&buf)}
	e.text(long)
	e.w.Flush()
	want, _ = json.Marshal(long)
	if !bytes.Equal(buf.Bytes(), want[1:len(want)-1]) {
		t.Fatalf("%q repeated: written in pieces differently", s)
	}
}

func TestCharOffsets(t *testing.T) {
	tokens := []string{"a", "\xe2\x80", "\x99", " b", "\xf0", "\x9f\x99", "\x82", "\xff", "c"}
	for _, tc := range []struct {
		ids  []int
		base int
		want []int
	}{
		{[]int{0, 3}, 0, []int{0, 1}},             // "a b"
		{[]int{1, 2, 0}, 5, []int{5, 5, 6}},       // "’a": the second token finishes the first character
		{[]int{4, 5, 6, 8}, 0, []int{0, 0, 0, 1}}, // "🙂c" in three tokens
		{[]int{1, 0, 2}, 0, []int{0, 2, 3}},       // "\xe2\x80" unfinished: two characters, then 'a', then a stray byte
		{[]int{7, 1, 2}, 0, []int{0, 1, 1}},       // a byte that is never UTF-8, then "’"
		{[]int{0, 4}, 0, []int{0, 1}},             // a sample's last token ends inside a character
	} {
		var text []byte
		for _, id := range tc.ids {
			text = append(text, tokens[id]...)
		}
		if got := charOffsets(nil, string(text), tc.ids, tokens, tc.base); !slices.Equal(got, tc.want) {
			t.Errorf("%q: offsets %v, want %v", text, got, tc.want)
		}
	}
}
