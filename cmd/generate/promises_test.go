package main

// promises_test.go checks that what the docs show generate printing is
// what it prints (docs/testing.md lists these with the other promises).

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docTranscripts returns the "$ go run ./cmd/generate ARGS" lines of the
// fenced blocks of a Markdown file, each with the lines shown after it.
func docTranscripts(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var cur string
	inBlock := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock, cur = !inBlock, ""
		case !inBlock:
		case strings.HasPrefix(line, "$ go run ./cmd/generate"):
			cur = strings.TrimSpace(strings.TrimPrefix(line, "$ go run ./cmd/generate"))
			out[cur] = []string{}
		case cur != "":
			out[cur] = append(out[cur], line)
		}
	}
	return out
}

// TestSamplingDocTranscripts: every "$ go run ./cmd/generate ..." shown
// in docs/sampling.md prints exactly the lines shown after it.
func TestSamplingDocTranscripts(t *testing.T) {
	runs := docTranscripts(t, "../../docs/sampling.md")
	if len(runs) < 4 {
		t.Fatalf("docs/sampling.md shows %d runs of generate, want the -logprobs, -samples, -beams and -compare ones", len(runs))
	}
	for args, want := range runs {
		out, errOut, code := runCLI(t, strings.Fields(args)...)
		if code != 0 {
			t.Errorf("generate %s: status %d: %s", args, code, errOut)
			continue
		}
		got := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("generate %s prints\n%s\ndocs/sampling.md shows\n%s", args, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestExplainExcerptInTheDocs: docs/sampling.md's excerpt of -explain
// -temperature 1.5 -n 50 -explain-top 4 is lines of its output, in
// order, and its story holds: with -min-p 0.02 position 33's 's' is cut
// by min-p and the text goes on "the lantern glows".
func TestExplainExcerptInTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sampling.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go run ./cmd/generate -explain -temperature 1.5 -n 50 -explain-top 4"
	_, rest, ok := strings.Cut(string(doc), cmd+"\n```\n\n```\n")
	excerpt, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("docs/sampling.md has no excerpt after %q", cmd)
	}
	out, errOut, code := runCLI(t, strings.Fields(strings.TrimPrefix(cmd, "go run ./cmd/generate "))...)
	if code != 0 {
		t.Fatalf("status %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	at := 0
	for want := range strings.Lines(excerpt) {
		want = strings.TrimRight(want, "\n")
		if strings.TrimSpace(want) == "..." {
			continue
		}
		for at < len(lines) && strings.TrimRight(lines[at], " ") != strings.TrimRight(want, " ") {
			at++
		}
		if at == len(lines) {
			t.Fatalf("the excerpt's line\n%s\nis not in the output (in order):\n%s", want, out)
		}
	}

	out, errOut, code = runCLI(t, "-explain", "-temperature", "1.5", "-n", "50", "-explain-top", "4", "-min-p", "0.02")
	if code != 0 {
		t.Fatalf("status %d: %s", code, errOut)
	}
	var pos33 string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(strings.TrimSpace(line), "33 ") {
			pos33 = line
		}
	}
	if !strings.Contains(pos33, "'s'   0.1→min-p") || !strings.Contains(out, "the lantern glows. the boats wait") {
		t.Errorf("-min-p 0.02: position 33 is %q; the docs say 's' is cut by min-p and the text goes on \"the lantern glows. the boats wait\":\n%s", pos33, out)
	}
}

// TestPromptFileAtMostOneMiB: "-prompt-file reads at most 1 MiB of
// UTF-8 from a regular file or standard input": 1 MiB is a prompt, a
// byte more is refused with status 2, from a file and from stdin.
func TestPromptFileAtMostOneMiB(t *testing.T) {
	fits := strings.Repeat("the ", 1<<18) // 1 MiB
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		code int
	}{{fits, 0}, {fits + "a", 2}} {
		path := filepath.Join(dir, "prompt.txt")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runCLI(t, "-prompt-file", path, "-greedy", "-n", "1"); code != tc.code {
			t.Errorf("a %d-byte prompt file: status %d, want %d: %s", len(tc.text), code, tc.code, errOut)
		}
		func() {
			defer func(r io.Reader) { stdin = r }(stdin)
			stdin = strings.NewReader(tc.text)
			if _, errOut, code := runCLI(t, "-prompt-file", "-", "-greedy", "-n", "1"); code != tc.code {
				t.Errorf("a %d-byte prompt on standard input: status %d, want %d: %s", len(tc.text), code, tc.code, errOut)
			}
		}()
	}
}
