// JSON Schema: the common subset compiled to rules, with a fixed key
// order and no free whitespace unless asked.

package grammar

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp/syntax"
	"strconv"
)

// JSONOptions tunes the JSON a schema admits.
type JSONOptions struct {
	// Whitespace admits up to 20 whitespace characters (space, tab,
	// newline, carriage return) wherever JSON allows whitespace inside a
	// value. Without it the output is compact: no filler at all.
	Whitespace bool
}

// maxWhitespace bounds a run of whitespace, so a model cannot write
// filler for ever.
const maxWhitespace = 20

// The keywords JSONSchema knows. Annotations change nothing; every other
// keyword is refused by name.
var (
	schemaKeywords = map[string]bool{
		"type": true, "properties": true, "required": true, "items": true,
		"enum": true, "const": true, "minItems": true, "maxItems": true,
		"minLength": true, "maxLength": true, "pattern": true,
		"additionalProperties": true, "minimum": true, "maximum": true,
		"exclusiveMinimum": true, "exclusiveMaximum": true,
	}
	schemaAnnotations = map[string]bool{
		"$schema": true, "$id": true, "$comment": true, "title": true,
		"description": true, "default": true, "examples": true,
		"deprecated": true, "readOnly": true, "writeOnly": true,
	}
)

// JSONSchema compiles a JSON Schema into a Grammar whose matches are JSON
// texts valid against it. It supports type (object, array, string,
// number, integer, boolean, null, or a list of them), properties,
// required, items, enum, const, minItems, maxItems, minLength, maxLength,
// pattern, additionalProperties (true or false), and for numbers and
// integers minimum, maximum, exclusiveMinimum and exclusiveMaximum
// (numbers, as JSON Schema 2019 and later write them), and refuses any
// other keyword by name.
//
// The output is one fixed rendering of each valid value: an object's keys
// come in the order properties lists them (optional ones may be left
// out), never keys properties does not list (additionalProperties only
// ever permits those), numbers have at most 16 digits before and after
// the point and 2 in the exponent (so every number fits a float64; a
// bounded number has no exponent, and a bound with more digits after the
// point is rounded inwards to 16), and strings use the short escapes. A
// pattern is, as JSON Schema says, searched for anywhere in the string
// unless it is anchored with ^ or $; it is in Go's RE2 syntax, not
// ECMA-262's.
func JSONSchema(schema []byte, opts JSONOptions) (*Grammar, error) {
	const src = "json schema"
	if len(schema) > MaxSource {
		return nil, newError(src, "", -1, ErrTooLarge, "schema of %d bytes, more than the cap of %d", len(schema), MaxSource)
	}
	root, err := readJSON(src, schema)
	if err != nil {
		return nil, err
	}
	c := newJSONCompiler(string(schema), opts)
	body, err := c.schema(root)
	if err != nil {
		return nil, err
	}
	c.rules[0].body = body
	return compile(src, "the schema", c.text, c.rules, 0)
}

// JSONObject compiles the "json_object" response format: any JSON object.
func JSONObject(opts JSONOptions) (*Grammar, error) {
	c := newJSONCompiler("", opts)
	c.rules[0].body = ref(c.anyObject())
	return compile("json schema", "the schema", "", c.rules, 0)
}

type jsonCompiler struct {
	text   string
	opts   JSONOptions
	rules  []ruleDef
	shared map[string]int // rules made once: value, string, number, ...
}

func newJSONCompiler(text string, opts JSONOptions) *jsonCompiler {
	return &jsonCompiler{text: text, opts: opts, rules: []ruleDef{{name: "root", off: 0}}, shared: map[string]int{}}
}

func (c *jsonCompiler) fail(off int, kind error, format string, args ...any) error {
	return newError("json schema", c.text, off, kind, format, args...)
}

// newRule adds a rule and returns its index; its body is set later.
func (c *jsonCompiler) newRule(name string, off int) int {
	c.rules = append(c.rules, ruleDef{name: name, off: off})
	return len(c.rules) - 1
}

// once returns the shared rule name, making it with make on first use.
func (c *jsonCompiler) once(name string, make func() *expr) int {
	if i, ok := c.shared[name]; ok {
		return i
	}
	i := c.newRule(name, -1)
	c.shared[name] = i
	c.rules[i].body = make()
	return i
}

