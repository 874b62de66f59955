// JSON Schema's integer bounds: every numeral up to five characters is
// matched exactly when strconv reads it as a canonical integer within
// the bounds.

package grammar_test

import (
	"errors"
	"fmt"
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
		{`{"type":"number","maximum":4}`, "use type integer"},
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
