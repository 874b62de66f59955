// JSON Schema's bounds: every numeral up to five characters is matched
// exactly when it is an integer (or a number) as JSON writes it, within
// the bounds, its value read exactly.

package grammar_test

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt/internal/grammar"
)

// matches reports whether m takes text (one token a character) as a
// whole match.
func matches(m *grammar.Matcher, text string) bool {
	s := m.Start()
	for _, c := range text {
		id := strings.IndexRune(numeralChars, c)
		if !m.Allows(s, id) {
			return false
		}
		var err error
		if s, err = m.Advance(s, id); err != nil {
			return false
		}
	}
	return m.Complete(s)
}

const numeralChars = "-0123456789"

func TestIntegerBounds(t *testing.T) {
	toks := charTokens(numeralChars)
	// Every string of up to five of these characters.
	var texts []string
	for n := 1; n <= 5; n++ {
		var rec func(prefix string)
		rec = func(prefix string) {
			if len(prefix) == n {
				texts = append(texts, prefix)
				return
			}
			for _, c := range numeralChars {
				rec(prefix + string(c))
			}
		}
		rec("")
	}
	for _, c := range []struct {
		bounds string
		lo, hi int64
	}{
		{`"minimum":0,"maximum":100`, 0, 100},
		{`"minimum":-15,"maximum":123`, -15, 123},
		{`"minimum":-999,"maximum":-20`, -999, -20},
		{`"exclusiveMinimum":-1,"exclusiveMaximum":10`, 0, 9},
		{`"minimum":7.5,"maximum":1999.9`, 8, 1999},
		{`"minimum":42`, 42, 1e16 - 1},
		{`"maximum":-3`, -(1e16 - 1), -3},
		{`"minimum":5,"maximum":5`, 5, 5},
		{`"minimum":-9007199254740991,"maximum":9007199254740991`, -9007199254740991, 9007199254740991}, // zod's int
	} {
		g, err := grammar.JSONSchema([]byte(`{"type":"integer",`+c.bounds+`}`), grammar.JSONOptions{})
		m := bind(t, g, err, toks)
		for _, text := range texts {
			v, perr := strconv.ParseInt(text, 10, 64)
			want := perr == nil && strconv.FormatInt(v, 10) == text && v >= c.lo && v <= c.hi
			if got := matches(m, text); got != want {
				t.Errorf("{%s}: %q matched %v, want %v", c.bounds, text, got, want)
			}
		}
	}
	if !matches(bind(t, must(grammar.JSONSchema([]byte(`{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}`), grammar.JSONOptions{})), nil, toks), "9007199254740991") {
		t.Error("zod's largest safe integer is refused")
	}
	for _, bad := range []struct{ schema, want string }{
		{`{"type":"integer","minimum":5,"maximum":4}`, "no integer lies within the bounds"},
		{`{"type":"integer","minimum":"5"}`, "minimum must be a number"},
	} {
		_, err := grammar.JSONSchema([]byte(bad.schema), grammar.JSONOptions{})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.schema, err, bad.want)
		}
		var ge *grammar.Error
		if !errors.As(err, &ge) || ge.Offset < 0 {
			t.Errorf("%s: %v has no position", bad.schema, err)
		}
	}
}

func must(g *grammar.Grammar, err error) *grammar.Grammar {
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return g
}

// numberChars are the characters of the numbers a bounded number writes.
const numberChars = "-0123456789."

// jsonPlainNumber is a JSON number without an exponent.
var jsonPlainNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

