// Benchmarks of a sampling step: the mask and the advance, for states
// seen before (cached) and for new ones.

package grammar

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bpeLike is a byte-level vocabulary of size tokens: the 256 bytes and
// merges of 2 to 8 bytes cut at random offsets from text made of random
// words (English, accented, CJK, JSON punctuation).
func bpeLike(size int) [][]byte {
	words := strings.Fields("the lamp keeper walks shore at dusk boats come home when lantern glows " +
		"wait outside bay fog is thick small boat drifts near rocks dawn rings bell tide rises falls " +
		"gulls call over low counts writes count in book burns all night rests naïve café 日本語 " +
		`{"name": "count": 12, 3.5} [true, null] ß ω≈π`)
	r := rand.New(rand.NewPCG(1, 2))
	var text strings.Builder
	for range 20000 {
		text.WriteString(words[r.IntN(len(words))])
		text.WriteByte(' ')
	}
	t := text.String()
	var toks [][]byte
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	seen := map[string]bool{}
	for len(toks) < size {
		n := 2 + r.IntN(7)
		at := r.IntN(len(t) - n)
		if s := t[at : at+n]; !seen[s] {
			seen[s] = true
			toks = append(toks, []byte(s))
		}
	}
	return toks
}

// benchStep walks m at random (from seed's stream), one token per
// iteration, restarting when the text is complete or stuck, and reports
// the time per token.
func benchStep(b *testing.B, m *Matcher, toks [][]byte) {
	r := rand.New(rand.NewPCG(3, 4))
	mask := make([]bool, len(toks))
	ids := make([]int, 0, len(toks))
	s := m.Start()
	steps := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Allowed(s, mask); err != nil {
			b.Fatal(err)
		}
		ids = ids[:0]
		for i, ok := range mask {
			if ok {
				ids = append(ids, i)
			}
		}
		if len(ids) == 0 || steps > 200 || m.Complete(s) && r.IntN(8) == 0 {
			s, steps = m.Start(), 0
			continue
		}
		next, err := m.Advance(s, ids[r.IntN(len(ids))])
		if err != nil {
			b.Fatal(err)
		}
		s = next
		steps++
	}
}

func BenchmarkStep(b *testing.B) {
	lantern := lantern()
	bpe := bpeLike(8192)
	for _, tc := range []struct {
		name string
		src  string
		gbnf bool
		json bool
		toks [][]byte
	}{
		{"regex/lantern/cached", `((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`, false, false, lantern},
		{"regex/pathological/walk", `(a|b)*a(a|b){20}`, false, false, lantern},
		{"grammar/lantern/walk", "root ::= expr\nexpr ::= term (\"p\" term)*\nterm ::= factor (\"m\" factor)*\nfactor ::= \"n\" | \"l\" expr \"r\"", true, false, lantern},
		{"regex/bpe8k/cached", `((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`, false, false, bpe},
		{"json/bpe8k/cached", `{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"}}}`, false, true, bpe},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var g *Grammar
			var err error
			switch {
			case tc.json:
				g, err = JSONSchema([]byte(tc.src), JSONOptions{})
			case tc.gbnf:
				g, err = GBNF(tc.src)
			default:
				g, err = Regex(tc.src)
			}
			if err != nil {
				b.Fatal(err)
			}
			m, err := g.Bind(tc.toks)
			if err != nil {
				b.Fatal(err)
			}
			benchStep(b, m, tc.toks)
		})
	}
}

// BenchmarkNewState times the mask of a state met for the first time: the
// cache is emptied before each one, so the state is rebuilt from its
// content and its mask computed afresh (a closure per character class the
// tokens begin with, and the walk of the token trie).
func BenchmarkNewState(b *testing.B) {
	lantern := lantern()
	bpe := bpeLike(8192)
	for _, tc := range []struct {
		name   string
		g      func() (*Grammar, error)
		toks   [][]byte
		prefix string
	}{
		{"regex/lantern", func() (*Grammar, error) { return Regex(`((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`) }, lantern, "the lamp "},
		{"grammar/lantern", func() (*Grammar, error) {
			return GBNF("root ::= expr\nexpr ::= term (\"p\" term)*\nterm ::= factor (\"m\" factor)*\nfactor ::= \"n\" | \"l\" expr \"r\"")
		}, lantern, "lnplnml"},
		{"regex/bpe8k", func() (*Grammar, error) { return Regex(`((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`) }, bpe, "the lamp "},
		{"json/bpe8k/key", func() (*Grammar, error) {
			return JSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"}}}`), JSONOptions{})
		}, bpe, `{`},
		{"json/bpe8k/string", func() (*Grammar, error) {
			return JSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"}}}`), JSONOptions{})
		}, bpe, `{"name":"the`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := tc.g()
			if err != nil {
				b.Fatal(err)
			}
			m, err := g.Bind(tc.toks)
			if err != nil {
				b.Fatal(err)
			}
			s := m.Start()
			for _, c := range []byte(tc.prefix) {
				id := slices.IndexFunc(tc.toks, func(t []byte) bool { return len(t) == 1 && t[0] == c })
				if s, err = m.Advance(s, id); err != nil {
					b.Fatal(err)
				}
			}
			mask := make([]bool, len(tc.toks))
			b.ReportAllocs()
			for b.Loop() {
				m.mu.Lock()
				m.flush()
				m.mu.Unlock()
				if err := m.Allowed(s, mask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllowed times the mask of a state met before: the copy out of
// the cache, as a []bool and as a bitset.
func BenchmarkAllowed(b *testing.B) {
	for _, tc := range []struct {
		name string
		toks [][]byte
	}{
		{"lantern", lantern()},
		{"bpe8k", bpeLike(8192)},
	} {
		g, err := Regex(`((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`)
		if err != nil {
			b.Fatal(err)
		}
		m, err := g.Bind(tc.toks)
		if err != nil {
			b.Fatal(err)
		}
		s := m.Start()
		b.Run(tc.name+"/bool", func(b *testing.B) {
			mask := make([]bool, len(tc.toks))
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Allowed(s, mask); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/bits", func(b *testing.B) {
			mask := make([]uint64, (len(tc.toks)+63)/64)
			b.ReportAllocs()
			for b.Loop() {
				if err := m.AllowedBits(s, mask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
