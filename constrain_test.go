package minigpt

// Constrained generation on the embedded model, checked against oracles
// that share nothing with the engine: Go's regexp for the patterns, and
// recognisers written here for the grammars.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// constraintCase is a constraint the embedded model's 24 characters can
// satisfy, and an independent judge of its matches.
type constraintCase struct {
	kind, src string
	match     func(string) bool
}

func regexCase(re string) constraintCase {
	oracle := regexp.MustCompile(`^(?:` + re + `)$`)
	return constraintCase{"regex", re, oracle.MatchString}
}

// satisfiableCases are 20 patterns and 5 grammars over " .abcdefghiklmnoprstuwy".
func satisfiableCases() []constraintCase {
	var cs []constraintCase
	for _, re := range []string{
		`the (lamp|boat) (glows|drifts)\.`,
		`[a-z]{3,6}( [a-z]{2,5}){2}\.`,
		`(a|b)*a(a|b){20}`, // a DFA of 2^21 states
		`(the |a )?(keeper|boats?|tide|gulls?)`,
		`[aeiou]+`,
		`[^aeiou .]{2,8}`,
		`(yes|no)`,
		`\w+`, // digits, capitals and '_' are not the model's
		`.{5}`,
		`(ab|ba)+c?`,
		`[a-z ]*\.`,
		`(the )+lamp`,
		`t(h(e( (k(e(e(p(e(r)?)?)?)?)?)?)?)?)?`,
		`(d|du|dus|dusk)( at)?`,
		`[st][a-z]{0,3}(, )?`, // the model never writes ','
		`\s?boat`,
		`(?i)THE LAMP`,
		`a{2,4}b{0,3}`,
		`[^.]{1,10}\.`,
		`(rocks|rises|rings|rests)( at (dawn|dusk))?\.`,
	} {
		cs = append(cs, regexCase(re))
	}
	sentence := regexp.MustCompile(`^the (keeper|tide|lamp) (rises|walks|glows)\.$`)
	cs = append(cs,
		constraintCase{"grammar", `root ::= "the " noun " " verb "."
noun ::= "keeper" | "tide" | "lamp"
verb ::= "rises" | "walks" | "glows"`, sentence.MatchString},
		constraintCase{"grammar", `root ::= "a" root "b" | "ab"`, func(s string) bool {
			n := len(s) / 2
			return len(s) >= 2 && len(s)%2 == 0 && s == strings.Repeat("a", n)+strings.Repeat("b", n)
		}},
		constraintCase{"grammar", `root ::= "k" root "y" | "."`, func(s string) bool {
			n := strings.Index(s, ".")
			return n >= 0 && s == strings.Repeat("k", n)+"."+strings.Repeat("y", n)
		}},
		constraintCase{"grammar", `# palindromes of a and b
root ::= "a" root "a" | "b" root "b" | [ab] | "aa" | "bb"`, func(s string) bool {
			r := []rune(s)
			slices.Reverse(r)
			return s != "" && strings.Trim(s, "ab") == "" && string(r) == s
		}},
		constraintCase{"grammar", `root ::= word (" " word){1,3} "."   # two to four words
word ::= [a-z]+`, func(s string) bool {
			words, ok := strings.CutSuffix(s, ".")
			ws := strings.Split(words, " ")
			if !ok || len(ws) < 2 || len(ws) > 4 {
				return false
			}
			for _, w := range ws {
				if w == "" || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
					return false
				}
			}
			return true
		}},
	)
	return cs
}

