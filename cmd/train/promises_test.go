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
		"version": "", // -version prints the build and exits
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
