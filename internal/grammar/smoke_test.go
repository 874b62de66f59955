package grammar

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

func charTokens(s string) [][]byte {
	var out [][]byte
	for _, r := range s {
		out = append(out, []byte(string(r)))
	}
	return out
}

func TestSmoke(t *testing.T) {
	toks := charTokens(" .abcdefghiklmnoprstuwy")
	for _, p := range []string{"the (lamp|boat)s?", "(a|b)*a(a|b){20}", "[a-z ]{3,10}\\.", "x"} {
		g, err := Regex(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := g.Bind(toks)
		if err != nil {
			t.Log(p, err)
			continue
		}
		re := regexp.MustCompile("^(?:" + p + ")$")
		r := rand.New(rand.NewPCG(1, 2))
		mask := make([]bool, len(toks))
		for w := 0; w < 200; w++ {
			s := m.Start()
			text := ""
			for step := 0; step < 100; step++ {
				if m.Complete(s) && (m.MustEnd(s) || r.IntN(4) == 0) {
					break
				}
				if err := m.Allowed(s, mask); err != nil {
					t.Fatal(err)
				}
				var ids []int
				for i, ok := range mask {
					if ok {
						ids = append(ids, i)
					}
				}
				if len(ids) == 0 {
					t.Fatalf("%s: empty mask after %q", p, text)
				}
				id := ids[r.IntN(len(ids))]
				s, err = m.Advance(s, id)
				if err != nil {
					t.Fatal(err)
				}
				text += string(toks[id])
			}
			if m.Complete(s) && !re.MatchString(text) {
				t.Fatalf("%s: %q", p, text)
			}
		}
	}
}
