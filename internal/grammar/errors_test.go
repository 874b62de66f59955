// Malformed constraints are refused with their position, unsupported ones
// by name, oversized ones against the caps, unsatisfiable ones with the
// characters they miss.

package grammar_test

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"

	"example.org/minigpt/internal/grammar"
)

func TestMalformed(t *testing.T) {
	deep := strings.Repeat("(", grammar.MaxNesting+1) + `"a"` + strings.Repeat(")", grammar.MaxNesting+1)
	for _, tc := range []struct {
		name         string
		compile      func() error
		kind         error
		offset       int // -1: none
		line, column int
		msg          string
	}{
		{"regex unclosed", reErr(`(ab`), grammar.ErrSyntax, 0, 0, 0, "missing closing )"},
		{"regex repeat", reErr(`ab{1001}`), grammar.ErrSyntax, 2, 0, 0, "invalid repeat count"},
		{"regex range", reErr(`x[z-a]`), grammar.ErrSyntax, 2, 0, 0, "invalid character class range"},
		{"regex word boundary", reErr(`the\b`), grammar.ErrUnsupported, 3, 0, 0, `\b`},
		{"regex not boundary", reErr(`a\Bb`), grammar.ErrUnsupported, 1, 0, 0, `\B`},
		{"regex multi-line ^", reErr(`(?m)a|^b`), grammar.ErrUnsupported, 6, 0, 0, "multi-line"},
		{"regex multi-line $", reErr(`(?m:a$)`), grammar.ErrUnsupported, 5, 0, 0, "multi-line"},
		{"regex no match", reErr(`a[^\x00-\x{10FFFF}]`), grammar.ErrSyntax, 0, 0, 0, "matches no text"},
		{"regex too long", reErr(strings.Repeat("a", grammar.MaxSource+1)), grammar.ErrTooLarge, -1, 0, 0, "cap"},
		{"gbnf no ::=", gbnfErr("root ::= a\na = \"x\""), grammar.ErrSyntax, 13, 2, 3, "expected ::="},
		{"gbnf unclosed string", gbnfErr("root ::= \"abc"), grammar.ErrSyntax, 9, 0, 0, "never closed"},
		{"gbnf unknown escape", gbnfErr("root ::= \"a\\qb\""), grammar.ErrSyntax, 11, 0, 0, `unknown escape \q`},
		{"gbnf bad hex", gbnfErr("root ::= [\\x4]"), grammar.ErrSyntax, 10, 0, 0, "hexadecimal"},
		{"gbnf undefined", gbnfErr("root ::= a b\na ::= \"x\""), grammar.ErrSyntax, 11, 1, 12, "rule b is used but never defined"},
		{"gbnf no root", gbnfErr("a ::= \"x\""), grammar.ErrSyntax, -1, 0, 0, "no rule named root"},
		{"gbnf left recursion", gbnfErr("root ::= x\nx ::= y \"a\" | \"b\"\ny ::= \"\" | x"), grammar.ErrUnsupported, 11, 2, 1, "left-recursive (x -> y -> x)"},
		{"gbnf twice", gbnfErr("root ::= \"a\"\nroot ::= \"b\""), grammar.ErrSyntax, 13, 2, 1, "defined twice"},
		{"gbnf group", gbnfErr("root ::= (\"a\" | \"b\"\n"), grammar.ErrSyntax, 20, 2, 1, "expected )"},
		{"gbnf dangling star", gbnfErr("root ::= * \"a\""), grammar.ErrSyntax, 9, 0, 0, "nothing before it"},
		{"gbnf count", gbnfErr("root ::= \"a\"{2001}"), grammar.ErrTooLarge, 13, 0, 0, "above the cap"},
		{"gbnf backwards", gbnfErr("root ::= \"a\"{3,2}"), grammar.ErrSyntax, 12, 0, 0, "below its minimum"},
		{"gbnf range", gbnfErr("root ::= [z-a]"), grammar.ErrSyntax, 11, 0, 0, "runs backwards"},
		{"gbnf junk", gbnfErr("root ::= \"a\" <[1]>"), grammar.ErrSyntax, 13, 0, 0, "expected a newline or the end"},
		{"gbnf nesting", gbnfErr("root ::= " + deep), grammar.ErrTooLarge, 9 + grammar.MaxNesting, 0, 0, "nested deeper"},
		{"gbnf states", gbnfErr(`root ::= (("a"{2000}){2000})`), grammar.ErrTooLarge, 0, 0, 0, "automaton states"},
		{"gbnf empty", gbnfErr(`root ::= "a" root`), grammar.ErrSyntax, 0, 0, 0, "matches no text"},
		{"gbnf invalid utf8", gbnfErr("root ::= \"\xff\""), grammar.ErrSyntax, 10, 0, 0, "UTF-8"},
		{"json syntax", jsonErr(`{"type": "string",}`), grammar.ErrSyntax, 18, 0, 0, "invalid character"},
		{"json keyword", jsonErr("{\n  \"type\": \"string\",\n  \"format\": \"email\"\n}"), grammar.ErrUnsupported, 24, 3, 3, `keyword "format"`},
		{"json empty number bounds", jsonErr(`{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1e-17}`), grammar.ErrSyntax, 0, 0, 0, "no number of at most 16 digits"},
		{"json empty bounds", jsonErr(`{"type":"integer","minimum":3,"maximum":2}`), grammar.ErrSyntax, 0, 0, 0, "no integer lies within"},
		{"json required", jsonErr(`{"properties":{"a":{}},"required":["b"]}`), grammar.ErrUnsupported, 35, 0, 0, `required names "b"`},
		{"json type", jsonErr(`{"type":"float"}`), grammar.ErrUnsupported, 8, 0, 0, `type "float"`},
		{"json count", jsonErr(`{"type":"array","maxItems":-1}`), grammar.ErrSyntax, 27, 0, 0, "non-negative integer"},
		{"json pattern", jsonErr(`{"type":"string","pattern":"(a"}`), grammar.ErrSyntax, 27, 0, 0, "missing closing )"},
		{"json tuple", jsonErr(`{"items":[{}]}`), grammar.ErrUnsupported, 9, 0, 0, "tuple"},
		{"json false", jsonErr(`false`), grammar.ErrSyntax, 0, 0, 0, "matches no text"},
		{"choice none", func() error { _, err := grammar.Choice(nil); return err }, grammar.ErrSyntax, -1, 0, 0, "no options"},
		{"choice utf8", func() error { _, err := grammar.Choice([]string{"a", "\xff"}); return err }, grammar.ErrSyntax, -1, 0, 0, "option 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.compile()
			var e *grammar.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *grammar.Error", err)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v: not %v", err, tc.kind)
			}
			if e.Offset != tc.offset || e.Line != tc.line || e.Column != tc.column {
				t.Errorf("%v: at %d (%d:%d), want %d (%d:%d)", err, e.Offset, e.Line, e.Column, tc.offset, tc.line, tc.column)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%v: want it to say %q", err, tc.msg)
			}
		})
	}
}

