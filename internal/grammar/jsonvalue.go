// An order-keeping reader of JSON text: JSON Schema's properties are
// generated in the order the schema lists them, which encoding/json's maps
// lose.

package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
)

// jvalue is one JSON value with where it stands in the text.
type jvalue struct {
	kind    byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	off     int  // byte offset of the value
	members []jmember
	elems   []*jvalue
	str     string // 's': the decoded string
	b       bool   // 'b'
	raw     []byte // the value's text
}

type jmember struct {
	key string
	off int // byte offset of the key
	val *jvalue
}

func (v *jvalue) get(key string) *jvalue {
	for _, m := range v.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// readJSON parses text, which must be one JSON value, refusing nesting
// deeper than MaxNesting.
func readJSON(source string, text []byte) (*jvalue, error) {
	var anyv any
	if err := json.Unmarshal(text, &anyv); err != nil {
		off := -1
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset) - 1
		}
		e := newError(source, string(text), max(off, 0), ErrSyntax, "%v", err)
		e.Cause = err
		return nil, e
	}
	r := &jreader{src: text, source: source}
	return r.value(0)
}

type jreader struct {
	src    []byte
	pos    int
	source string
}

func (r *jreader) space() {
	for r.pos < len(r.src) {
		switch r.src[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// value reads one value of text already known to be valid JSON.
func (r *jreader) value(depth int) (*jvalue, error) {
	r.space()
	if depth > MaxNesting {
		return nil, newError(r.source, string(r.src), r.pos, ErrTooLarge, "values nested deeper than %d", MaxNesting)
	}
	v := &jvalue{off: r.pos}
	switch c := r.src[r.pos]; c {
	case '{':
		v.kind = 'o'
		r.pos++
		for {
			r.space()
			if r.src[r.pos] == '}' {
				r.pos++
				break
			}
			if r.src[r.pos] == ',' {
				r.pos++
				r.space()
			}
			koff := r.pos
			k, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			r.space()
			r.pos++ // ':'
			val, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.members = append(v.members, jmember{k.str, koff, val})
		}
	case '[':
		v.kind = 'a'
		r.pos++
		for {
			r.space()
			if r.src[r.pos] == ']' {
				r.pos++
				break
			}
			if r.src[r.pos] == ',' {
				r.pos++
			}
			e, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
		}
	case '"':
		v.kind = 's'
		end := r.pos + 1
		for r.src[end] != '"' {
			if r.src[end] == '\\' {
				end++
			}
			end++
		}
		end++
		if err := json.Unmarshal(r.src[r.pos:end], &v.str); err != nil {
			return nil, newError(r.source, string(r.src), r.pos, ErrSyntax, "%v", err)
		}
		r.pos = end
	case 't', 'f', 'n':
		v.kind, v.b = 'b', c == 't'
		if c == 'n' {
			v.kind = 'z'
		}
		for r.pos < len(r.src) && r.src[r.pos] >= 'a' && r.src[r.pos] <= 'z' {
			r.pos++
		}
	default:
		v.kind = 'n'
		for r.pos < len(r.src) && bytes.IndexByte([]byte("+-.0123456789eE"), r.src[r.pos]) >= 0 {
			r.pos++
		}
	}
	v.raw = r.src[v.off:r.pos]
	return v, nil
}
