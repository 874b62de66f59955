// Package clitest holds the checks every command's tests share: -h,
// -version and the docs' flag table against the command's flag set, and
// (on Linux) a run on a disk that fills up. Only tests import it.
package clitest

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/cli"
)

// Run is a command's testable entry point, the one it hands to cli.Main.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// CheckUsage checks what every command promises about its usage, and
// returns its -h text for the command's own checks (its exit-status
// rule, say):
//   - every flag of newFlags() is in one of c's groups (c.Check);
//   - -h exits 0 and shows every group with its example (c.CheckHelp);
//   - -version prints cli.Version(c.Name) and a newline, nothing on
//     standard error, and exits 0;
//   - the flag table in doc, a path from the repository's root, is the
//     flag set's (c.CheckFlagTable).
//
// The test must run in the command's directory, two levels below the
// root, as go test runs it.
func CheckUsage(t *testing.T, c *cli.Command, newFlags func() *flag.FlagSet, run Run, doc string) (help string) {
	t.Helper()
	if err := c.Check(newFlags()); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := cli.ExitCode(c.Name, run(context.Background(), []string{"-h"}, &out, &errOut), &errOut); code != 0 {
		t.Fatalf("-h exits %d: %s", code, errOut.String())
	}
	help = out.String()
	if err := c.CheckHelp(help); err != nil {
		t.Error(err)
	}
	out.Reset()
	errOut.Reset()
	code := cli.ExitCode(c.Name, run(context.Background(), []string{"-version"}, &out, &errOut), &errOut)
	if code != 0 || out.String() != cli.Version(c.Name)+"\n" || errOut.Len() != 0 {
		t.Errorf("-version: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	text, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckFlagTable(string(text), newFlags()); err != nil {
		t.Errorf("%s: %v", doc, err)
	}
	return help
}

// HelpStates checks that help, a command's -h text, contains every line
// of want and does not speak of training diverging unless the command
// trains (the exit-status rule in the command's own words).
func HelpStates(t *testing.T, help string, trains bool, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(help, w) {
			t.Errorf("-h lacks %q", w)
		}
	}
	if !trains && strings.Contains(help, "diverged") {
		t.Error("-h speaks of training diverging")
	}
}

// WritesAtEnd is the exit-status rule, as -h states it, of a command
// whose one piece of work is writing its outputs (export, import): an
// interrupt before the writing leaves nothing written.
var WritesAtEnd = []string{
	"Exit status:\n  0    done\n",
	"\n  2    refused before any work, nothing done: ",
	"\n  1    failed after the work began: writing ",
	"\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: nothing is written",
}
