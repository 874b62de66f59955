// Fuzz targets for every reader of outside text: the regex path, the GBNF
// parser and the JSON Schema compiler. Each bounds its input so a short
// -fuzztime run makes progress, and walks what compiles: a walk never
// meets an empty mask before its text is complete.

package grammar_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"example.org/minigpt/internal/grammar"
)

const fuzzMaxInput = 512

// fuzzWalks binds g to toks (unsatisfiable is fine) and walks it a few
// times, returning the texts.
func fuzzWalks(t *testing.T, g *grammar.Grammar, toks [][]byte, seed uint64) [][]byte {
	m, err := g.Bind(toks)
	if err != nil {
		if !errors.Is(err, grammar.ErrUnsatisfiable) && !errors.Is(err, grammar.ErrTooComplex) {
			t.Fatalf("Bind: %v", err)
		}
		return nil
	}
	w := newWalker(m, toks, seed)
	w.r = rand.New(rand.NewPCG(seed, 1))
	w.tolerant = true
	if m.Remaining(m.Start()) > 64 {
		// A constraint whose shortest text is long (a{2000} of b{2000} is
		// four million characters): take a few steps, not a whole text.
		s := m.Start()
		for range 30 {
			if err := m.Allowed(s, w.full); err != nil {
				t.Fatal(err)
			}
			id := slices.Index(w.full, true)
			if id < 0 {
				t.Fatal("no token allowed in a text that is not complete")
			}
			if s, err = m.Advance(s, id); errors.Is(err, grammar.ErrTooComplex) {
				return nil
			} else if err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	var out [][]byte
	for range 3 {
		if text := w.walk(t, 8); text != nil {
			out = append(out, text)
		}
	}
	return out
}

func FuzzRegex(f *testing.F) {
	for _, p := range append(lanternPatterns, bytePatterns...) {
		f.Add(p)
	}
	f.Add(`(?s).*\z|^a$`)
	toks := asciiTokens()
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > fuzzMaxInput {
			t.Skip()
		}
		g, err := grammar.Regex(p)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *grammar.Error", err)
			}
			return
		}
		// Leftmost-longest finds a match of the whole text when there is
		// one; wrapping p in ^(?:...)$ would change a p ending in \Q.
		re := regexp.MustCompile(p)
		re.Longest()
		for _, text := range fuzzWalks(t, g, toks, uint64(len(p))) {
			if loc := re.FindIndex(text); loc == nil || loc[0] != 0 || loc[1] != len(text) {
				t.Fatalf("%q: walk wrote %q", p, text)
			}
		}
	})
}

func FuzzGBNF(f *testing.F) {
	for _, src := range lanternGrammars {
		f.Add(src)
	}
	f.Add("root ::= [^\\x00-\\x1f] ( \"\\u00e9\" | x )*\nx ::= \"a\" | \"\"\n")
	f.Add("root ::= (\"a\" | \"b\"\n  | \"c\"){2,} # c\n")
	toks := asciiTokens()
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > fuzzMaxInput {
			t.Skip()
		}
		g, err := grammar.GBNF(src)
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *grammar.Error", err)
			}
			return
		}
		fuzzWalks(t, g, toks, uint64(len(src)))
	})
}

func FuzzJSONSchema(f *testing.F) {
	for _, tc := range testSchemas {
		f.Add([]byte(tc.schema), tc.whitespace)
	}
	f.Add([]byte(`{"type":["array","string"],"items":{"type":"boolean"},"pattern":"^x"}`), false)
	toks := asciiTokens()
	f.Fuzz(func(t *testing.T, schema []byte, ws bool) {
		if len(schema) > fuzzMaxInput {
			t.Skip()
		}
		g, err := grammar.JSONSchema(schema, grammar.JSONOptions{Whitespace: ws})
		if err != nil {
			var e *grammar.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *grammar.Error", err)
			}
			return
		}
		for _, text := range fuzzWalks(t, g, toks, uint64(len(schema))) {
			if !json.Valid(text) {
				t.Fatalf("%s: walk wrote %q, which is not JSON", schema, text)
			}
		}
	})
}
