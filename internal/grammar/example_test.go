// Examples: a regex, a grammar and a refusal, on the embedded model's
// characters.

package grammar_test

import (
	"fmt"

	"example.org/minigpt/internal/grammar"
)

// lanternChars are the 24 characters of the built-in corpus, the
// embedded model's vocabulary (minigpt.LanternBay).
const lanternChars = " .abcdefghiklmnoprstuwy"

// generate stands in for a sampler: it takes the allowed token with the
// lowest id at each step, and stops when the state must end.
func generate(m *grammar.Matcher, tokens [][]byte) string {
	mask := make([]bool, len(tokens))
	s, text := m.Start(), ""
	for !m.MustEnd(s) {
		if err := m.Allowed(s, mask); err != nil {
			return err.Error()
		}
		for id, ok := range mask {
			if ok {
				s, _ = m.Advance(s, id)
				text += string(tokens[id])
				break
			}
		}
	}
	return text
}

func Example() {
	tokens := charTokens(lanternChars)
	g, err := grammar.Regex(`the (lamp|boat) (glows|drifts)\.`)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := g.Bind(tokens)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(generate(m, tokens))

	g, _ = grammar.GBNF(`root ::= "the " noun " " verb "."
noun ::= "keeper" | "tide"
verb ::= "rises" | "walks"`)
	m, _ = g.Bind(tokens)
	fmt.Println(generate(m, tokens))

	g, _ = grammar.Regex(`[0-9]+ boats`)
	_, err = g.Bind(tokens)
	fmt.Println(err)
	// Output:
	// the boat drifts.
	// the keeper rises.
	// constraint cannot be satisfied over this vocabulary: the pattern needs one of [0-9], which the model never writes
}
