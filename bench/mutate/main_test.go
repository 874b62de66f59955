package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestParseList reads a list in the documented format: names, the
// behaviour, several-line snippets with their tabs, quoted test words.
func TestParseList(t *testing.T) {
	list := "# a comment\n\n## one: breaks a thing\nfile: a/b.go\ntest: -short -run '^(TestA|TestB)$' ./a\n<<<<\n\tx := 1\n\ty := 2\n====\n\tx := 2\n>>>>\n\n" +
		"## two: breaks another\nfile: c.go\ntest: -run \"Test C\" .\n<<<<\nold\n====\n\n>>>>\n"
	ms, err := parseList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d mutants, want 2", len(ms))
	}
	a, b := ms[0], ms[1]
	if a.num != 1 || a.name != "one" || a.breaks != "breaks a thing" || a.file != "a/b.go" || a.old != "\tx := 1\n\ty := 2" || a.new != "\tx := 2" {
		t.Errorf("first mutant %+v", a)
	}
	if !slices.Equal(a.test, []string{"-short", "-run", "^(TestA|TestB)$", "./a"}) || !slices.Equal(b.test, []string{"-run", "Test C", "."}) {
		t.Errorf("test words %q and %q", a.test, b.test)
	}
	if b.num != 2 || b.old != "old" || b.new != "" {
		t.Errorf("second mutant %+v: an empty replacement deletes the snippet", b)
	}
	for _, bad := range []string{
		"## x: y\ntest: .\n<<<<\na\n====\nb\n>>>>\n",                   // no file
		"## x: y\nfile: f\n<<<<\na\n====\nb\n>>>>\n",                   // no test
		"## x: y\nfile: f\ntest: .\n<<<<\na\n====\na\n>>>>\n",          // no change
		"## x: y\nfile: f\ntest: .\n<<<<\na\n",                         // unterminated
		"## x y\nfile: f\n",                                            // no behaviour
		"## x: y\nfile: f\ntest: '.\n",                                 // unterminated quote
		"stray line\n",                                                 // not the format
		"## x: y\nfile: f\ntest: .\n<<<<\na\n====\nb\n>>>>\n## x: z\n", // twice
	} {
		if _, err := parseList(bad); err == nil {
			t.Errorf("parseList accepted %q", bad)
		}
	}
}

// TestShippedList: the repository's list parses and has at least 60
// mutants, each naming its behaviour and ending its test words with a
// package. (Whether the snippets are still found is -check's job: a
// stale mutant must not fail the module's tests.)
func TestShippedList(t *testing.T) {
	b, err := os.ReadFile("mutants.txt")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := parseList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 60 {
		t.Errorf("%d mutants, want at least 60", len(ms))
	}
	for _, m := range ms {
		if last := m.test[len(m.test)-1]; !strings.HasPrefix(last, ".") {
			t.Errorf("mutant %s: its test words %q end without a package", m.name, m.test)
		}
	}
}

// TestRerun: the rerun of the failing tests replaces the -run pattern and
// keeps the other flags and the packages.
func TestRerun(t *testing.T) {
	got := rerun([]string{"-short", "-run", "^TestX", "-timeout", "60s", ".", "./a"}, []string{"TestA", "ExampleB_c"})
	want := []string{"-run", "^(TestA|ExampleB_c)$", "-short", "-timeout", "60s", ".", "./a"}
	if !slices.Equal(got, want) {
		t.Errorf("rerun = %q, want %q", got, want)
	}
	out := "--- FAIL: TestA (0.1s)\n    --- FAIL: TestA/sub (0.0s)\n--- FAIL: ExampleB_c (0.0s)\nFAIL\n"
	if names := failedNames(out); !slices.Equal(names, []string{"TestA", "ExampleB_c"}) {
		t.Errorf("failedNames = %q", names)
	}
	if !buildFailed("# example.org/minigpt\n./x.go:1: undefined: y\nFAIL\texample.org/minigpt [build failed]\n") || buildFailed(out) {
		t.Error("buildFailed tells a build failure from a test failure wrongly")
	}
}
