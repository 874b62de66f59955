// Random walks over the embedded model's vocabulary: every text a walk
// writes matches (by Go's regexp, or an independent recogniser), no walk
// meets an empty mask before it is complete, and the masks are exactly
// those an independent oracle computes.

package grammar_test

import (
	"fmt"
	"regexp"
	"testing"
	"unicode/utf8"

	"example.org/minigpt/internal/grammar"
)

// lanternPatterns can all be satisfied with the 24 characters of Lantern
// Bay (" .abcdefghiklmnoprstuwy"); several name characters the vocabulary
// lacks, which the engine must never offer.
var lanternPatterns = []string{
	`the (lamp|boat|keeper|tide|bay)s?`,
	`(a|b)*a(a|b){20}`,
	`[a-z ]{3,10}\.`,
	`(the )?(lamp )?keeper`,
	`[^.]*\.`,
	`((the|a) [a-z]+ )+(at|in) (dusk|dawn)\.`,
	`.{0,5}`,
	`(?i)THE LAMP`,
	`\w+( \w+)*`,
	`[[:lower:]]{2}[[:space:]][[:lower:]]{2}`,
	`(ab|cd)*e?`,
	`a{2,4}b{0,3}c`,
	`(?:k(?:e(?:e(?:p(?:e(?:r)?)?)?)?)?)+`,
	`\A(dusk|dawn)\z`,
	`(lamp|lantern|light)( (burns|glows|rests))?\.`,
	`[^aeiou ]+`,
	`x?the[0-9]*`,
	`(a|b|c)*(d|e)(f|g)?`,
	`([a-y] ){1,6}`,
	`(the )*(dusk|dawn)|(boats? ){2}`,
	`^(a|^b)c$`,
	`(lamp|[^l]amp|l[^a]mp)`,
	`$|the`,
	`(.)(.)?(\.)`,
	`(lamp|boat[0-9]|bell)( x| a)*`,
}

func TestRegexWalks(t *testing.T) {
	toks := lanternTokens(t)
	walks := 1000
	if testing.Short() {
		walks = 200
	}
	for i, p := range lanternPatterns {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := grammar.Regex(p)
			m := bind(t, g, err, toks)
			re := regexp.MustCompile(`^(?:` + p + `)$`)
			w := newWalker(m, toks, uint64(i))
			for range walks {
				text := w.walk(t, w.r.IntN(40))
				if !re.Match(text) {
					t.Fatalf("%s: walk wrote %q, which regexp does not match", p, text)
				}
			}
		})
	}
}

// TestRegexMasksExact compares every mask on the walks with the oracle:
// a token is allowed exactly when the regexp program, after the text and
// the token, can still reach a match reading characters of the
// vocabulary.
func TestRegexMasksExact(t *testing.T) {
	toks := lanternTokens(t)
	sigma := []rune{}
	for _, tk := range toks {
		r, _ := utf8.DecodeRune(tk)
		sigma = append(sigma, r)
	}
	for i, p := range lanternPatterns {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := grammar.Regex(p)
			m := bind(t, g, err, toks)
			o := newProgOracle(t, p, sigma, false)
			w := newWalker(m, toks, uint64(100+i))
			w.step = func(s grammar.State, text []byte, mask []bool) {
				os := o.start()
				for _, r := range string(text) {
					os = o.step(os, r)
				}
				if got, want := m.Complete(s), o.complete(os); got != want {
					t.Fatalf("%s after %q: Complete %v, oracle %v", p, text, got, want)
				}
				for id, r := range sigma {
					if want := o.viable(o.step(os, r)); mask[id] != want {
						t.Fatalf("%s after %q: token %q allowed %v, oracle %v", p, text, r, mask[id], want)
					}
				}
			}
			for range 100 {
				w.walk(t, w.r.IntN(20))
			}
		})
	}
}

// lanternGrammars can all be satisfied over Lantern Bay's characters.
var lanternGrammars = []string{
	// Balanced pairs, a opening and b closing.
	"root ::= pair+\npair ::= \"a\" pair* \"b\"",
	// Palindromes over a and b: a parser cannot know where the middle is.
	"root ::= \"a\" root \"a\" | \"b\" root \"b\" | \"a\" | \"b\" | \"\"",
	// Sentences of the corpus's words.
	`root ::= sentence (" " sentence){0,3}
sentence ::= subject " " verb (" " place)? "."
subject ::= "the " noun | "a " noun
noun ::= "lamp keeper" | "boat" "s"? | "tide" | "bell"
verb ::= "walks" | "rings" | "rises" | "drifts" | "glows"
place ::= ("at" | "near" | "over") " the " ("shore" | "rocks" | "bay") | "at " ("dusk" | "dawn")`,
	// Expressions: p for plus, m for times, l and r for parentheses.
	"root ::= expr\nexpr ::= term (\"p\" term)*\nterm ::= factor (\"m\" factor)*\nfactor ::= \"n\" | \"l\" expr \"r\"",
	// Words of letters, some the vocabulary lacks, and a class negated.
	"root ::= word (\" \" word){1,4} \".\" | [^ .]+ (\" \" [^ .]+)* \"!\"?\nword ::= [a-z]{2,6}",
	// Nesting that only ends with a dot.
	"root ::= \"k\" root \"y\" | \".\"",
	// Groups in groups, repetitions of optional things.
	"root ::= (((\"a\" | \"b\")+ \" \")* \"c\")? (\"d\"? \"e\"?){2,3} # a comment",
}

