package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// runCLI runs the command as main would, with a generous time limit.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWithin(t, 2*time.Minute, context.Background(), args...)
}

// runWithin runs the command as main would (run, then exitCode) and fails
// the test if it has not returned within d: several cases are about not
// hanging (robust_test.go).
func runWithin(t *testing.T, d time.Duration, ctx context.Context, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := exitCode(run(ctx, args, &out, &errOut), &errOut)
		done <- result{out.String(), errOut.String(), code}
	}()
	select {
	case r := <-done:
		return r.out, r.errOut, r.code
	case <-time.After(d):
		t.Fatalf("generate %q still running after %v", args, d)
		return
	}
}

func TestGreedyFromEmbeddedModel(t *testing.T) {
	out, errOut, code := runCLI(t, "-greedy", "-n", "80")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text := strings.TrimSuffix(out, "\n")
	if len([]rune(text)) != 84 || !strings.HasPrefix(text, "the ") {
		t.Fatalf("output %q: want the prompt and 80 characters", text)
	}
	if !strings.Contains(minigpt.LanternBay, text) {
		t.Errorf("greedy output is not a stretch of the corpus: %q", text)
	}
	if !strings.Contains(errOut, "characters/s") {
		t.Errorf("no timing on stderr: %q", errOut)
	}
	again, _, _ := runCLI(t, "-greedy", "-n", "80")
	if again != out {
		t.Error("greedy twice differs")
	}
}

func TestSamplingIsSeeded(t *testing.T) {
	a, _, _ := runCLI(t, "-temperature", "1.2", "-seed", "7", "-n", "60")
	b, _, _ := runCLI(t, "-temperature", "1.2", "-seed", "7", "-n", "60")
	c, _, _ := runCLI(t, "-temperature", "1.2", "-seed", "8", "-n", "60")
	d, _, _ := runCLI(t, "-temperature", "1.2", "-seed", "9", "-n", "60")
	if a != b {
		t.Error("the same seed gave different text")
	}
	if a == c && c == d {
		t.Error("seeds 7, 8 and 9 gave the same text")
	}
}

func TestCompareTable(t *testing.T) {
	out, errOut, code := runCLI(t, "-compare")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{`prompt: "the "`, "greedy", "temperature=0.8", "top_k=5", "top_p=0.9", "temperature=1.5"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
	// Each line quotes the prompt plus 80 characters.
	if n := len(lines[1]) - len(`greedy         : ""`); n != 84 {
		t.Errorf("greedy line holds %d characters, want 84: %q", n, lines[1])
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "-1"}, "-n -1"},
		{[]string{"-n", "many"}, `invalid value "many" for flag -n`},
		{[]string{"-temperature", "-0.5"}, "-temperature -0.5"},
		{[]string{"-temperature", "NaN"}, "-temperature NaN"},
		{[]string{"-top-k", "-3"}, "-top-k -3"},
		{[]string{"-top-p", "0"}, "-top-p 0"},
		{[]string{"-top-p", "1.5"}, "-top-p 1.5"},
		{[]string{"-repetition-penalty", "0"}, "-repetition-penalty 0"},
		{[]string{"-repetition-penalty", "-2"}, "-repetition-penalty -2"},
		{[]string{"-prompt", ""}, "-prompt is empty"},
		{[]string{"-prompt", "the Keeper"}, `'K' (U+004B) at character 4 (counting from 0) is not in the model's vocabulary`},
		// A prompt of several lines: the line and column too.
		{[]string{"-model", "../../models/shakespeare.ckpt", "-prompt", "ROMEO:\nO <love"}, `'<' (U+003C) at character 9 (counting from 0), line 2, column 3 is not in the model's vocabulary`},
		{[]string{"-prompt", "x", "-prompt-file", "p.txt"}, "give one, not both"},
		{[]string{"-prompt-file", "/nonexistent/prompt.txt"}, "-prompt-file"},
		{[]string{"-prompt-file", "/dev/zero"}, "-prompt-file /dev/zero: is a character device, not a regular file"},
		{[]string{"-prompt-file", "/tmp"}, "-prompt-file /tmp: is a directory, not a regular file"},
		{[]string{"-compare", "-temperature", "0.5"}, "-compare runs its own five settings"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "generate -h") {
				t.Fatalf("exit %d, stderr %q: want exit 2 naming %q with a usage hint", code, errOut, tc.want)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Errorf("want a one-line error with the hint, got %q", errOut)
			}
			if out != "" {
				t.Errorf("stdout should be empty, got %q", out)
			}
		})
	}
}

