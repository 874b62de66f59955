package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"example.org/minigpt/cmd/internal/cli"
)

// Every flag is in one of -h's groups, and each group's example is shown.
func TestHelpGroupsEveryFlag(t *testing.T) {
	var o options
	if err := command.Check(newFlagSet(&o)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out, &bytes.Buffer{}); cli.ExitCode("eval", err, &bytes.Buffer{}) != 0 {
		t.Fatalf("-h: %v", err)
	}
	if err := command.CheckHelp(out.String()); err != nil {
		t.Error(err)
	}
}

// -version prints the build and exits 0.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-version"}, &out, &errOut)
	if cli.ExitCode("eval", err, &errOut) != 0 || out.String() != cli.Version("eval")+"\n" {
		t.Fatalf("-version: %v, %q, %q", err, out.String(), errOut.String())
	}
}

// docs/training.md's flag table is the flag set's.
func TestFlagTableInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "training.md"))
	if err != nil {
		t.Fatal(err)
	}
	var o options
	if err := command.CheckFlagTable(string(doc), newFlagSet(&o)); err != nil {
		t.Errorf("docs/training.md: %v", err)
	}
}