// TestRegexCause keeps RE2's own error for callers that want it.
func TestRegexCause(t *testing.T) {
	_, err := grammar.Regex(`a**`)
	var se *syntax.Error
	if !errors.As(err, &se) || se.Code != syntax.ErrInvalidRepeatOp {
		t.Fatalf("got %v, want a *syntax.Error of code %v", err, syntax.ErrInvalidRepeatOp)
	}
}

func reErr(p string) func() error {
	return func() error { _, err := grammar.Regex(p); return err }
}

func gbnfErr(src string) func() error {
	return func() error { _, err := grammar.GBNF(src); return err }
}

func jsonErr(schema string) func() error {
	return func() error { _, err := grammar.JSONSchema([]byte(schema), grammar.JSONOptions{}); return err }
}

func TestUnsatisfiable(t *testing.T) {
	toks := lanternTokens(t)
	for _, tc := range []struct {
		g    func() (*grammar.Grammar, error)
		want string
	}{
		{func() (*grammar.Grammar, error) { return grammar.Regex(`\{[a-z]+\}`) }, `the pattern needs '{' and '}', which the model never writes`},
		{func() (*grammar.Grammar, error) { return grammar.Regex(`the [0-9]+ boats`) }, `the pattern needs one of [0-9], which the model never writes`},
		{func() (*grammar.Grammar, error) { return grammar.Regex(`(?i)QUIZ`) }, `the pattern needs one of [Qq] and one of [Zz], which`},
		{func() (*grammar.Grammar, error) { return grammar.Choice([]string{"zebra", "xylophone"}) }, `the choices need 'z', which the model never writes`},
		{func() (*grammar.Grammar, error) {
			return grammar.GBNF("root ::= \"q\" x | \"j\" \"v\" \"z\"\nx ::= [A-Z]")
		}, `the grammar needs 'q' and one of [A-Z]`},
		{func() (*grammar.Grammar, error) {
			return grammar.JSONSchema([]byte(`{"type":"integer"}`), grammar.JSONOptions{})
		}, `the schema needs '0', which the model never writes`},
	} {
		g, err := tc.g()
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Bind(toks)
		if !errors.Is(err, grammar.ErrUnsatisfiable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Bind: %v\nwant it to say %q", err, tc.want)
		}
	}
}

