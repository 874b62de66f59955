// Regex: Go's RE2 syntax (regexp/syntax) compiled to a Grammar that holds
// the whole output to a match.

package grammar

import (
	"errors"
	"regexp/syntax"
	"strings"
	"unicode"
)

// Regex compiles pattern, in the syntax of Go's regexp package, into a
// Grammar whose matches are the texts the whole of which match (as if
// anchored at both ends). It refuses what regexp refuses, with its
// message, and what an automaton of characters cannot hold exactly:
// word boundaries (\b, \B) and ^ or $ in multi-line mode. \A, \z and ^, $
// outside multi-line mode are held exactly.
func Regex(pattern string) (*Grammar, error) {
	const src = "regex"
	if len(pattern) > MaxSource {
		return nil, newError(src, pattern, -1, ErrTooLarge, "pattern of %d bytes, more than the cap of %d", len(pattern), MaxSource)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		off := -1
		var se *syntax.Error
		if errors.As(err, &se) && se.Expr != "" {
			off = strings.Index(pattern, se.Expr)
		}
		e := newError(src, pattern, off, ErrSyntax, "%s", err.Error())
		e.Cause = err
		return nil, e
	}
	body, err := fromSyntax(re, pattern)
	if err != nil {
		return nil, err
	}
	return compile(src, "the pattern", pattern, []ruleDef{{name: "pattern", body: body, off: 0}}, 0)
}

// fromSyntax converts a parsed regular expression to an expression tree.
func fromSyntax(re *syntax.Regexp, pattern string) (*expr, error) {
	unsupported := func(what string, want byte) error {
		return newError("regex", pattern, findOp(pattern, want), ErrUnsupported,
			"%s cannot be held by a constraint, which sees one character at a time without looking ahead", what)
	}
	subs := func() ([]*expr, error) {
		out := make([]*expr, len(re.Sub))
		for i, s := range re.Sub {
			e, err := fromSyntax(s, pattern)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return none(), nil
	case syntax.OpEmptyMatch:
		return empty(), nil
	case syntax.OpLiteral:
		out := make([]*expr, len(re.Rune))
		for i, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				out[i] = class(foldSet(r))
			} else {
				out[i] = char(r)
			}
		}
		return concat(out...), nil
	case syntax.OpCharClass:
		rs := make([]runeRange, 0, len(re.Rune)/2)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			rs = append(rs, runeRange{re.Rune[i], re.Rune[i+1]})
		}
		return class(makeSet(rs)), nil
	case syntax.OpAnyCharNotNL:
		return class(allRunes.minus(single('\n'))), nil
	case syntax.OpAnyChar:
		return class(allRunes), nil
	case syntax.OpBeginText:
		return &expr{op: opBegin}, nil
	case syntax.OpEndText:
		return &expr{op: opEnd}, nil
	case syntax.OpBeginLine:
		return nil, unsupported("^ in multi-line mode (flag m)", '^')
	case syntax.OpEndLine:
		return nil, unsupported("$ in multi-line mode (flag m)", '$')
	case syntax.OpWordBoundary:
		return nil, unsupported(`\b (a word boundary)`, 'b')
	case syntax.OpNoWordBoundary:
		return nil, unsupported(`\B (not a word boundary)`, 'B')
	case syntax.OpCapture:
		return fromSyntax(re.Sub[0], pattern)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		s, err := subs()
		if err != nil {
			return nil, err
		}
		lo, hi := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, -1
		case syntax.OpPlus:
			lo, hi = 1, -1
		case syntax.OpQuest:
			lo, hi = 0, 1
		}
		return repeat(s[0], lo, hi), nil
	case syntax.OpConcat:
		s, err := subs()
		if err != nil {
			return nil, err
		}
		return concat(s...), nil
	case syntax.OpAlternate:
		s, err := subs()
		if err != nil {
			return nil, err
		}
		return alt(s...), nil
	}
	return nil, newError("regex", pattern, -1, ErrUnsupported, "regexp operator %v", re.Op)
}

// foldSet is r with every case of it (its simple case-folding orbit), as
// regexp matches a literal under the flag i.
func foldSet(r rune) runeSet {
	rs := []runeRange{{r, r}}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		rs = append(rs, runeRange{f, f})
	}
	return makeSet(rs)
}

// findOp returns the byte offset in pattern of the first \b (want 'b') or
// \B (want 'B') or of the first ^ or $ (want '^' or '$') outside a
// character class, or -1: the place to show for an unsupported operator.
func findOp(pattern string, want byte) int {
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			if !inClass && pattern[i+1] == want && (want == 'b' || want == 'B') {
				return i
			}
			if pattern[i+1] == 'Q' && !inClass {
				end := strings.Index(pattern[i+2:], `\E`)
				if end < 0 {
					return -1
				}
				i += 2 + end + 1
				continue
			}
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(pattern) && pattern[i+1] == '^' {
				i++
			}
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				i++
			}
		case c == want && (want == '^' || want == '$'):
			return i
		}
	}
	return -1
}