func TestNumberBounds(t *testing.T) {
	toks := charTokens(numberChars)
	var texts []string
	var rec func(prefix string)
	rec = func(prefix string) {
		if prefix != "" {
			texts = append(texts, prefix)
		}
		if len(prefix) < 5 {
			for _, c := range numberChars {
				rec(prefix + string(c))
			}
		}
	}
	rec("")
	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("bad test bound %q", s)
		}
		return r
	}
	for _, c := range []struct {
		bounds         string
		lo, hi         string // the closed range the numbers written must lie in ("" unbounded)
		loOpen, hiOpen bool
	}{
		{bounds: `"minimum":0,"maximum":1`, lo: "0", hi: "1"},
		{bounds: `"exclusiveMinimum":0,"exclusiveMaximum":1`, lo: "0", hi: "1", loOpen: true, hiOpen: true},
		{bounds: `"minimum":-1.5,"maximum":2.25`, lo: "-1.5", hi: "2.25"},
		{bounds: `"minimum":0.1,"maximum":0.3`, lo: "0.1", hi: "0.3"},
		{bounds: `"minimum":-100,"exclusiveMaximum":-0.01`, lo: "-100", hi: "-0.01", hiOpen: true},
		{bounds: `"minimum":0.5`, lo: "0.5"},
		{bounds: `"maximum":-2.5`, hi: "-2.5"},
		{bounds: `"minimum":1e-3,"maximum":5E1`, lo: "0.001", hi: "50"},
		{bounds: `"minimum":3.14,"maximum":3.14`, lo: "3.14", hi: "3.14"},
		{bounds: `"exclusiveMinimum":-0.5,"maximum":12.5`, lo: "-0.5", hi: "12.5", loOpen: true},
	} {
		g, err := grammar.JSONSchema([]byte(`{"type":"number",`+c.bounds+`}`), grammar.JSONOptions{})
		m := bind(t, g, err, toks)
		for _, text := range texts {
			want := jsonPlainNumber.MatchString(text) && !(text[0] == '-' && strings.Trim(text[1:], "0.") == "")
			if want {
				v := rat(text)
				if c.lo != "" {
					k := v.Cmp(rat(c.lo))
					want = k > 0 || k == 0 && !c.loOpen
				}
				if want && c.hi != "" {
					k := v.Cmp(rat(c.hi))
					want = k < 0 || k == 0 && !c.hiOpen
				}
			}
			if got := matchesIn(m, numberChars, text); got != want {
				t.Errorf("{%s}: %q matched %v, want %v", c.bounds, text, got, want)
			}
		}
	}
	// Bounds past 16 digits after the point round inwards; numbers of 16
	// digits still reach them.
	g := must(grammar.JSONSchema([]byte(`{"type":"number","minimum":0.12345678901234567,"maximum":0.9}`), grammar.JSONOptions{}))
	m := bind(t, g, nil, toks)
	for text, want := range map[string]bool{"0.1234567890123457": true, "0.1234567890123456": false, "0.9": true, "0.90000000000000001": false} {
		if got := matchesIn(m, numberChars, text); got != want {
			t.Errorf("minimum 0.12345678901234567: %q matched %v, want %v", text, got, want)
		}
	}
	// Bounds far from one: their side of zero is kept (1e-400 is no zero,
	// though its float64 is).
	for _, c := range []struct {
		schema string
		texts  map[string]bool
	}{
		{`{"type":"number","exclusiveMinimum":1e-50,"maximum":1e+300}`, map[string]bool{"0.0000000000000001": true, "0": false, "0.0": false, "9999999999999999.5": true}},
		{`{"type":"number","minimum":1e-400,"maximum":1}`, map[string]bool{"0.0000000000000001": true, "0": false, "1": true}},
		{`{"type":"number","minimum":-1,"maximum":-1e-99999999999}`, map[string]bool{"-0.0000000000000001": true, "0": false, "-1": true}},
		{`{"type":"integer","minimum":-3,"maximum":0e-99999999999}`, map[string]bool{"0": true, "-3": true, "1": false}},
		{`{"type":"integer","minimum":9007199254740993,"maximum":9007199254740993}`, map[string]bool{"9007199254740993": true, "9007199254740992": false}},
	} {
		m := bind(t, must(grammar.JSONSchema([]byte(c.schema), grammar.JSONOptions{})), nil, toks)
		for text, want := range c.texts {
			if got := matchesIn(m, numberChars, text); got != want {
				t.Errorf("%s: %q matched %v, want %v", c.schema, text, got, want)
			}
		}
	}
	// Without a type, a bound says number.
	if m := bind(t, must(grammar.JSONSchema([]byte(`{"minimum":2,"maximum":3}`), grammar.JSONOptions{})), nil, toks); !matchesIn(m, numberChars, "2.5") || matchesIn(m, numberChars, "-2") {
		t.Error(`{"minimum":2,"maximum":3}: want the numbers of [2, 3] only`)
	}
}

// matchesIn is matches over the tokens of chars (one token a character).
func matchesIn(m *grammar.Matcher, chars, text string) bool {
	s := m.Start()
	for _, c := range text {
		id := strings.IndexRune(chars, c)
		if id < 0 || !m.Allows(s, id) {
			return false
		}
		var err error
		if s, err = m.Advance(s, id); err != nil {
			return false
		}
	}
	return m.Complete(s)
}