// TestDeepGroups: a grammar of groups nested to the cap compiles, binds
// and generates.
func TestDeepGroups(t *testing.T) {
	n := grammar.MaxNesting
	src := "root ::= " + strings.Repeat(`("a" `, n) + strings.Repeat(`)?`, n)
	g, err := grammar.GBNF(src)
	m := bind(t, g, err, lanternTokens(t))
	w := newWalker(m, lanternTokens(t), 1000)
	for range 100 {
		if text := w.walk(t, 30); strings.Trim(string(text), "a") != "" {
			t.Fatalf("walk wrote %q", text)
		}
	}
}

func TestBadVocabularies(t *testing.T) {
	g, err := grammar.Regex("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Bind(nil); err == nil {
		t.Error("bound an empty vocabulary")
	}
	if _, err := g.Bind([][]byte{[]byte("a"), make([]byte, grammar.MaxTokenBytes+1)}); !errors.Is(err, grammar.ErrTooLarge) {
		t.Errorf("a huge token: %v", err)
	}
	m, err := g.Bind([][]byte{nil, []byte("a"), {}})
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]bool, 3)
	if err := m.Allowed(m.Start(), mask); err != nil || mask[0] || !mask[1] || mask[2] {
		t.Errorf("mask %v (%v), want only the token a", mask, err)
	}
	if err := m.Allowed(m.Start(), mask[:2]); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("a short mask: %v", err)
	}
	if _, err := m.Advance(m.Start(), 0); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("advancing by the empty token: %v", err)
	}
	if _, err := m.Advance(m.Start(), 3); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("advancing by a token outside the vocabulary: %v", err)
	}
	if _, err := m.Advance(grammar.State{}, 1); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("advancing the zero State: %v", err)
	}
	other, _ := g.Bind([][]byte{[]byte("a")})
	if _, err := m.Advance(other.Start(), 1); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("advancing another matcher's state: %v", err)
	}
}

// TestAllowedBits: the bitset form says what the []bool form says.
func TestAllowedBits(t *testing.T) {
	toks := byteTokens(multilingual, 300, 4)
	g, err := grammar.Regex(`caf[eé] (日本|語)+`)
	m := bind(t, g, err, toks)
	w := newWalker(m, toks, 1100)
	bitset := make([]uint64, (len(toks)+63)/64)
	w.step = func(s grammar.State, text []byte, mask []bool) {
		if err := m.AllowedBits(s, bitset); err != nil {
			t.Fatal(err)
		}
		for i, ok := range mask {
			if bitset[i/64]>>(i%64)&1 == 1 != ok {
				t.Fatalf("after %q: token %d is %v in the mask, not in the bitset", text, i, ok)
			}
		}
	}
	for range 100 {
		w.walk(t, 10)
	}
	if err := m.AllowedBits(m.Start(), bitset[1:]); !errors.Is(err, grammar.ErrNotAllowed) {
		t.Errorf("a short bitset: %v", err)
	}
}