// TestConstrainedSamplesMatch draws seeded samples under each case, at
// temperatures up to 2, with top-k and top-p on and off, greedy and with
// beams, and checks every one with the case's oracle. The budget is 48
// tokens, and then exactly the fewest the format needs: no sample may
// end incomplete when a completion of its length exists. 1,024 samples
// a case with MINIGPT_LONG_TESTS=1, 160 otherwise.
func TestConstrainedSamplesMatch(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	n := 20
	if os.Getenv("MINIGPT_LONG_TESTS") == "1" {
		n = 128
	}
	sampled := []GenerateOptions{
		{Temperature: 0.7}, {}, {Temperature: 1.5}, {Temperature: 2},
		{Temperature: 2, TopK: 3}, {Temperature: 1.5, TopP: 0.8}, {TopK: 10, TopP: 0.95, MinP: 0.05}, {Temperature: 2, RepetitionPenalty: 1.3},
	}
	prompts := []string{"the ", "a", "boats. "}
	for _, cc := range satisfiableCases() {
		t.Run(cc.src, func(t *testing.T) {
			c, err := NewConstraint(vocab, cc.kind, cc.src)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got []Completion, budget int) {
				t.Helper()
				for _, g := range got {
					if !cc.match(g.Text) || g.Incomplete || len(g.IDs) > budget {
						t.Fatalf("%s: sample %d %q (finish %s, incomplete %v, %d tokens of %d) does not match", what, g.Index, g.Text, g.Finish, g.Incomplete, len(g.IDs), budget)
					}
				}
			}
			for _, budget := range []int{48, c.need} {
				for i, o := range sampled {
					o.MaxNewTokens, o.N, o.Seed, o.Constraint = budget, n, uint64(1000*i+budget), c
					got, err := m.Complete(context.Background(), vocab, prompts[i%len(prompts)], o)
					if err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("budget %d, %+v", budget, o), got, budget)
				}
				greedy := GenerateOptions{MaxNewTokens: budget, Greedy: true, Constraint: c}
				beams := GenerateOptions{MaxNewTokens: budget, NumBeams: 6, N: 6, LengthPenalty: 1, Constraint: c}
				for _, o := range []GenerateOptions{greedy, beams} {
					got, err := m.Complete(context.Background(), vocab, "the ", o)
					if err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("budget %d, greedy %v, %d beams", budget, o.Greedy, o.NumBeams), got, budget)
				}
			}
		})
	}
}

// TestConstrainedBatchEqualsAlone: constrained and free requests decoded
// together in a Batch each give the bits they give alone.
func TestConstrainedBatchEqualsAlone(t *testing.T) {
	m, vocab, b := newTestBatch(t, 48)
	cases := satisfiableCases()
	var opts []GenerateOptions
	for i, cc := range cases {
		c, err := NewConstraint(vocab, cc.kind, cc.src)
		if err != nil {
			t.Fatal(err)
		}
		o := GenerateOptions{MaxNewTokens: 30 + i, N: 2, Seed: uint64(i), Temperature: 1.4, Constraint: c}
		switch i % 4 {
		case 1:
			o.Constraint = nil // a free request between constrained ones
		case 2:
			o.N, o.NumBeams = 2, 3
		case 3:
			o.N, o.Greedy = 1, true
		}
		opts = append(opts, o)
	}
	alone := make([][]Completion, len(opts))
	for i, o := range opts {
		var err error
		if alone[i], err = m.Complete(context.Background(), vocab, "the ", o); err != nil {
			t.Fatal(err)
		}
	}
	together := make([][]Completion, len(opts))
	errs := make(chan error, len(opts))
	for i, o := range opts {
		go func() {
			var err error
			together[i], err = b.Complete(context.Background(), vocab, "the ", o)
			errs <- err
		}()
	}
	for range opts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range opts {
		for j := range alone[i] {
			a, g := alone[i][j], together[i][j]
			if !slices.Equal(a.IDs, g.IDs) || a.Finish != g.Finish || a.Score != g.Score || a.Incomplete != g.Incomplete {
				t.Errorf("request %d sample %d: batched %q (%s), alone %q (%s)", i, j, g.Text, g.Finish, a.Text, a.Finish)
			}
		}
	}
}

