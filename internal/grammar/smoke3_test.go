package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSmokeJSON(t *testing.T) {
	var chars strings.Builder
	for r := rune(32); r < 127; r++ {
		chars.WriteRune(r)
	}
	chars.WriteString("é日\n")
	toks := charTokens(chars.String())
	for _, src := range []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b",3]},"maxItems":3}},"required":["name"]}`,
		`{"type":"string","pattern":"^[a-c]+x$"}`,
		`{"type":"string","pattern":"a.b"}`,
		`{"type":["number","null","boolean"]}`,
		`{"format":"email"}`,
		`{"type":"object"}`,
	} {
		g, err := JSONSchema([]byte(src), JSONOptions{})
		if err != nil {
			t.Log(err)
			continue
		}
		m, err := g.Bind(toks)
		if err != nil {
			t.Log(err)
			continue
		}
		r := rand.New(rand.NewPCG(1, 2))
		mask := make([]bool, len(toks))
		for w := 0; w < 300; w++ {
			s := m.Start()
			var text strings.Builder
			budget := 80
			for step := 0; ; step++ {
				if m.Complete(s) && (m.MustEnd(s) || r.IntN(4) == 0) {
					break
				}
				if err := m.AllowedWithin(s, budget-step, mask); err != nil {
					t.Fatal(err)
				}
				var ids []int
				for i, ok := range mask {
					if ok {
						ids = append(ids, i)
					}
				}
				if len(ids) == 0 {
					t.Fatalf("empty mask after %q complete %v", text.String(), m.Complete(s))
				}
				id := ids[r.IntN(len(ids))]
				s, err = m.Advance(s, id)
				if err != nil {
					t.Fatal(err)
				}
				text.Write(toks[id])
			}
			var v any
			if err := json.Unmarshal([]byte(text.String()), &v); err != nil {
				t.Fatalf("%s: %q: %v", src, text.String(), err)
			}
			if w < 3 {
				t.Logf("%s", text.String())
			}
		}
	}
}
