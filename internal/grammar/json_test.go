// JSON Schema: walks over a vocabulary that can write JSON give text that
// encoding/json parses and a schema check written here accepts.

package grammar_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"example.org/minigpt/internal/grammar"
)

var testSchemas = []struct {
	schema     string
	whitespace bool
}{
	{`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"},
	  "tags":{"type":"array","items":{"enum":["a","b",3]},"maxItems":3},"active":{"type":"boolean"}},
	  "required":["name"],"additionalProperties":false}`, false},
	{`{"type":"array","minItems":1,"maxItems":3,"items":{"type":"object",
	  "properties":{"x":{"type":"number"},"y":{"type":["string","null"]}},"required":["x"]}}`, false},
	{`{"type":"string","pattern":"^[a-c]+x$"}`, false},
	{`{"type":"string","pattern":"a.b"}`, false},
	{`{"enum":["red",1,true,null,{"k":[1,2]}]}`, false},
	{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object",
	  "properties":{"c":{"const":"deep"}},"required":["c"]}},"required":["b"]}},"required":["a"]}`, false},
	{`{"type":"string","minLength":2,"maxLength":4}`, false},
	{`{"type":"object","properties":{"p":{"type":"integer"},"q":{"type":"array","items":{"type":"null"}}}}`, true},
	{`{"title":"any value","description":"annotations change nothing"}`, false},
	{`{"type":"object"}`, false},
}

func TestJSONSchemaWalks(t *testing.T) {
	toks := asciiTokens()
	walks := 1000
	if testing.Short() {
		walks = 200
	}
	for i, tc := range testSchemas {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := grammar.JSONSchema([]byte(tc.schema), grammar.JSONOptions{Whitespace: tc.whitespace})
			m := bind(t, g, err, toks)
			var schema any
			if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
				t.Fatal(err)
			}
			w := newWalker(m, toks, uint64(300+i))
			for range walks {
				text := w.walk(t, w.r.IntN(40))
				checkJSON(t, text, schema, tc.whitespace)
			}
		})
	}
}

func TestJSONObjectWalks(t *testing.T) {
	toks := asciiTokens()
	g, err := grammar.JSONObject(grammar.JSONOptions{})
	m := bind(t, g, err, toks)
	w := newWalker(m, toks, 400)
	for range 1000 {
		text := w.walk(t, w.r.IntN(60))
		checkJSON(t, text, map[string]any{"type": "object"}, false)
	}
}

// TestJSONKeyOrder checks that keys come in the order properties lists
// them, optional ones left out.
func TestJSONKeyOrder(t *testing.T) {
	toks := asciiTokens()
	g, err := grammar.JSONSchema([]byte(testSchemas[0].schema), grammar.JSONOptions{})
	m := bind(t, g, err, toks)
	order := []string{"name", "age", "tags", "active"}
	w := newWalker(m, toks, 500)
	seen := map[string]bool{}
	for range 1000 {
		text := w.walk(t, 30+w.r.IntN(40))
		keys := topKeys(t, text)
		k := 0
		for _, key := range keys {
			for k < len(order) && order[k] != key {
				k++
			}
			if k == len(order) {
				t.Fatalf("%s: keys %v out of the schema's order", text, keys)
			}
			seen[key] = true
		}
	}
	for _, key := range order {
		if !seen[key] {
			t.Errorf("no walk wrote key %q", key)
		}
	}
}

func topKeys(t *testing.T, text []byte) []string {
	d := json.NewDecoder(bytes.NewReader(text))
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestJSONOverLanternBay: the embedded model cannot write JSON at all.
func TestJSONOverLanternBay(t *testing.T) {
	g, err := grammar.JSONObject(grammar.JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Bind(lanternTokens(t))
	if !errors.Is(err, grammar.ErrUnsatisfiable) || !strings.Contains(err.Error(), "the schema needs '{'") {
		t.Fatalf("Bind: %v, want the schema needs '{'", err)
	}
}

func checkJSON(t *testing.T, text []byte, schema any, whitespace bool) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		t.Fatalf("%q does not parse as one JSON value: %v", text, err)
	}
	if !whitespace {
		var b bytes.Buffer
		if json.Compact(&b, text) != nil || !bytes.Equal(b.Bytes(), text) {
			t.Fatalf("%q has whitespace outside strings", text)
		}
	}
	if err := validate(v, schema); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
}

// validate checks v against the subset of JSON Schema the engine
// supports, written here from the specification.
func validate(v, schema any) error {
	s, ok := schema.(map[string]any)
	if !ok {
		if schema == true {
			return nil
		}
		return fmt.Errorf("schema %v admits nothing", schema)
	}
	if c, ok := s["const"]; ok && !sameJSON(v, c) {
		return fmt.Errorf("%v is not the const %v", v, c)
	}
	if e, ok := s["enum"]; ok {
		found := false
		for _, x := range e.([]any) {
			found = found || sameJSON(v, x)
		}
		if !found {
			return fmt.Errorf("%v is not in the enum", v)
		}
	}
	if ty, ok := s["type"]; ok {
		var types []any
		if l, ok := ty.([]any); ok {
			types = l
		} else {
			types = []any{ty}
		}
		match := false
		for _, x := range types {
			match = match || hasType(v, x.(string))
		}
		if !match {
			return fmt.Errorf("%v is not of type %v", v, ty)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				return fmt.Errorf("required %q missing", r)
			}
		}
		for k, x := range v {
			sub, ok := props[k]
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("key %q not allowed", k)
				}
				continue
			}
			if err := validate(x, sub); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
	case []any:
		if n, ok := s["minItems"].(float64); ok && float64(len(v)) < n {
			return fmt.Errorf("%d items, fewer than %v", len(v), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(v)) > n {
			return fmt.Errorf("%d items, more than %v", len(v), n)
		}
		if it, ok := s["items"]; ok {
			for i, x := range v {
				if err := validate(x, it); err != nil {
					return fmt.Errorf("item %d: %w", i, err)
				}
			}
		}
	case string:
		n := float64(utf8.RuneCountInString(v))
		if m, ok := s["minLength"].(float64); ok && n < m {
			return fmt.Errorf("%q shorter than %v", v, m)
		}
		if m, ok := s["maxLength"].(float64); ok && n > m {
			return fmt.Errorf("%q longer than %v", v, m)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%q does not match %q", v, p)
		}
	}
	return nil
}

func asList(x any) []any { l, _ := x.([]any); return l }

func hasType(v any, ty string) bool {
	switch v := v.(type) {
	case map[string]any:
		return ty == "object"
	case []any:
		return ty == "array"
	case string:
		return ty == "string"
	case bool:
		return ty == "boolean"
	case nil:
		return ty == "null"
	case json.Number:
		if ty == "number" {
			return true
		}
		_, err := v.Int64()
		return ty == "integer" && err == nil
	}
	return false
}

// sameJSON compares a value decoded with UseNumber to one decoded
// without.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	json.Unmarshal(ja, &x)
	json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}
