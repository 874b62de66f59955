package bpe

// promises_test.go guards documented promises of the package that no
// other test held (docs/testing.md lists them with the rest).

import (
	"context"
	"strings"
	"testing"
)

// TestNoTokenPassesMaxTokenBytes: "a pair whose token would be longer
// than MaxTokenBytes is never merged", at the boundary: 2,048 'a' and a
// 'b' (one piece) merge into two tokens of 1,024 'a' (MaxTokenBytes, the
// doc's figure) and the 'b', which would make one of 1,025 next: it is
// never made, and the text still round-trips.
func TestNoTokenPassesMaxTokenBytes(t *testing.T) {
	const maxBytes = 1024 // tokenizer.go's documented cap
	text := strings.Repeat("a", 2*maxBytes) + "b"
	tok, err := Train(context.Background(), text, 1000)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for id := range tok.VocabSize() {
		longest = max(longest, len(tok.Token(id)))
	}
	if longest != maxBytes {
		t.Errorf("the longest token has %d bytes, want %d", longest, maxBytes)
	}
	if got, err := tok.Decode(tok.Encode(text)); err != nil || got != text {
		t.Errorf("the run does not round-trip (%d bytes back, %v)", len(got), err)
	}
}
