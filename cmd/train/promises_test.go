package main

// promises_test.go guards documented promises of train's -h and
// docs/training.md that no other test held (docs/testing.md lists them).

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// TestResumeRefusesEveryFixedFlag: "-resume ...: give only -steps (to
// extend), the same -corpus, outputs (-out, -weights-only, -plot,
// -keep-best) and -force": every other flag, given with -resume, even
// at its default value, is refused (status 2, the -resume file
// untouched) rather than silently ignored, and those flags are accepted.
func TestResumeRefusesEveryFixedFlag(t *testing.T) {
	allowed := map[string]string{
		"steps": "10", "corpus": "c.txt", "out": "o.ckpt", "weights-only": "true",
		"plot": "p.svg", "keep-best": "true", "force": "true", "resume": "r.ckpt",
		"version":  "",     // -version prints the build and exits
		"progress": "true", // how progress is shown, not how the run trains (-h's list leaves it out: docs/testing.md)
	}
	var o options
	fs := newFlagSet(&o)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := allowed[f.Name]; ok {
			return
		}
		arg := "-" + f.Name + "=" + f.DefValue
		_, _, err := parseFlags([]string{"-resume", "r.ckpt", arg}, io.Discard)
		var ue cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-"+f.Name+" cannot be combined with -resume") {
			t.Errorf("-resume with %s: %v, want a refusal naming -%s", arg, err, f.Name)
		}
	})
	for _, name := range []string{"lr", "batch", "seed", "warmup", "preset"} { // named by docs/training.md
		if fs.Lookup(name) == nil {
			t.Errorf("no flag -%s", name)
		}
	}
	args := []string{"-resume", "r.ckpt"}
	for name, value := range allowed {
		if name != "resume" && name != "version" {
			args = append(args, "-"+name+"="+value)
		}
	}
	if _, _, err := parseFlags(args, io.Discard); err != nil {
		t.Errorf("-resume with the flags it allows (%q): %v", args, err)
	}

	// End to end: the status and the file.
	dir := t.TempDir()
	part := filepath.Join(dir, "part.ckpt")
	if r := train(context.Background(), nil, tinyArgs(part)...); r.code != 0 {
		t.Fatalf("first run: %d %s", r.code, r.msg)
	}
	before, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	r := train(context.Background(), nil, "-resume", part, "-steps", "5", "-lr", "1e-4")
	if r.code != 2 || !strings.Contains(r.msg, "-lr cannot be combined with -resume") {
		t.Errorf("-resume with -lr: status %d, %q; want 2 naming -lr", r.code, r.msg)
	}
	if after, err := os.ReadFile(part); err != nil || string(after) != string(before) {
		t.Errorf("the refused run changed the -resume file (%v)", err)
	}
}

// TestFineTuneExampleInTheDocs runs docs/training.md's fine-tuning
// example as it is written: twelve copies of one sentence, 20 steps from
// the embedded model's file, after which greedy decoding from "the gulls "
// writes the new sentence, where the embedded model wrote another. The
// refusals it names follow: a shape flag that does not match the
// checkpoint, and a character the model has no embedding for.
func TestFineTuneExampleInTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/training.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gulls := filepath.Join(dir, "gulls.txt")
	if err := os.WriteFile(gulls, []byte(strings.Repeat("the gulls sing to the keeper at dawn. ", 12)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "gulls.ckpt")
	const base = "../../models/lanternbay.ckpt"
	if r := train(context.Background(), nil, "-init-from", base, "-corpus", gulls, "-steps", "20", "-batch", "8", "-lr", "1e-3", "-eval-batches", "1", "-out", out); r.code != 0 {
		t.Fatalf("the example's run: status %d: %s", r.code, r.msg)
	}
	greedy := func(path string) string {
		c := load(t, path)
		res, err := c.Model.Complete(context.Background(), c.Vocab, "the gulls ", minigpt.GenerateOptions{MaxNewTokens: 30, Greedy: true})
		if err != nil {
			t.Fatal(err)
		}
		return "the gulls " + res[0].Text
	}
	for _, tc := range []struct{ path, shown string }{{out, "the fine-tuned model"}, {base, "the embedded model"}} {
		if got := greedy(tc.path); !strings.Contains(string(doc), got) {
			t.Errorf("%s writes %q, which docs/training.md does not show", tc.shown, got)
		}
	}
	if r := train(context.Background(), nil, "-init-from", base, "-layers", "3", "-out", filepath.Join(dir, "x.ckpt")); r.code != 2 || !strings.Contains(r.msg, "-layers 3") {
		t.Errorf("-layers 3 with a 2-layer checkpoint: status %d, %q; want a refusal", r.code, r.msg)
	}
	z := filepath.Join(dir, "z.txt")
	if err := os.WriteFile(z, []byte("the zulls"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := train(context.Background(), nil, "-init-from", base, "-corpus", z, "-out", filepath.Join(dir, "y.ckpt")); r.code != 2 || !strings.Contains(r.msg, "'z' (U+007A) at character 4") {
		t.Errorf("a corpus with 'z': status %d, %q; want a refusal naming 'z' at character 4", r.code, r.msg)
	}
}

// TestPresetParameterCounts: the README and docs/training.md give the
// presets' sizes on tiny Shakespeare's 65 characters: baby 816,193
// parameters, shakespeare-char "the 10.8M-parameter model" (10,761,600
// with its tied head).
func TestPresetParameterCounts(t *testing.T) {
	text, err := os.ReadFile("../../data/tinyshakespeare.txt")
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := minigpt.NewVocab(string(text))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"baby": 816193, "shakespeare-char": 10761600} {
		o, _, err := parseFlags([]string{"-preset", name}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		c := minigpt.Config{VocabSize: vocab.Size(), BlockSize: o.block, EmbedDim: o.embd, Heads: o.heads, Layers: o.layers, TiedHead: o.tied}
		if got := c.NumParams(); got != want {
			t.Errorf("-preset %s on tiny Shakespeare: %d parameters, the docs say %d", name, got, want)
		}
	}
}

// TestWarmupAtMostSteps: "-warmup | at most -steps": a warmup of -steps
// is accepted, one step more is refused naming -warmup, and when the
// warmup comes from a preset the message says so.
func TestWarmupAtMostSteps(t *testing.T) {
	if _, _, err := parseFlags([]string{"-steps", "10", "-warmup", "10"}, io.Discard); err != nil {
		t.Errorf("-warmup 10 -steps 10: %v", err)
	}
	_, _, err := parseFlags([]string{"-steps", "10", "-warmup", "11"}, io.Discard)
	var ue cli.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-warmup") {
		t.Errorf("-warmup 11 -steps 10: %v, want a refusal naming -warmup", err)
	}
	if _, _, err := parseFlags([]string{"-preset", "baby", "-steps", "99"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-preset baby") {
		t.Errorf("-preset baby (warmup 100) -steps 99: %v, want a refusal naming the preset", err)
	}
}