func TestBadModelFile(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.ckpt")
	os.WriteFile(garbage, []byte("not a checkpoint at all"), 0o644)
	empty := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.ckpt"), "no such file"},
		// Neither format: the error says what each one starts with.
		{garbage, `bad checkpoint: magic number is "not a ch", want "\x89GPT\r\n\x1a\n": not a minigpt checkpoint, nor a safetensors file (an 8-byte header length, then '{')`},
		{empty, "the file is empty: " + cli.Formats},
	} {
		_, errOut, code := runCLI(t, "-model", tc.path, "-greedy")
		// Refused before any work: exit status 2 (cli.ExitRule).
		if code != 2 || !strings.HasPrefix(errOut, "generate: -model "+tc.path+": ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("-model %s: exit %d, stderr %q; want exit 2, the flag, the path and %q", tc.path, code, errOut, tc.want)
		}
		_, errOut, code = runCLI(t, "-model", tc.path, "-info")
		if code != 2 || !strings.Contains(errOut, "-model "+tc.path+": ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("-model %s -info: exit %d, stderr %q; want exit 2 and %q", tc.path, code, errOut, tc.want)
		}
	}
}

// A safetensors file is a model as it comes: generate reads it by its
// content, whatever its name, and writes what the checkpoint it was
// exported from writes.
func TestSafetensorsModel(t *testing.T) {
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := minigpt.WriteSafetensors(&buf, &minigpt.Checkpoint{Model: m, Vocab: v, Step: 1200}, "F64"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"lb.safetensors", "lb.ckpt", "weights"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, errOut, code := runCLI(t, "-model", path, "-greedy", "-n", "40")
		want, _, _ := runCLI(t, "-greedy", "-n", "40")
		if code != 0 || got != want {
			t.Errorf("-model %s: exit %d (%s), %q; want the embedded model's %q", name, code, errOut, got, want)
		}
		info, errOut, code := runCLI(t, "-model", path, "-info")
		if code != 0 || !strings.Contains(info, "104728 parameters") || !strings.Contains(info, "weights-only") {
			t.Errorf("-model %s -info: exit %d (%s), %q", name, code, errOut, info)
		}
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	errOut, _, code := runCLI(t, "-h") // usage goes to stdout
	if code != 0 {
		t.Fatalf("-h exits %d", code)
	}
	var o options
	newFlagSet(&o).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(errOut, "-"+f.Name) {
			t.Errorf("-h does not document -%s", f.Name)
		}
	})
	for _, def := range []string{`(default "the ")`, "(default 200)", "(default 42)", "(default 1)"} {
		if !strings.Contains(errOut, def) {
			t.Errorf("-h does not show %s", def)
		}
	}
}