// schema compiles one (sub)schema into an expression.
func (c *jsonCompiler) schema(s *jvalue) (*expr, error) {
	if len(c.rules) > MaxRules {
		return nil, c.fail(s.off, ErrTooLarge, "the schema needs more than %d rules", MaxRules)
	}
	switch s.kind {
	case 'b':
		if s.b {
			return ref(c.anyValue()), nil
		}
		return none(), nil
	case 'o':
	default:
		return nil, c.fail(s.off, ErrSyntax, "a schema must be an object or a boolean")
	}
	for _, m := range s.members {
		if !schemaKeywords[m.key] && !schemaAnnotations[m.key] {
			return nil, c.fail(m.off, ErrUnsupported, "keyword %q is not supported", m.key)
		}
	}
	if v := s.get("const"); v != nil {
		return c.values(s, []*jvalue{v}, "const")
	}
	if v := s.get("enum"); v != nil {
		if v.kind != 'a' || len(v.elems) == 0 {
			return nil, c.fail(v.off, ErrSyntax, "enum must be a non-empty array")
		}
		return c.values(s, v.elems, "enum")
	}
	types, err := c.types(s)
	if err != nil {
		return nil, err
	}
	var alts []*expr
	for _, t := range types {
		var e *expr
		switch t {
		case "object":
			e, err = c.object(s)
		case "array":
			e, err = c.array(s)
		case "string":
			e, err = c.str(s)
		case "number", "integer":
			e, err = c.numeric(s, t == "integer")
		case "boolean":
			e = alt(literal("true"), literal("false"))
		case "null":
			e = literal("null")
		case "any":
			e = ref(c.anyValue())
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, e)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

// types returns the types s admits: its type keyword, or what its other
// keywords imply, or "any".
func (c *jsonCompiler) types(s *jvalue) ([]string, error) {
	known := map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}
	t := s.get("type")
	switch {
	case t == nil:
		for _, k := range []struct{ kw, typ string }{
			{"properties", "object"}, {"required", "object"}, {"additionalProperties", "object"},
			{"items", "array"}, {"minItems", "array"}, {"maxItems", "array"},
			{"minLength", "string"}, {"maxLength", "string"}, {"pattern", "string"},
			{"minimum", "number"}, {"maximum", "number"}, {"exclusiveMinimum", "number"}, {"exclusiveMaximum", "number"},
		} {
			if s.get(k.kw) != nil {
				return []string{k.typ}, nil
			}
		}
		return []string{"any"}, nil
	case t.kind == 's':
		if !known[t.str] {
			return nil, c.fail(t.off, ErrUnsupported, "type %q is not a JSON Schema type", t.str)
		}
		return []string{t.str}, nil
	case t.kind == 'a' && len(t.elems) > 0:
		var out []string
		for _, e := range t.elems {
			if e.kind != 's' || !known[e.str] {
				return nil, c.fail(e.off, ErrSyntax, "type lists must hold JSON Schema type names")
			}
			out = append(out, e.str)
		}
		return out, nil
	}
	return nil, c.fail(t.off, ErrSyntax, "type must be a type name or a non-empty list of them")
}

// values compiles const or enum: each value in compact form, those whose
// JSON type the schema's type admits.
func (c *jsonCompiler) values(s *jvalue, vals []*jvalue, kw string) (*expr, error) {
	for _, m := range s.members {
		if schemaKeywords[m.key] && m.key != "type" && m.key != kw {
			return nil, c.fail(m.off, ErrUnsupported, "%s together with %q is not supported", kw, m.key)
		}
	}
	var admit map[string]bool
	if s.get("type") != nil {
		types, err := c.types(s)
		if err != nil {
			return nil, err
		}
		admit = map[string]bool{}
		for _, t := range types {
			admit[t] = true
		}
	}
	var alts []*expr
	for _, v := range vals {
		if admit != nil && !admitted(v, admit) {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v.raw); err != nil {
			return nil, c.fail(v.off, ErrSyntax, "%v", err)
		}
		alts = append(alts, literal(b.String()))
	}
	if len(alts) == 0 {
		return nil, c.fail(s.off, ErrSyntax, "no %s value has the schema's type", kw)
	}
	return alt(alts...), nil
}

func admitted(v *jvalue, admit map[string]bool) bool {
	switch v.kind {
	case 'o':
		return admit["object"]
	case 'a':
		return admit["array"]
	case 's':
		return admit["string"]
	case 'b':
		return admit["boolean"]
	case 'z':
		return admit["null"]
	}
	if admit["number"] {
		return true
	}
	f, err := strconv.ParseFloat(string(v.raw), 64)
	return admit["integer"] && err == nil && f == math.Trunc(f)
}

// count reads a non-negative integer keyword no larger than MaxRepeat;
// def when absent.
func (c *jsonCompiler) count(s *jvalue, kw string, def int) (int, error) {
	v := s.get(kw)
	if v == nil {
		return def, nil
	}
	if v.kind != 'n' {
		return 0, c.fail(v.off, ErrSyntax, "%s must be a non-negative integer", kw)
	}
	f, err := strconv.ParseFloat(string(v.raw), 64)
	if err != nil || f < 0 || f != math.Trunc(f) {
		return 0, c.fail(v.off, ErrSyntax, "%s must be a non-negative integer", kw)
	}
	if f > MaxRepeat {
		return 0, c.fail(v.off, ErrTooLarge, "%s of %s is above the cap of %d", kw, v.raw, MaxRepeat)
	}
	return int(f), nil
}

func (c *jsonCompiler) object(s *jvalue) (*expr, error) {
	ws := c.ws()
	if ap := s.get("additionalProperties"); ap != nil && ap.kind != 'b' {
		return nil, c.fail(ap.off, ErrUnsupported, "additionalProperties as a schema is not supported (only true or false)")
	}
	props := s.get("properties")
	if props != nil && props.kind != 'o' {
		return nil, c.fail(props.off, ErrSyntax, "properties must be an object")
	}
	required := map[string]bool{}
	if r := s.get("required"); r != nil {
		if r.kind != 'a' {
			return nil, c.fail(r.off, ErrSyntax, "required must be an array of names")
		}
		for _, e := range r.elems {
			if e.kind != 's' {
				return nil, c.fail(e.off, ErrSyntax, "required must be an array of names")
			}
			if props == nil || props.get(e.str) == nil {
				return nil, c.fail(e.off, ErrUnsupported, "required names %q, which properties does not define", e.str)
			}
			required[e.str] = true
		}
	}
	if props == nil || len(props.members) == 0 {
		if ap := s.get("additionalProperties"); ap != nil && !ap.b {
			return concat(char('{'), ws, char('}')), nil
		}
		return ref(c.anyObject()), nil
	}
	n := len(props.members)
	members := make([]*expr, n)
	for i, p := range props.members {
		for _, q := range props.members[:i] {
			if q.key == p.key {
				return nil, c.fail(p.off, ErrSyntax, "property %q listed twice", p.key)
			}
		}
		val, err := c.schema(p.val)
		if err != nil {
			return nil, err
		}
		r := c.newRule("property-"+p.key, p.off)
		c.rules[r].body = val
		members[i] = concat(literal(jsonString(p.key)), ws, char(':'), ws, ref(r), ws)
	}
	comma := concat(char(','), ws)
	// first[i] and after[i] admit members i..n-1 in order, optional ones
	// left out, when none or some have been written before them: rules,
	// so the expression stays linear in the number of properties.
	first, after := make([]*expr, n+1), make([]*expr, n+1)
	first[n], after[n] = empty(), empty()
	for i := n - 1; i >= 0; i-- {
		key := props.members[i].key
		a := concat(comma, members[i], after[i+1])
		f := concat(members[i], after[i+1])
		if !required[key] {
			a, f = alt(a, after[i+1]), alt(f, first[i+1])
		}
		ra, rf := c.newRule("members-after", -1), c.newRule("members-first", -1)
		c.rules[ra].body, c.rules[rf].body = a, f
		after[i], first[i] = ref(ra), ref(rf)
	}
	return concat(char('{'), ws, first[0], char('}')), nil
}

func (c *jsonCompiler) array(s *jvalue) (*expr, error) {
	var item *expr
	if it := s.get("items"); it == nil {
		item = ref(c.anyValue())
	} else if it.kind == 'a' {
		return nil, c.fail(it.off, ErrUnsupported, "items as a list (a tuple) is not supported")
	} else {
		val, err := c.schema(it)
		if err != nil {
			return nil, err
		}
		r := c.newRule("items", it.off)
		c.rules[r].body = val
		item = ref(r)
	}
	lo, err := c.count(s, "minItems", 0)
	if err != nil {
		return nil, err
	}
	hi, err := c.count(s, "maxItems", -1)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && hi < lo {
		return nil, c.fail(s.get("maxItems").off, ErrSyntax, "maxItems %d is below minItems %d", hi, lo)
	}
	ws := c.ws()
	open, shut := concat(char('['), ws), char(']')
	if hi == 0 {
		return concat(open, shut), nil
	}
	restHi := hi - 1
	if hi < 0 {
		restHi = -1
	}
	item = concat(item, ws)
	items := concat(item, repeat(concat(char(','), ws, item), max(lo-1, 0), restHi))
	if lo == 0 {
		items = opt(items)
	}
	return concat(open, items, shut), nil
}

func (c *jsonCompiler) str(s *jvalue) (*expr, error) {
	lo, err := c.count(s, "minLength", 0)
	if err != nil {
		return nil, err
	}
	hi, err := c.count(s, "maxLength", -1)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && hi < lo {
		return nil, c.fail(s.get("maxLength").off, ErrSyntax, "maxLength %d is below minLength %d", hi, lo)
	}
	q := char('"')
	pat := s.get("pattern")
	if pat == nil {
		if lo == 0 && hi < 0 {
			return c.anyString(), nil
		}
		return concat(q, repeat(c.stringChar(), lo, hi), q), nil
	}
	if pat.kind != 's' {
		return nil, c.fail(pat.off, ErrSyntax, "pattern must be a string")
	}
	if s.get("minLength") != nil || s.get("maxLength") != nil {
		return nil, c.fail(pat.off, ErrUnsupported, "pattern together with minLength or maxLength is not supported")
	}
	re, err := syntax.Parse(pat.str, syntax.Perl)
	if err != nil {
		e := c.fail(pat.off, ErrSyntax, "pattern %q: %v", pat.str, err).(*Error)
		e.Cause = err
		return nil, e
	}
	body, err := fromSyntax(re, pat.str)
	if err != nil {
		var pe *Error
		if ok := asError(err, &pe); ok {
			return nil, c.fail(pat.off, pe.Kind, "pattern %q: %s", pat.str, pe.Msg)
		}
		return nil, err
	}
	anyChar := class(allRunes)
	content := concat(star(anyChar), body, star(anyChar))
	r := c.newRule("pattern", pat.off)
	c.rules[r].body = jsonEscaped(content)
	return concat(q, ref(r), q), nil
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}
