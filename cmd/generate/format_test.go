package main

// This file holds the tests of the output-format flags: every sample
// checked by an independent reader (Go's regexp, encoding/json), the
// refusals naming the flag, the exit status when a stop string cuts a
// format short, and -explain's grammar stage.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
)

// samples splits many()'s output into the samples' generated texts
// (each line after a "--- sample" or "--- beam" header, less the prompt).
func samples(t *testing.T, out, prompt string) []string {
	t.Helper()
	var texts []string
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if !strings.HasPrefix(lines[i], "--- ") {
			t.Fatalf("line %d %q: want a sample header", i, lines[i])
		}
		text, ok := strings.CutPrefix(lines[i+1], prompt)
		if !ok {
			t.Fatalf("line %d %q: want the prompt %q first", i+1, lines[i+1], prompt)
		}
		texts = append(texts, text)
	}
	return texts
}

func TestRegexFormat(t *testing.T) {
	const pattern = `the (lamp|keeper|tide) (rises|glows|walks)( at (dawn|dusk))?\.`
	re := regexp.MustCompile(`^(?:` + pattern + `)$`)
	for _, mode := range [][]string{
		{"-temperature", "1.5"},
		{"-greedy"},
		{"-beams", "4"},
	} {
		args := append([]string{"-regex", pattern, "-samples", "4", "-prompt", "at night ", "-n", "60", "-seed", "3"}, mode...)
		out, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", mode, code, errOut)
		}
		texts := samples(t, out, "at night ")
		if len(texts) != 4 {
			t.Fatalf("%v: %d samples, want 4:\n%s", mode, len(texts), out)
		}
		for i, text := range texts {
			if !re.MatchString(text) {
				t.Errorf("%v: sample %d %q does not match %s", mode, i, text, pattern)
			}
		}
		if !strings.Contains(out, ", stop ---") || strings.Contains(out, "length") {
			t.Errorf("%v: every sample should end complete (stop):\n%s", mode, out)
		}
	}
	// One sample streams; a character model at temperature 2 would write
	// almost anything unheld.
	out, errOut, code := runCLI(t, "-regex", `[a-z]+( [a-z]+){3}\.`, "-temperature", "2", "-n", "80", "-seed", "9")
	if code != 0 {
		t.Fatal(errOut)
	}
	if text := strings.TrimSuffix(strings.TrimPrefix(out, "the "), "\n"); !regexp.MustCompile(`^[a-z]+( [a-z]+){3}\.$`).MatchString(text) {
		t.Errorf("streamed %q does not match", text)
	}
}

func TestChoiceAndGrammarFormats(t *testing.T) {
	choices := []string{"the lamp glows.", "the tide rises.", "a gull."}
	args := []string{"-samples", "6", "-temperature", "1.5", "-n", "30"}
	for _, c := range choices {
		args = append(args, "-choice", c)
	}
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatal(errOut)
	}
	for i, text := range samples(t, out, "the ") {
		if !slices.Contains(choices, text) {
			t.Errorf("sample %d %q is none of %q", i, text, choices)
		}
	}

	// The grammar says what this pattern says.
	gbnf := filepath.Join(t.TempDir(), "g.gbnf")
	src := "root ::= \"the \" thing \" \" verb \".\"\nthing ::= \"lamp\" | \"tide\"\nverb ::= [a-z]+\n"
	if err := os.WriteFile(gbnf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^the (lamp|tide) [a-z]+\.$`)
	out, errOut, code = runCLI(t, "-grammar", gbnf, "-samples", "5", "-n", "40", "-temperature", "1.3")
	if code != 0 {
		t.Fatal(errOut)
	}
	for i, text := range samples(t, out, "the ") {
		if !re.MatchString(text) {
			t.Errorf("sample %d %q does not follow the grammar %q", i, text, src)
		}
	}
}

// A BPE model writes any bytes, so JSON is within its reach; as
// initialised it would write noise, so each valid object is the format's.
func TestJSONFormats(t *testing.T) {
	path, _ := clitest.BPECheckpoint(t)
	out, errOut, code := runCLI(t, "-model", path, "-json", "-samples", "3", "-n", "60", "-temperature", "1.5", "-prompt", "x")
	if code != 0 {
		t.Fatal(errOut)
	}
	for i, text := range samples(t, out, "x") {
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Errorf("sample %d %q: %v", i, text, err)
		}
	}

	schema := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"n":{"type":"integer","minimum":1,"maximum":9}},"required":["name","n"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "-model", path, "-json-schema", schema, "-samples", "3", "-n", "60", "-temperature", "1.5", "-prompt", "x")
	if code != 0 {
		t.Fatal(errOut)
	}
	for i, text := range samples(t, out, "x") {
		var v struct {
			Name *string `json:"name"`
			N    *int    `json:"n"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.Name == nil || v.N == nil || len([]rune(*v.Name)) > 6 || *v.N < 1 || *v.N > 9 {
			t.Errorf("sample %d %q: not valid under the schema (%v)", i, text, err)
		}
	}
}

func TestFormatRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gbnf")
	if err := os.WriteFile(bad, []byte("root ::= \"a\" missing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-regex", "a", "-choice", "b"}, "-regex and -choice: give one output format, not 2"},
		{[]string{"-regex", ""}, "-regex is empty"},
		{[]string{"-regex", "(ab"}, "-regex: "},
		{[]string{"-json"}, "the schema needs '{' and '}', which the model never writes"},
		{[]string{"-grammar", bad}, "-grammar " + bad + ": "},
		{[]string{"-grammar", filepath.Join(dir, "none.gbnf")}, "no such file"},
		{[]string{"-json-schema", bad}, "-json-schema " + bad + ": "},
		{[]string{"-regex", "the lamp keeper glows at dusk", "-n", "5"}, "-n 5 with the format"},
		{[]string{"-compare", "-regex", "a"}, "-regex has no effect there"},
	} {
		out, errOut, code := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing written, and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A stop string inside the format cuts it short: the text is written,
// stderr says which sample, and the exit status is 1.
func TestStopCutsFormat(t *testing.T) {
	out, errOut, code := runCLI(t, "-regex", `the (lamp|keeper) glows at dusk\.`, "-stop", "glows", "-greedy")
	if code != 1 || !strings.HasPrefix(out, "the the ") || strings.Contains(out, "glows") {
		t.Fatalf("exit %d, stdout %q: want 1 and the text up to the stop string", code, out)
	}
	if !strings.Contains(errOut, "a stop string cut the text before its format was complete") || !strings.Contains(errOut, "not complete in 1 of 1 samples") {
		t.Errorf("stderr %q", errOut)
	}
	// A stop string past the format's end changes nothing.
	if _, errOut, code := runCLI(t, "-regex", `the lamp glows\.`, "-stop", "zz", "-greedy"); code != 0 {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// -explain names the format among the stages, and the candidates it cut
// say "grammar".
func TestExplainGrammarStage(t *testing.T) {
	out, errOut, code := runCLI(t, "-explain", "-choice", "the lamp", "-choice", "the tide", "-temperature", "1.5", "-n", "10")
	if code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != `prompt "the "; stages: grammar: one of 2 choices, temperature 1.5` {
		t.Errorf("header %q", lines[0])
	}
	cut := 0
	for _, l := range lines[2:] {
		cut += strings.Count(l, "→grammar")
	}
	if cut == 0 {
		t.Errorf("no candidate cut by the grammar stage:\n%s", out)
	}
	out, _, _ = runCLI(t, "-explain", "-regex", "the lamp", "-greedy", "-n", "10")
	if !strings.HasPrefix(out, `prompt "the "; greedy: the most probable character the format allows (grammar: regex "the lamp")`) {
		t.Errorf("greedy header %q", strings.SplitN(out, "\n", 2)[0])
	}
}
