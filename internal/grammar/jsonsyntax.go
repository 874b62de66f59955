// JSON itself as rules: whitespace, numbers, strings and their escapes,
// any value and any object, and the escaping of a string's content.

package grammar

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

func (c *jsonCompiler) ws() *expr {
	if !c.opts.Whitespace {
		return empty()
	}
	return ref(c.once("ws", func() *expr {
		return repeat(class(makeSet([]runeRange{{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}})), 0, maxWhitespace)
	}))
}

var (
	digit    = class(runeSet{{'0', '9'}})
	hexDigit = class(makeSet([]runeRange{{'0', '9'}, {'a', 'f'}, {'A', 'F'}}))
)

// plainChars is what a JSON string holds unescaped.
var plainChars = allRunes.minus(makeSet([]runeRange{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))

func (c *jsonCompiler) integer() *expr {
	return concat(opt(char('-')), alt(char('0'), concat(class(runeSet{{'1', '9'}}), repeat(digit, 0, 15))))
}

func (c *jsonCompiler) number() *expr {
	frac := opt(concat(char('.'), repeat(digit, 1, 16)))
	exp := opt(concat(class(makeSet([]runeRange{{'e', 'e'}, {'E', 'E'}})), opt(class(makeSet([]runeRange{{'+', '+'}, {'-', '-'}}))), repeat(digit, 1, 2)))
	return concat(c.integer(), frac, exp)
}

// stringChar is one character of a string's content, escapes included:
// \uXXXX never names a surrogate, so each escape is one code point and
// lengths count as JSON Schema counts them.
func (c *jsonCompiler) stringChar() *expr {
	return ref(c.once("char", func() *expr {
		notSurrogate := alt(
			concat(class(makeSet([]runeRange{{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}})), hexDigit, hexDigit, hexDigit),
			concat(class(makeSet([]runeRange{{'d', 'd'}, {'D', 'D'}})), class(runeSet{{'0', '7'}}), hexDigit, hexDigit),
		)
		return alt(class(plainChars), concat(char('\\'), alt(class(makeSet([]runeRange{{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}})), concat(char('u'), notSurrogate))))
	}))
}

func (c *jsonCompiler) anyString() *expr {
	return ref(c.once("string", func() *expr { return concat(char('"'), star(c.stringChar()), char('"')) }))
}

// anyValue returns the rule of any JSON value.
func (c *jsonCompiler) anyValue() int {
	if i, ok := c.shared["value"]; ok {
		return i
	}
	v := c.newRule("value", -1)
	c.shared["value"] = v
	obj := c.anyObject()
	arr := c.newRule("array", -1)
	// Whitespace, when admitted, follows each token but the last, so
	// every text has one parse.
	ws := c.ws()
	item := concat(ref(v), ws)
	c.rules[arr].body = concat(char('['), ws, opt(concat(item, star(concat(char(','), ws, item)))), char(']'))
	num := c.once("number", c.number)
	c.rules[v].body = alt(ref(obj), ref(arr), c.anyString(), ref(num), literal("true"), literal("false"), literal("null"))
	return v
}

// anyObject returns the rule of any JSON object.
func (c *jsonCompiler) anyObject() int {
	if i, ok := c.shared["object"]; ok {
		return i
	}
	obj := c.newRule("object", -1)
	c.shared["object"] = obj
	v := c.anyValue()
	ws := c.ws()
	member := concat(c.anyString(), ws, char(':'), ws, ref(v), ws)
	c.rules[obj].body = concat(char('{'), ws, opt(concat(member, star(concat(char(','), ws, member)))), char('}'))
	return obj
}

// jsonEscaped rewrites an expression over a string's content into one over
// its JSON form: each character as itself, or its escape when JSON needs
// one.
func jsonEscaped(e *expr) *expr {
	switch e.op {
	case opClass:
		alts := []*expr{}
		if plain := e.set.intersect(plainChars); !plain.empty() {
			alts = append(alts, class(plain))
		}
		for _, r := range e.set.minus(plainChars) {
			for ch := r.lo; ch <= r.hi; ch++ {
				alts = append(alts, literal(jsonString(string(ch))[1:len(jsonString(string(ch)))-1]))
			}
		}
		return alt(alts...)
	case opConcat, opAlt, opRepeat:
		out := *e
		out.subs = make([]*expr, len(e.subs))
		for i, s := range e.subs {
			out.subs[i] = jsonEscaped(s)
		}
		return &out
	}
	return e
}

// jsonString writes s as a JSON string, with short escapes and no HTML
// escaping.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// maxInteger is the largest integer a schema's output writes: 16 digits,
// as integer() allows, so that every one fits a float64's mantissa
// closely enough for readers.
const maxInteger = 1e16 - 1

// boundKeywords are the integer bounds a schema may give.
var boundKeywords = []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}

