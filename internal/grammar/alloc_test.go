// A step in steady state (a state seen before) allocates nothing.

package grammar_test

import (
	"testing"

	"example.org/minigpt/internal/grammar"
)

func TestSteadyStateAllocs(t *testing.T) {
	lantern := lanternTokens(t)
	bytes := byteTokens(multilingual, 300, 3)
	for _, tc := range []struct {
		name string
		g    func() (*grammar.Grammar, error)
		toks [][]byte
		text string
	}{
		{"regex", func() (*grammar.Grammar, error) { return grammar.Regex(`(lamp|boat)( (a|the) (lamp|boat))*`) }, lantern, "lamp a boat the lamp"},
		{"grammar", func() (*grammar.Grammar, error) { return grammar.GBNF(lanternGrammars[3]) }, lantern, "lnmlnpnrrmn"},
		{"bytes", func() (*grammar.Grammar, error) { return grammar.Regex(`caf[eé] (日本|語)+ 🙂?`) }, bytes, "café 日本語語 🙂"},
	} {
		g, err := tc.g()
		m := bind(t, g, err, tc.toks)
		ids := encodeGreedy(t, m, tc.toks, tc.text)
		mask := make([]bool, len(tc.toks))
		run := func() {
			s := m.Start()
			for _, id := range ids {
				if err := m.Allowed(s, mask); err != nil {
					t.Fatal(err)
				}
				if s, err = m.Advance(s, id); err != nil {
					t.Fatal(err)
				}
			}
			if !m.Complete(s) {
				t.Fatalf("%s: %q is not complete", tc.name, tc.text)
			}
		}
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Errorf("%s: %v allocations per walk of %d tokens", tc.name, n, len(ids))
		}
	}
}

// encodeGreedy splits text into allowed tokens, longest first.
func encodeGreedy(t *testing.T, m *grammar.Matcher, toks [][]byte, text string) []int {
	t.Helper()
	var ids []int
	s := m.Start()
	for rest := []byte(text); len(rest) > 0; {
		best := -1
		for id, tk := range toks {
			if len(tk) > 0 && len(tk) <= len(rest) && string(rest[:len(tk)]) == string(tk) && m.Allows(s, id) && (best < 0 || len(tk) > len(toks[best])) {
				best = id
			}
		}
		if best < 0 {
			t.Fatalf("no allowed token at %q", rest)
		}
		var err error
		if s, err = m.Advance(s, best); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, best)
		rest = rest[len(toks[best]):]
	}
	return ids
}
