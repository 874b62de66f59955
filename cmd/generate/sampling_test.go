package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// Issue 15, items 5-8: every sampling flag reaches the generator. For
// each flag, the CLI's text equals the library's with the same single
// option and seed, and differs from the text without the flag. The base
// temperature 2 flattens the embedded model's distribution, so that
// every filter has something to cut.
func TestEverySamplingFlagReachesTheLibrary(t *testing.T) {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	const seed, n = 7, 80
	base := []string{"-n", fmt.Sprint(n), "-seed", fmt.Sprint(seed), "-temperature", "2"}
	lib := func(set func(*minigpt.GenerateOptions)) string {
		o := minigpt.GenerateOptions{MaxNewTokens: n, Temperature: 2, Seed: seed}
		set(&o)
		res, err := m.Complete(context.Background(), vocab, "the ", o)
		if err != nil {
			t.Fatal(err)
		}
		return "the " + res[0].Text + "\n"
	}
	baseline, _, _ := runCLI(t, base...)
	if want := lib(func(*minigpt.GenerateOptions) {}); baseline != want {
		t.Fatalf("baseline: CLI %q, library %q", baseline, want)
	}
	eID := func() int { ids, _ := vocab.Encode("e"); return ids[0] }()
	for _, tc := range []struct {
		args []string
		set  func(*minigpt.GenerateOptions)
	}{
		{[]string{"-temperature", "0.7"}, func(o *minigpt.GenerateOptions) { o.Temperature = 0.7 }},
		{[]string{"-temperature", "0"}, func(o *minigpt.GenerateOptions) { o.Greedy = true }},
		{[]string{"-greedy"}, func(o *minigpt.GenerateOptions) { o.Greedy = true }},
		{[]string{"-top-k", "3"}, func(o *minigpt.GenerateOptions) { o.TopK = 3 }},
		{[]string{"-top-p", "0.6"}, func(o *minigpt.GenerateOptions) { o.TopP = 0.6 }},
		{[]string{"-min-p", "0.2"}, func(o *minigpt.GenerateOptions) { o.MinP = 0.2 }},
		{[]string{"-repetition-penalty", "1.5"}, func(o *minigpt.GenerateOptions) { o.RepetitionPenalty = 1.5 }},
		{[]string{"-presence-penalty", "1.5"}, func(o *minigpt.GenerateOptions) { o.PresencePenalty = 1.5 }},
		{[]string{"-frequency-penalty", "1"}, func(o *minigpt.GenerateOptions) { o.FrequencyPenalty = 1 }},
		{[]string{"-logit-bias", "e=-100"}, func(o *minigpt.GenerateOptions) { o.LogitBias = map[int]float64{eID: -100} }},
		{[]string{"-logit-bias", fmt.Sprintf("#%d=3", eID)}, func(o *minigpt.GenerateOptions) { o.LogitBias = map[int]float64{eID: 3} }},
		{[]string{"-no-repeat-ngram", "3"}, func(o *minigpt.GenerateOptions) { o.NoRepeatNGramSize = 3 }},
		{[]string{"-stop", "the"}, func(o *minigpt.GenerateOptions) { o.Stop = []string{"the"} }},
	} {
		name := strings.Join(tc.args, " ")
		args := append(append([]string(nil), base...), tc.args...)
		if tc.args[0] == "-temperature" {
			args = append([]string{"-n", fmt.Sprint(n), "-seed", fmt.Sprint(seed)}, tc.args...)
		}
		got, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		set := tc.set
		if tc.args[0] == "-temperature" {
			set = func(o *minigpt.GenerateOptions) { o.Temperature = 0; tc.set(o) }
		}
		if want := lib(set); got != want {
			t.Errorf("%s: CLI %q, library %q", name, got, want)
		}
		if got == baseline {
			t.Errorf("%s: the output is the same as without the flag: %q", name, got)
		}
	}
}