// firstBound returns the first bound keyword's value in s, or nil.
func firstBound(s *jvalue) *jvalue {
	for _, kw := range boundKeywords {
		if v := s.get(kw); v != nil {
			return v
		}
	}
	return nil
}

// intBounds reads s's bounds as the closed range [lo, hi] of integers,
// within what integer() writes.
func (c *jsonCompiler) intBounds(s *jvalue) (lo, hi int64, err error) {
	lo, hi = -maxInteger, maxInteger
	for _, kw := range boundKeywords {
		v := s.get(kw)
		if v == nil {
			continue
		}
		if v.kind != 'n' {
			return 0, 0, c.fail(v.off, ErrSyntax, "%s must be a number", kw)
		}
		f, perr := strconv.ParseFloat(string(v.raw), 64)
		if perr != nil {
			return 0, 0, c.fail(v.off, ErrSyntax, "%s %s is not a number this engine reads", kw, v.raw)
		}
		switch kw {
		case "minimum":
			f = math.Ceil(f)
		case "exclusiveMinimum":
			f = math.Floor(f) + 1
		case "maximum":
			f = math.Floor(f)
		case "exclusiveMaximum":
			f = math.Ceil(f) - 1
		}
		f = max(-maxInteger, min(maxInteger, f))
		if strings.HasPrefix(kw, "exclusiveMin") || kw == "minimum" {
			lo = max(lo, int64(f))
		} else {
			hi = min(hi, int64(f))
		}
	}
	if lo > hi {
		return 0, 0, c.fail(s.off, ErrSyntax, "no integer lies within the bounds: the least is %d, the greatest %d", lo, hi)
	}
	return lo, hi, nil
}

// intRange matches exactly the integers in [lo, hi], written as JSON
// writes them: no leading zeros, no "-0".
func intRange(lo, hi int64) *expr {
	var alts []*expr
	if lo < 0 {
		alts = append(alts, concat(char('-'), natRange(max(1, -hi), -lo)))
	}
	if hi >= 0 {
		alts = append(alts, natRange(max(0, lo), hi))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// natRange matches the decimal numerals of [a, b], 0 <= a <= b: for each
// length of numeral, the range of that length, digit by digit.
func natRange(a, b int64) *expr {
	var alts []*expr
	for L := len(strconv.FormatInt(a, 10)); L <= len(strconv.FormatInt(b, 10)); L++ {
		lo, hi := int64(math.Pow10(L-1)), int64(math.Pow10(L))-1
		if L == 1 {
			lo = 0
		}
		lo, hi = max(lo, a), min(hi, b)
		alts = append(alts, digitsRange(strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// digitsRange matches the strings of len(s) digits from s to t (s <= t,
// of one length), leading zeros allowed: the first digit fixed at s's,
// strictly between, or fixed at t's, and the rest recursively.
func digitsRange(s, t string) *expr {
	switch {
	case s == t:
		return literal(s)
	case strings.Trim(s, "0") == "" && strings.Trim(t, "9") == "":
		return repeat(digit, len(s), len(s)) // every string of the length: no branching
	case len(s) == 1:
		return class(runeSet{{rune(s[0]), rune(t[0])}})
	case s[0] == t[0]:
		return concat(char(rune(s[0])), digitsRange(s[1:], t[1:]))
	}
	n := len(s) - 1
	alts := []*expr{concat(char(rune(s[0])), digitsRange(s[1:], strings.Repeat("9", n)))}
	if t[0]-s[0] > 1 {
		alts = append(alts, concat(class(runeSet{{rune(s[0] + 1), rune(t[0] - 1)}}), repeat(digit, n, n)))
	}
	alts = append(alts, concat(char(rune(t[0])), digitsRange(strings.Repeat("0", n), t[1:])))
	return alt(alts...)
}
