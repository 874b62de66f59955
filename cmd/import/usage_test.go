package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// -h lists every flag in one group, each group with its example, and
// states the exit-status rule in this command's words.
func TestHelpGroupsEveryFlag(t *testing.T) {
	var o options
	if err := command.Check(newFlagSet(&o)); err != nil {
		t.Fatal(err)
	}
	r := imp(t, "-h")
	if err := command.CheckHelp(r.stdout); err != nil {
		t.Error(err)
	}
	for _, want := range []string{"Exit status:\n  0    done\n", "\n  2    refused before any work, nothing done: ", "\n  1    failed after the work began: writing ", "\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: nothing is written"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-h lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "diverged") {
		t.Error("-h speaks of training diverging")
	}
}

func TestVersion(t *testing.T) {
	r := imp(t, "-version")
	if r.code != 0 || r.stdout != cli.Version("import")+"\n" || r.stderr != "" {
		t.Fatalf("-version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// docs/interop.md's flag table for import is the flag set's: names, defaults
// and wording, in the order of -h.
func TestFlagTableInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "interop.md"))
	if err != nil {
		t.Fatal(err)
	}
	var o options
	if err := command.CheckFlagTable(string(doc), newFlagSet(&o)); err != nil {
		t.Errorf("docs/interop.md: %v", err)
	}
}

// An interrupt before the writing writes nothing and exits 130.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "m.safetensors")
	writeST(t, in, &minigpt.Checkpoint{Model: m, Vocab: vocab}, "F64")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	code := exitCode(run(ctx, []string{"-in", in, "-out", filepath.Join(dir, "m.ckpt")}, &out, &errOut), &errOut)
	if code != 130 || !strings.Contains(errOut.String(), "interrupted before writing; nothing written") {
		t.Fatalf("exit %d, %q; want 130", code, errOut.String())
	}
	if got := names(t, dir); len(got) != 1 {
		t.Fatalf("the directory holds %q", got)
	}
}