// -samples and -beams print what minigpt.Complete returns.
func TestSamplesAndBeamsFlags(t *testing.T) {
	m, vocab, _ := minigpt.DefaultModel()
	ctx := context.Background()
	out, errOut, code := runCLI(t, "-samples", "3", "-n", "40", "-seed", "9", "-temperature", "1.5")
	if code != 0 {
		t.Fatal(errOut)
	}
	res, err := m.Complete(ctx, vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 40, N: 3, Seed: 9, Temperature: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, c := range res {
		fmt.Fprintf(&want, "--- sample %d, seed %d, length ---\nthe %s\n", c.Index, 9+c.Index, c.Text)
	}
	if out != want.String() {
		t.Errorf("-samples 3:\n%s\nwant\n%s", out, want.String())
	}
	// Sample 1 is the single run with -seed 10.
	one, _, _ := runCLI(t, "-n", "40", "-seed", "10", "-temperature", "1.5")
	if one != "the "+res[1].Text+"\n" {
		t.Errorf("-seed 10 gave %q, sample 1 of -seed 9 is %q", one, res[1].Text)
	}
	out, errOut, code = runCLI(t, "-beams", "3", "-n", "40")
	if code != 0 {
		t.Fatal(errOut)
	}
	beams, err := m.Complete(ctx, vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 40, NumBeams: 3})
	if err != nil {
		t.Fatal(err)
	}
	if out != "the "+beams[0].Text+"\n" {
		t.Errorf("-beams 3: %q, library %q", out, beams[0].Text)
	}
	if greedy, _, _ := runCLI(t, "-greedy", "-n", "40"); greedy == out {
		t.Errorf("-beams 3 gave the greedy text %q", out)
	}
}

func TestNewBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-min-p", "1.5"}, "-min-p 1.5"},
		{[]string{"-min-p", "NaN"}, "-min-p NaN"},
		{[]string{"-presence-penalty", "3"}, "-presence-penalty 3"},
		{[]string{"-frequency-penalty", "-2.5"}, "-frequency-penalty -2.5"},
		{[]string{"-logit-bias", "e"}, "want CHAR=BIAS"},
		{[]string{"-logit-bias", "e=x"}, `bias "x" is not a number`},
		{[]string{"-logit-bias", "ab=1"}, `"ab" is neither one character nor #ID`},
		{[]string{"-logit-bias", "e=-101"}, "-logit-bias e=-101"},
		{[]string{"-logit-bias", "Z=5"}, "-logit-bias Z=5: unusable text: 'Z' (U+005A) is not in the model's vocabulary"},
		{[]string{"-logit-bias", "#24=5"}, "id 24 is outside the vocabulary"},
		{[]string{"-no-repeat-ngram", "-1"}, "-no-repeat-ngram -1"},
		{[]string{"-stop", "a", "-stop", "b", "-stop", "c", "-stop", "d", "-stop", "e"}, "-stop given 5 times"},
		{[]string{"-stop", ""}, "-stop number 1 is empty"},
		{[]string{"-samples", "0"}, "-samples 0"},
		{[]string{"-samples", "129"}, "-samples 129"},
		{[]string{"-beams", "1"}, "-beams 1"},
		{[]string{"-beams", "65"}, "-beams 65"},
		{[]string{"-beams", "2", "-samples", "3"}, "at most -beams 2"},
		{[]string{"-length-penalty", "1"}, "-length-penalty needs -beams"},
		{[]string{"-beams", "2", "-length-penalty", "Inf"}, "-length-penalty +Inf"},
		{[]string{"-logprobs", "-1"}, "-logprobs -1"},
		{[]string{"-explain", "-logprobs", "3"}, "give one, not both"},
		{[]string{"-explain-top", "0"}, "-explain-top 0"},
		{[]string{"-beams", "2", "-explain"}, "-beams has no per-step"},
		{[]string{"-compare", "-min-p", "0.1"}, "so -min-p has no effect there"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q: want exit 2 naming %q", code, errOut, out, tc.want)
			}
		})
	}
}