// TestConstraintRefusals: a constraint the vocabulary cannot meet names
// what it lacks; a malformed one says where; misuse is refused before
// any work.
func TestConstraintRefusals(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind string
		src  []string
		want string
	}{
		{"regex", []string{`[0-9]+ boats`}, "needs one of [0-9], which the model never writes"},
		{"regex", []string{`\{"a":1\}`}, "'{'"},
		{"json-object", nil, "'{'"},
		{"regex", []string{`the (lamp`}, "missing closing )"},
		{"regex", []string{`\bthe\b`}, `\b`},
		{"grammar", []string{"root ::= \"a\"\nbad ::= (\"b\""}, "line 2"},
		{"grammar", []string{`root ::= other`}, "other"},
		{"choice", nil, "no options"},
		{"choice", []string{"yes", "12"}, ""}, // "12" cannot be written, "yes" can: accepted
		{"regex", []string{`(a|)`, `b`}, "one source"},
		{"regex", []string{`x?`}, "only the empty text"},
		{"lark", []string{`start: "a"`}, `unknown kind "lark"`},
	} {
		_, err := NewConstraint(vocab, c.kind, c.src...)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v", c.kind, c.src, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want ErrBadOption saying %q", c.kind, c.src, err, c.want)
		}
	}

	c, err := NewConstraint(vocab, "regex", `the (lamp|boat) (glows|drifts)\.`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 14, Constraint: c}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "needs at least 15 tokens") {
		t.Errorf("14 tokens for a 15-token format: %v", err)
	}
	// Validate says so too, without a model (a server refuses before queueing).
	if err := (GenerateOptions{MaxNewTokens: 14, Constraint: c}).Validate(); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "needs at least 15 tokens") {
		t.Errorf("Validate of 14 tokens for a 15-token format: %v", err)
	}
	if err := (GenerateOptions{MaxNewTokens: 15, Constraint: c}).Validate(); err != nil {
		t.Errorf("Validate of 15 tokens for a 15-token format: %v", err)
	}
	other, err := NewVocab("the lamp glows.x")
	if err != nil {
		t.Fatal(err)
	}
	oc, err := NewConstraint(other, "regex", `the lamp glows\.`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 20, Constraint: oc}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "another vocabulary (14 characters; the model has 24 tokens)") {
		t.Errorf("a constraint of another vocabulary: %v", err)
	}
}

// TestConstrainedIncomplete: a stop string can cut a format short, and
// the completion says so; a format that ends ends the sample with "stop".
func TestConstrainedIncomplete(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConstraint(vocab, "regex", `the (lamp|boat) glows\.`)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []Completion
	o := GenerateOptions{MaxNewTokens: 30, N: 4, Constraint: c, Stop: []string{"lamp", "boat"},
		Stream: func(p *Completion) error { streamed = append(streamed, *p); return nil }}
	got, err := m.Complete(context.Background(), vocab, "a ", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.Text != "the " || g.Finish != "stop" || !g.Incomplete {
			t.Errorf("sample %d cut by a stop string: %q, finish %s, incomplete %v", g.Index, g.Text, g.Finish, g.Incomplete)
		}
	}
	last := 0
	for _, p := range streamed {
		if p.Finish != "" {
			last++
			if !p.Incomplete {
				t.Errorf("the last streamed part of sample %d does not say it is incomplete", p.Index)
			}
		}
	}
	if last != 4 {
		t.Errorf("%d streamed parts end a sample, want 4", last)
	}
	o.Stop, o.Stream = nil, nil
	got, err = m.Complete(context.Background(), vocab, "a ", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.Finish != "stop" || g.Incomplete || len(g.IDs) != 15 {
			t.Errorf("sample %d: %q, finish %s, incomplete %v", g.Index, g.Text, g.Finish, g.Incomplete)
		}
	}
}

// TestConstrainedTrace: the trace's grammar stage is the first to run
// and cuts exactly the tokens the format forbids.
func TestConstrainedTrace(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConstraint(vocab, "choice", "keeper", "kept")
	if err != nil {
		t.Fatal(err)
	}
	for _, greedy := range []bool{false, true} {
		got, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 8, Greedy: greedy, Trace: true, TraceTopN: vocab.Size(), TopK: 3, Constraint: c})
		if err != nil {
			t.Fatal(err)
		}
		g := got[0]
		if g.Text != "keeper" && g.Text != "kept" {
			t.Fatalf("greedy %v: %q", greedy, g.Text)
		}
		for i, st := range g.Steps {
			if !st.Active[stageGrammar] {
				t.Errorf("greedy %v, step %d: the grammar stage did not run", greedy, i)
			}
			for _, cand := range st.Top {
				next := g.Text[:i] + vocab.Token(cand.ID)
				allowed := strings.HasPrefix("keeper", next) || strings.HasPrefix("kept", next)
				if cut := cand.CutBy == stageGrammar; cut == allowed {
					t.Errorf("greedy %v, step %d: %q cut by %v", greedy, i, vocab.chars[cand.ID], cand.CutBy)
				}
			}
		}
	}
}

