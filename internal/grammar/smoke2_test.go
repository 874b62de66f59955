package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSmokeGBNF(t *testing.T) {
	toks := charTokens(" .abcdefghiklmnoprstuwy")
	for _, src := range []string{
		"root ::= pair+\npair ::= \"a\" pair* \"b\"\n",
		"root ::= \"a\" root \"a\" | \"b\" root \"b\" | \"a\" | \"b\" | \"\"",
		"root ::= (\"the \" noun \" \" verb \".\")+ # comment\nnoun ::= \"lamp\" | \"boat\"\nverb ::= [a-z]{2,5}",
		"root ::= root \"a\" | \"b\"",
		"root ::= \"{\" root",
	} {
		g, err := GBNF(src)
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
		done := 0
		for w := 0; w < 200; w++ {
			s := m.Start()
			var text strings.Builder
			for step := 0; step < 60; step++ {
				if m.Complete(s) && (m.MustEnd(s) || r.IntN(4) == 0) {
					done++
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
					t.Fatalf("empty mask after %q", text.String())
				}
				id := ids[r.IntN(len(ids))]
				s, err = m.Advance(s, id)
				if err != nil {
					t.Fatal(err)
				}
				text.Write(toks[id])
			}
			if w < 3 {
				t.Logf("%q complete=%v rem=%d", text.String(), m.Complete(s), m.Remaining(s))
			}
		}
		t.Log("done", done, "nodes", len(m.c.all))
	}
}
