package main

import (
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// -h groups every flag with its example, -version prints the build,
// docs/interop.md's flag table for import is the flag set's, and -h states
// the exit-status rule of a command that writes only at its end.
func TestUsage(t *testing.T) {
	help := clitest.CheckUsage(t, &command, func() *flag.FlagSet { var o options; return newFlagSet(&o) }, run, "docs/interop.md")
	clitest.HelpStates(t, help, false, clitest.WritesAtEnd...)
}

// An interrupt before the writing writes nothing and exits 130.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	in := writeEmbeddedST(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	code := exitCode(run(ctx, []string{"-in", in, "-out", filepath.Join(dir, "m.ckpt")}, &out, &errOut), &errOut)
	if code != 130 || !strings.Contains(errOut.String(), "interrupted before writing; nothing written") {
		t.Fatalf("exit %d, %q; want 130", code, errOut.String())
	}
	if got := testutil.DirNames(t, dir); len(got) != 1 {
		t.Fatalf("the directory holds %q", got)
	}
}