// -explain on the embedded model, pinned: testdata/explain.golden is this
// run's output (go test -run Explain -update rewrites it after a change
// that is meant to alter it). Independently of the pin, the characters
// are the library's text for the same options, and each line's p column
// is the library's trace.
func TestExplainPinned(t *testing.T) {
	args := []string{"-explain", "-top-k", "5", "-temperature", "1.5", "-n", "20"}
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatal(errOut)
	}
	golden := filepath.Join("testdata", "explain.golden")
	if *update {
		os.WriteFile(golden, []byte(out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("-explain output changed:\n%s\nwant\n%s", out, want)
	}
	m, vocab, _ := minigpt.DefaultModel()
	res, err := m.Complete(context.Background(), vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 20, Temperature: 1.5, TopK: 5, Seed: 42,
		TraceTopN: 6, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	text, steps := "the "+res[0].Text, res[0].Steps
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2+20+1 || lines[len(lines)-1] != fmt.Sprintf("text %q (length)", text) {
		t.Fatalf("%d lines, last %q; want 23 ending with the text %q", len(lines), lines[len(lines)-1], text)
	}
	chars := vocab.Chars()
	for i, s := range steps {
		prefix := fmt.Sprintf("%5d  %-6s %6.1f%%", 4+i, fmt.Sprintf("%q", chars[s.Chosen.ID]), 100*math.Exp(s.Logprob))
		if !strings.HasPrefix(lines[2+i], prefix) {
			t.Errorf("line %d %q: want it to start %q", i, lines[2+i], prefix)
		}
		// Top-k 5 with 6 candidates shown: the sixth is cut by top-k.
		if !strings.HasSuffix(lines[2+i], "→top-k") {
			t.Errorf("line %d does not end with the top-k cut: %q", i, lines[2+i])
		}
	}
}

// -explain marks the chosen character in every line, also when it was
// drawn from outside the top N shown: it is then listed after them, past
// a "…", with its own probabilities (the library's Chosen record).
func TestExplainMarksChoiceOutsideTop(t *testing.T) {
	out, errOut, code := runCLI(t, "-explain", "-explain-top", "1", "-temperature", "2", "-n", "60", "-seed", "3")
	if code != 0 {
		t.Fatal(errOut)
	}
	m, vocab, _ := minigpt.DefaultModel()
	res, err := m.Complete(context.Background(), vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 60, Temperature: 2, Seed: 3, Trace: true, TraceTopN: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")[2:]
	chars, outside := vocab.Chars(), 0
	for i, s := range res[0].Steps {
		line := lines[i]
		if strings.Count(line, "*") != 1 {
			t.Fatalf("line %d marks %d characters: %q", i, strings.Count(line, "*"), line)
		}
		if s.Top[0].ID == s.Chosen.ID {
			if strings.Contains(line, "…") {
				t.Errorf("line %d: the top candidate was chosen, yet %q lists another", i, line)
			}
			continue
		}
		outside++
		want := fmt.Sprintf(" … *%-4s%5s→%s", fmt.Sprintf("%q", chars[s.Chosen.ID]), pct(s.Chosen.Probs[minigpt.StageRaw]), pct(s.Chosen.Probs[len(s.Chosen.Probs)-1]))
		if !strings.HasSuffix(line, want) {
			t.Errorf("line %d = %q: want it to end %q", i, line, want)
		}
	}
	// At temperature 2 the top character is often not the one drawn.
	if outside < 5 {
		t.Errorf("only %d of 60 characters were drawn from outside the top 1: the case is not tested", outside)
	}
}

// -logprobs: one JSON object per character, the library's log-probabilities,
// then the text.
func TestLogprobsJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "-logprobs", "24", "-n", "15", "-top-p", "0.8", "-temperature", "1.7", "-seed", "3")
	if code != 0 {
		t.Fatal(errOut)
	}
	m, vocab, _ := minigpt.DefaultModel()
	res, err := m.Complete(context.Background(), vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 15, TopP: 0.8, Temperature: 1.7, Seed: 3,
		Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	text, steps := "the "+res[0].Text, res[0].Steps
	sc := bufio.NewScanner(strings.NewReader(out))
	i := 0
	for ; sc.Scan(); i++ {
		if i == 15 {
			var end struct {
				Text, Finish string
				Seed         uint64
			}
			if err := json.Unmarshal(sc.Bytes(), &end); err != nil || end.Text != text || end.Finish != "length" || end.Seed != 3 {
				t.Errorf("last line %s (%v): want text %q", sc.Text(), err, text)
			}
			continue
		}
		var s stepJSON
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, sc.Text())
		}
		if s.ID != steps[i].Chosen.ID || s.Logprob != steps[i].Logprob || s.RawLogprob != steps[i].Chosen.Logprob || s.Pos != 4+i {
			t.Errorf("line %d: %+v, library step %+v", i, s, steps[i])
		}
		// All 24 candidates: the surviving ones' probabilities sum to 1,
		// and every cut one names top-p.
		sum := 0.0
		for _, c := range s.Top {
			if c.Logprob != nil {
				sum += math.Exp(*c.Logprob)
			} else if c.Cut != "top-p" {
				t.Errorf("line %d: %q cut by %q", i, c.Char, c.Cut)
			}
		}
		if len(s.Top) != 24 || math.Abs(sum-1) > 1e-9 {
			t.Errorf("line %d: %d candidates, surviving probability %v", i, len(s.Top), sum)
		}
	}
	if i != 16 {
		t.Errorf("%d lines, want 16", i)
	}
}