// jsonLines is a generated corpus of JSON records, one a line.
func jsonLines(n int) string {
	r := seeded(11)
	names := []string{"ada", "bo", "cy", "dee", "eli", "fay", "gus", "hal", "ivy", "jo"}
	tags := []string{"red", "blue", "tall", "old", "new"}
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, `{"name":%q,"age":%d,"ok":%v,"tags":[`, names[r.IntN(len(names))], 18+r.IntN(60), r.IntN(2) == 0)
		for k := range r.IntN(4) {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q", tags[r.IntN(len(tags))])
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// recordSchema is the records' schema, and validRecord its check,
// written from the schema's words rather than from the engine.
const recordSchema = `{"type":"object","additionalProperties":false,
 "properties":{"name":{"type":"string","minLength":1,"maxLength":8},"age":{"type":"integer"},
  "ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},
 "required":["name","age","ok","tags"]}`

func validRecord(text string) bool {
	var v map[string]any
	if json.Unmarshal([]byte(text), &v) != nil || len(v) != 4 {
		return false
	}
	name, ok1 := v["name"].(string)
	age, ok2 := v["age"].(float64)
	_, ok3 := v["ok"].(bool)
	tags, ok4 := v["tags"].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || len([]rune(name)) < 1 || len([]rune(name)) > 8 || age != math.Trunc(age) || len(tags) > 3 {
		return false
	}
	for _, t := range tags {
		if _, ok := t.(string); !ok {
			return false
		}
	}
	return true
}

// TestConstrainedJSONFromATrainedModel trains a small model on JSON
// lines, then samples records with and without the schema: with it every
// sample must parse and pass the schema; without it, the rate is
// measured and reported. MINIGPT_LONG_TESTS=1 trains 600 steps and
// draws 1,024 samples each way; otherwise 150 steps and 128 samples.
func TestConstrainedJSONFromATrainedModel(t *testing.T) {
	steps, samples := 150, 128
	if os.Getenv("MINIGPT_LONG_TESTS") == "1" {
		steps, samples = 600, 1024
	}
	d, err := NewDataset(jsonLines(3000), nil, 48)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(Config{VocabSize: d.Vocab.Size(), BlockSize: 48, EmbedDim: 48, Heads: 4, Layers: 2}, 5)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.LR = steps, 16, 5e-3
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	c, err := NewConstraint(d.Vocab, "json-schema", recordSchema)
	if err != nil {
		t.Fatal(err)
	}
	rate := func(constrained bool) (float64, string) {
		good, example := 0, ""
		for seed := 0; seed < samples; seed += 128 {
			o := GenerateOptions{MaxNewTokens: 90, N: min(128, samples-seed), Seed: uint64(seed), Stop: []string{"\n"}}
			if constrained {
				o.Constraint = c
			}
			got, err := m.Complete(context.Background(), d.Vocab, "]}\n", o)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range got {
				if validRecord(g.Text) {
					good++
				} else if example == "" {
					example = g.Text
				}
			}
		}
		return float64(good) / float64(samples), example
	}
	free, bad := rate(false)
	held, wrong := rate(true)
	t.Logf("after %d steps (loss %.3f): %.1f%% of %d samples are valid records without the schema (say %q), %.1f%% with it",
		steps, tr.Evaluate(), 100*free, samples, bad, 100*held)
	if held != 1 {
		t.Errorf("with the schema %.1f%% of samples are valid records; one that is not: %q", 100*held, wrong)
	}
}
