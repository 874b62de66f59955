// JSON itself as rules: whitespace, numbers, strings and their escapes,
// any value and any object, and the escaping of a string's content.

package grammar

import (
	"fmt"
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
