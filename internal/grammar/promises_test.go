package grammar_test

// promises_test.go guards documented promises of the package that no
// other test held (docs/testing.md lists them with the rest).

import (
	"errors"
	"strings"
	"testing"

	"example.org/minigpt/internal/grammar"
)

// TestNestingCapIsOneThousand: "MaxNesting (1,000, as RE2's parser)
// [bounds] groups within groups": a grammar of 1,000 nested groups
// compiles, one of 1,001 is refused with ErrTooLarge. The numbers are
// the documentation's, not the constant's.
func TestNestingCapIsOneThousand(t *testing.T) {
	nested := func(n int) string {
		return "root ::= " + strings.Repeat("(", n) + `"a"` + strings.Repeat(")", n)
	}
	if _, err := grammar.GBNF(nested(1000)); err != nil {
		t.Errorf("1,000 nested groups: %v", err)
	}
	if _, err := grammar.GBNF(nested(1001)); !errors.Is(err, grammar.ErrTooLarge) {
		t.Errorf("1,001 nested groups: %v, want ErrTooLarge", err)
	}
}

// TestCompleteOnlyOnWholeCharacters: "Complete reports whether the text
// of s is a whole match": over a vocabulary of single bytes, "a" matches
// a(é)?, "a" and é's first byte does not (it is not even text), and the
// second byte makes the match whole again; MustEnd only then, when no
// token may follow.
func TestCompleteOnlyOnWholeCharacters(t *testing.T) {
	g, err := grammar.Regex("a(é)?")
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([][]byte, 256)
	for i := range tokens {
		tokens[i] = []byte{byte(i)}
	}
	m, err := g.Bind(tokens)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Start()
	for _, step := range []struct {
		b                 byte
		complete, mustEnd bool
	}{{'a', true, false}, {0xC3, false, false}, {0xA9, true, true}} {
		if s, err = m.Advance(s, int(step.b)); err != nil {
			t.Fatalf("byte %#x: %v", step.b, err)
		}
		if m.Complete(s) != step.complete || m.MustEnd(s) != step.mustEnd {
			t.Errorf("after byte %#x: Complete %v, MustEnd %v; want %v, %v", step.b, m.Complete(s), m.MustEnd(s), step.complete, step.mustEnd)
		}
	}
}
