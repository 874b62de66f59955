// Package clitest holds the checks every command's tests share: -h,
// -version and the docs' flag table against the command's flag set, and
// (on Linux) a run on a disk that fills up. Only tests import it.
package clitest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
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

// LargeCheckpoint writes a weights-only checkpoint just over the 16 MiB
// from which the commands show the progress of reading and writing a
// model (2,387,224 parameters, Lantern Bay's vocabulary, random weights)
// and returns its path and the checkpoint.
func LargeCheckpoint(t *testing.T) (string, *minigpt.Checkpoint) {
	t.Helper()
	vocab, err := minigpt.NewVocab(minigpt.LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: vocab.Size(), BlockSize: 32, EmbedDim: 256, Heads: 4, Layers: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 7}
	path := filepath.Join(t.TempDir(), "large.ckpt")
	if err := minigpt.SaveCheckpoint(path, c); err != nil {
		t.Fatal(err)
	}
	return path, c
}

// ProgressLines returns the lines of stderr that report progress on what
// ("reading x.ckpt"), and fails unless they are a -progress log of one
// piece of work: at least two lines, percentages rising, the time left on
// all but the last, which says done.
func ProgressLines(t *testing.T, stderr, what string) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, what+": ") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		t.Fatalf("%d progress lines on %q in:\n%s", len(lines), what, stderr)
	}
	last := -1
	for i, l := range lines {
		var pct int
		if _, err := fmt.Sscanf(strings.TrimPrefix(l, what+": "), "%d%%", &pct); err != nil || pct <= last {
			t.Errorf("progress line %q: the percentage does not rise", l)
		}
		last = pct
		if i < len(lines)-1 && !strings.HasSuffix(l, " left") {
			t.Errorf("progress line %q: no time left", l)
		}
	}
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, what+": 100% (") || !strings.HasSuffix(l, ", done") {
		t.Errorf("the last progress line %q does not say done", l)
	}
	return lines
}
