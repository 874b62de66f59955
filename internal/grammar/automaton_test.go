// The shape of compiled automata: repetitions stay linear in size.

package grammar

import "testing"

func TestRepetitionSize(t *testing.T) {
	for _, tc := range []struct {
		src  string
		most int
	}{
		// Twelve nested pluses and stars: one copy of . each.
		{`root ::= .+++++++*++++  ++`, 60},
		{`root ::= (("a"+)+ "b")+`, 20},
		{`root ::= "a"{2,}`, 10},
		{`root ::= ("a"?){1000}`, 1010},
	} {
		g, err := GBNF(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.states) > tc.most {
			t.Errorf("%s: %d states, want at most %d", tc.src, len(g.states), tc.most)
		}
	}
}