func TestGrammarWalks(t *testing.T) {
	toks := lanternTokens(t)
	walks := 1000
	if testing.Short() {
		walks = 200
	}
	for i, src := range lanternGrammars {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g, err := grammar.GBNF(src)
			m := bind(t, g, err, toks)
			rc, err := newRecogniser(src)
			if err != nil {
				t.Fatal(err)
			}
			w := newWalker(m, toks, uint64(200+i))
			for range walks {
				text := w.walk(t, w.r.IntN(60))
				if !rc.accepts(string(text)) {
					t.Fatalf("walk wrote %q, which the recogniser refuses", text)
				}
			}
		})
	}
}

// TestGrammarMasksExact checks the masks of two grammars whose every
// viable prefix of n characters has a completion of at most n more: over
// the alphabet {a, b}, every prefix up to 7 characters is tried, and a
// token must be allowed exactly when some text of at most 16 characters
// that begins with the prefix and the token is in the language (by the
// recogniser).
func TestGrammarMasksExact(t *testing.T) {
	toks := lanternTokens(t)
	for i := range 2 {
		src := lanternGrammars[i]
		g, err := grammar.GBNF(src)
		m := bind(t, g, err, toks)
		rc, err := newRecogniser(src)
		if err != nil {
			t.Fatal(err)
		}
		// viable[w]: some word of the language of at most 16 letters
		// begins with w.
		viable := map[string]bool{}
		var gen func(w string)
		gen = func(w string) {
			if rc.accepts(w) {
				for k := 0; k <= len(w); k++ {
					viable[w[:k]] = true
				}
			}
			if len(w) < 16 {
				gen(w + "a")
				gen(w + "b")
			}
		}
		gen("")
		idOf := map[string]int{}
		for id, tk := range toks {
			idOf[string(tk)] = id
		}
		mask := make([]bool, len(toks))
		var check func(s grammar.State, w string)
		check = func(s grammar.State, w string) {
			if err := m.Allowed(s, mask); err != nil {
				t.Fatal(err)
			}
			if m.Complete(s) != rc.accepts(w) {
				t.Fatalf("grammar %d after %q: Complete %v", i, w, m.Complete(s))
			}
			for id, tk := range toks {
				want := (tk[0] == 'a' || tk[0] == 'b') && viable[w+string(tk)]
				if mask[id] != want {
					t.Fatalf("grammar %d after %q: token %q allowed %v, want %v", i, w, tk, mask[id], want)
				}
			}
			if len(w) == 7 {
				return
			}
			for _, c := range []string{"a", "b"} {
				if viable[w+c] {
					next, err := m.Advance(s, idOf[c])
					if err != nil {
						t.Fatal(err)
					}
					check(next, w+c)
				}
			}
		}
		check(m.Start(), "")
	}
}

// TestStackDepthCap drives a grammar as deep as it goes: the engine offers
// an opening k only while a frame can still be pushed, and the text can
// always be closed.
func TestStackDepthCap(t *testing.T) {
	toks := lanternTokens(t)
	g, err := grammar.GBNF(lanternGrammars[5])
	m := bind(t, g, err, toks)
	id := map[byte]int{}
	for i, tk := range toks {
		id[tk[0]] = i
	}
	s := m.Start()
	depth := 0
	for m.Allows(s, id['k']) {
		if s, err = m.Advance(s, id['k']); err != nil {
			t.Fatal(err)
		}
		depth++
	}
	if depth != grammar.MaxStackDepth {
		t.Fatalf("took %d k, want %d", depth, grammar.MaxStackDepth)
	}
	if got := m.Remaining(s); got != depth+1 {
		t.Fatalf("Remaining %d, want %d", got, depth+1)
	}
	if s, err = m.Advance(s, id['.']); err != nil {
		t.Fatal(err)
	}
	for range depth {
		if s, err = m.Advance(s, id['y']); err != nil {
			t.Fatal(err)
		}
	}
	if !m.MustEnd(s) {
		t.Fatal("the closed text is not a whole match that must end")
	}
}
