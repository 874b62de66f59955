// GBNF: llama.cpp's grammar format, parsed into rules.

package grammar

import (
	"strconv"
	"unicode/utf8"
)

// GBNF compiles a grammar in llama.cpp's GBNF format: rules
// `name ::= alternatives` (names of letters, digits and '-'), one per
// line (a newline inside parentheses or after '|' continues the rule),
// with the rule named root as the start; string literals "..." and
// character classes [a-z], [^...] with the escapes \n \r \t \\ \" \[ \]
// \- \xHH \uHHHH \UHHHHHHHH; '.' for any character; groups ( ); the
// repetitions * + ? {m} {m,} {m,n}; and # comments to the end of the line.
// Errors name the line, the column and the character index.
func GBNF(src string) (*Grammar, error) {
	const source = "grammar"
	if len(src) > MaxSource {
		return nil, newError(source, src, -1, ErrTooLarge, "grammar of %d bytes, more than the cap of %d", len(src), MaxSource)
	}
	if !utf8.ValidString(src) {
		off := 0
		for off < len(src) {
			r, n := utf8.DecodeRuneInString(src[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return nil, newError(source, src, off, ErrSyntax, "invalid UTF-8")
	}
	p := &gbnfParser{src: src, names: map[string]int{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	root, ok := p.names["root"]
	if !ok || p.rules[root].body == nil {
		return nil, newError(source, src, -1, ErrSyntax, "no rule named root")
	}
	for i, r := range p.rules {
		if r.body == nil {
			return nil, newError(source, src, p.used[i], ErrSyntax, "rule %s is used but never defined", r.name)
		}
	}
	return compile(source, "the grammar", src, p.rules, root)
}

type gbnfParser struct {
	src   string
	pos   int // byte offset
	rules []ruleDef
	names map[string]int
	used  []int // byte offset of each rule's first use
	depth int   // groups open
}

func (p *gbnfParser) fail(off int, kind error, format string, args ...any) error {
	return newError("grammar", p.src, off, kind, format, args...)
}

func (p *gbnfParser) peek(k int) byte {
	if p.pos+k < len(p.src) {
		return p.src[p.pos+k]
	}
	return 0
}

func (p *gbnfParser) eof() bool { return p.pos >= len(p.src) }

// space skips blanks and comments, and newlines too when newlines is set.
func (p *gbnfParser) space(newlines bool) {
	for !p.eof() {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlines && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for !p.eof() && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// rule returns the index of the rule called name, making it on first use.
func (p *gbnfParser) rule(name string, off int) int {
	if i, ok := p.names[name]; ok {
		return i
	}
	p.names[name] = len(p.rules)
	p.rules = append(p.rules, ruleDef{name: name, off: -1})
	p.used = append(p.used, off)
	return len(p.rules) - 1
}

func (p *gbnfParser) parse() error {
	p.space(true)
	for !p.eof() {
		start := p.pos
		name := p.name()
		if name == "" {
			return p.fail(p.pos, ErrSyntax, "expected a rule name")
		}
		p.space(false)
		if p.src[p.pos:min(p.pos+3, len(p.src))] != "::=" {
			return p.fail(p.pos, ErrSyntax, "expected ::= after the rule name %s", name)
		}
		p.pos += 3
		p.space(true)
		i := p.rule(name, start)
		if p.rules[i].body != nil {
			return p.fail(start, ErrSyntax, "rule %s is defined twice", name)
		}
		body, err := p.alternates(false)
		if err != nil {
			return err
		}
		p.rules[i].body, p.rules[i].off = body, start
		if len(p.rules) > MaxRules {
			return p.fail(start, ErrTooLarge, "more than %d rules", MaxRules)
		}
		switch {
		case p.eof():
		case p.peek(0) == '\r':
			p.pos++
			if p.peek(0) == '\n' {
				p.pos++
			}
		case p.peek(0) == '\n':
			p.pos++
		default:
			return p.fail(p.pos, ErrSyntax, "expected a newline or the end after rule %s, found %s", name, p.found())
		}
		p.space(true)
	}
	return nil
}

// found describes the character at the current position, for messages.
func (p *gbnfParser) found() string {
	if p.eof() {
		return "the end"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return quoteRune(r)
}

func (p *gbnfParser) alternates(nested bool) (*expr, error) {
	var alts []*expr
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.peek(0) != '|' || p.eof() {
			break
		}
		p.pos++
		p.space(true)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

func (p *gbnfParser) sequence(nested bool) (*expr, error) {
	var items []*expr
	for !p.eof() {
		start := p.pos
		var it *expr
		switch c := p.src[p.pos]; {
		case c == '"':
			p.pos++
			var subs []*expr
			for {
				if p.eof() {
					return nil, p.fail(start, ErrSyntax, "string literal never closed")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				subs = append(subs, char(r))
			}
			it = concat(subs...)
		case c == '[':
			var err error
			if it, err = p.class(); err != nil {
				return nil, err
			}
		case c == '.':
			p.pos++
			it = class(allRunes)
		case c == '(':
			p.pos++
			if p.depth++; p.depth > MaxNesting {
				return nil, p.fail(start, ErrTooLarge, "groups nested deeper than %d", MaxNesting)
			}
			p.space(true)
			var err error
			if it, err = p.alternates(true); err != nil {
				return nil, err
			}
			if p.peek(0) != ')' || p.eof() {
				return nil, p.fail(p.pos, ErrSyntax, "expected ) to close the group at character %d, found %s", utf8.RuneCountInString(p.src[:start]), p.found())
			}
			p.pos++
			p.depth--
		case isWordChar(c):
			name := p.name()
			it = ref(p.rule(name, start))
		case c == '*' || c == '+' || c == '?' || c == '{':
			return nil, p.fail(p.pos, ErrSyntax, "%c with nothing before it to repeat", c)
		default:
			return concat(items...), nil
		}
		p.space(nested)
		for !p.eof() {
			lo, hi := 0, 0
			switch p.src[p.pos] {
			case '*':
				lo, hi = 0, -1
				p.pos++
			case '+':
				lo, hi = 1, -1
				p.pos++
			case '?':
				lo, hi = 0, 1
				p.pos++
			case '{':
				var err error
				if lo, hi, err = p.counts(nested); err != nil {
					return nil, err
				}
			default:
				lo = -1
			}
			if lo < 0 {
				break
			}
			it = repeat(it, lo, hi)
			p.space(nested)
		}
		items = append(items, it)
	}
	return concat(items...), nil
}

// counts parses {m}, {m,} or {m,n}.
func (p *gbnfParser) counts(nested bool) (lo, hi int, err error) {
	start := p.pos
	p.pos++
	p.space(nested)
	lo, err = p.int()
	if err != nil {
		return 0, 0, err
	}
	p.space(nested)
	switch p.peek(0) {
	case '}':
		hi = lo
	case ',':
		p.pos++
		p.space(nested)
		hi = -1
		if c := p.peek(0); '0' <= c && c <= '9' {
			if hi, err = p.int(); err != nil {
				return 0, 0, err
			}
			p.space(nested)
		}
		if p.peek(0) != '}' || p.eof() {
			return 0, 0, p.fail(p.pos, ErrSyntax, "expected } to close the repetition, found %s", p.found())
		}
	default:
		return 0, 0, p.fail(p.pos, ErrSyntax, "expected , or } in the repetition, found %s", p.found())
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.fail(start, ErrSyntax, "repetition {%d,%d} has its maximum below its minimum", lo, hi)
	}
	return lo, hi, nil
}

func (p *gbnfParser) int() (int, error) {
	start := p.pos
	for !p.eof() && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == start {
		return 0, p.fail(p.pos, ErrSyntax, "expected a number, found %s", p.found())
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil || n > MaxRepeat {
		return 0, p.fail(start, ErrTooLarge, "repetition count %s above the cap of %d", p.src[start:p.pos], MaxRepeat)
	}
	return n, nil
}

// class parses [...] or [^...].
func (p *gbnfParser) class() (*expr, error) {
	start := p.pos
	p.pos++
	negate := false
	if p.peek(0) == '^' && !p.eof() {
		negate = true
		p.pos++
	}
	var rs []runeRange
	for {
		if p.eof() {
			return nil, p.fail(start, ErrSyntax, "character class never closed")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.peek(0) == '-' && p.peek(1) != ']' && p.pos+1 < len(p.src) {
			at := p.pos
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.fail(at, ErrSyntax, "range %s-%s runs backwards", quoteRune(lo), quoteRune(hi))
			}
		}
		rs = append(rs, runeRange{lo, hi})
	}
	set := makeSet(rs)
	if negate {
		set = set.complement()
	} else if set.empty() {
		return nil, p.fail(start, ErrSyntax, "empty character class")
	}
	return class(set), nil
}

// char parses one character of a literal or class, escapes included.
func (p *gbnfParser) char() (rune, error) {
	start := p.pos
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.fail(start, ErrSyntax, "escape at the end of the grammar")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-':
		return rune(c), nil
	case 'x', 'u', 'U':
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+digits > len(p.src) {
			return 0, p.fail(start, ErrSyntax, "\\%c needs %d hexadecimal digits", c, digits)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+digits], 16, 32)
		if err != nil {
			return 0, p.fail(start, ErrSyntax, "\\%c needs %d hexadecimal digits", c, digits)
		}
		if v > utf8.MaxRune {
			return 0, p.fail(start, ErrSyntax, "\\%c%s is beyond the last code point", c, p.src[p.pos:p.pos+digits])
		}
		p.pos += digits
		return rune(v), nil
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos-1:])
	return 0, p.fail(start, ErrSyntax, "unknown escape \\%c", r)
}