// A model whose vocabulary has a newline takes a multi-line prompt from a
// file, and -loops reports on stderr.
func TestPromptFileWithNewlines(t *testing.T) {
	corpus := strings.Repeat("ROMEO:\nhello there.\n\nJULIET:\nhi again.\n\n", 40)
	d, err := minigpt.NewDataset(corpus, nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	cfg := minigpt.Config{VocabSize: d.Vocab.Size(), BlockSize: 16, EmbedDim: 16, Heads: 2, Layers: 1}
	m, err := minigpt.NewModel(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.ckpt")
	if err := minigpt.SaveCheckpoint(model, &minigpt.Checkpoint{Model: m, Vocab: d.Vocab}); err != nil {
		t.Fatal(err)
	}
	prompt := filepath.Join(dir, "prompt.txt")
	os.WriteFile(prompt, []byte("ROMEO:\nhello\n"), 0o644)
	out, errOut, code := runCLI(t, "-model", model, "-prompt-file", prompt, "-n", "30", "-loops", "-loop-window", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "ROMEO:\nhello\n") || len([]rune(out)) != 13+30+1 {
		t.Errorf("output %q: want the two-line prompt and 30 characters", out)
	}
	if !strings.Contains(errOut, "loop onset") {
		t.Errorf("-loops reported nothing: %q", errOut)
	}
}

func TestPromptFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("the Zoo"), 0o644)
	_, errOut, code := runCLI(t, "-prompt-file", bad)
	if code != 2 || !strings.Contains(errOut, "-prompt-file "+bad) || !strings.Contains(errOut, `'Z' (U+005A) at character 4 (counting from 0)`) {
		t.Fatalf("exit %d, %q: want exit 2 naming -prompt-file and the character", code, errOut)
	}
	bom := filepath.Join(dir, "bom.txt")
	os.WriteFile(bom, []byte("\uFEFFthe "), 0o644)
	out, errOut, code := runCLI(t, "-prompt-file", bom, "-greedy", "-n", "5")
	if code != 0 || !strings.HasPrefix(out, "the ") {
		t.Fatalf("byte-order mark: exit %d, out %q, err %q", code, out, errOut)
	}
}

func TestInterruptExits130(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	if code := exitCode(run(ctx, []string{"-n", "50"}, &out, &errOut), &errOut); code != 130 || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d, %q: want 130 and 'interrupted'", code, errOut.String())
	}
}

// -info describes a checkpoint (after checking all of it): the
// embedded model's shape, vocabulary and step, a full checkpoint's
// training settings, and a clear error for a missing file.
func TestInfo(t *testing.T) {
	out, errOut, code := runCLI(t, "-info")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"the embedded Lantern Bay model, weights-only", "104728 parameters: vocab 24, block 32, width 64, 4 heads, 2 layers", `" .abcdefghiklmnoprstuvwy"`, "step:       1200"} {
		if !strings.Contains(out, want) {
			t.Errorf("-info output lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	m, vocab, _ := minigpt.DefaultModel()
	d, _ := minigpt.NewDataset(minigpt.LanternBay, vocab, m.Config().BlockSize)
	tc := minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches, tc.Seed = 0, 3, 1, 9
	tr, err := minigpt.NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "full.ckpt")
	if err := minigpt.SaveCheckpoint(path, tr.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "-info", "-model", path)
	if code != 0 || !strings.Contains(out, "full (resumable)") || !strings.Contains(out, "0 steps of batch 3, lr 0.003, seed 9") || !strings.Contains(out, "corpus:     SHA-256 ") {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "-info", "-model", filepath.Join(dir, "missing.ckpt"))
	if code != 2 || !strings.Contains(errOut, "-info") { // refused before any work (cli.ExitRule)
		t.Fatalf("missing file: exit %d, %q", code, errOut)
	}
	// A flipped byte in the weights: the header still reads, but -info
	// refuses rather than describe an unverified file (it printed the
	// fields with exit 0 before).
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	damaged := filepath.Join(dir, "damaged.ckpt")
	if err := os.WriteFile(damaged, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "-info", "-model", damaged)
	if code != 2 || !strings.Contains(errOut, "checksum mismatch") || strings.Contains(out, "step:") {
		t.Fatalf("damaged file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestLoopOnset(t *testing.T) {
	for _, tc := range []struct {
		text string
		w    int
		want int
	}{
		{"abcabc", 3, 0},
		{"xyzabcqabc", 3, 3},
		{"ababa", 2, 0},  // "ab" again at 2
		{"abcab", 3, -1}, // only overlapping repeats
		{"aaa", 2, -1},   // the later copy would overlap
		{"aaaa", 2, 0},
		{"abcdef", 2, -1},
		{"", 3, -1},
		{"ab", 5, -1},
		{"héhé", 2, 0},   // counted in characters, not bytes
		{"x日本y日本", 2, 1}, // CJK windows
		{"the lamp the lamp", 20, -1},
	} {
		if got := loopOnset(tc.text, tc.w); got != tc.want {
			t.Errorf("loopOnset(%q, %d) = %d, want %d", tc.text, tc.w, got, tc.want)
		}
	}
}
