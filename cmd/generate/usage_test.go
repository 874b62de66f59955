package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/cmd/internal/clitest"
)

// -h groups every flag with its example, -version prints the build, and
// docs/sampling.md's flag table is the flag set's.
func TestUsage(t *testing.T) {
	clitest.CheckUsage(t, &command, func() *flag.FlagSet { var o options; return newFlagSet(&o) }, run, "docs/sampling.md")
}

// Every example -h shows runs as shown (from the repository's root:
// the paths are made relative to this package's directory).
func TestHelpExamplesRun(t *testing.T) {
	for _, g := range command.Groups {
		args := make([]string, len(g.Example))
		for i, a := range g.Example {
			if strings.HasPrefix(a, "models/") {
				a = filepath.Join("..", "..", a)
			}
			args[i] = a
		}
		out, errOut, code := runCLI(t, args...)
		if code != 0 || out == "" {
			t.Errorf("generate %s: exit %d, stdout %q, stderr %q", cli.ShellJoin(g.Example), code, out, errOut)
		}
	}
}

// The exit-status rule -h states holds: each status is what the command
// returns in a case of its kind.
func TestExitRule(t *testing.T) {
	help, _, _ := runCLI(t, "-h")
	clitest.HelpStates(t, help, false,
		"Exit status:\n  0    done\n",
		"\n  2    refused before any work, nothing done: a bad flag or value, a -model or\n",
		"\n  1    failed after the work began: the text could not be written",
		"\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: the text generated so far has\n")
	if _, _, code := runCLI(t, "-greedy", "-n", "5"); code != 0 {
		t.Errorf("a run: exit %d, want 0", code)
	}
	if _, _, code := runCLI(t, "-model", filepath.Join(t.TempDir(), "missing.ckpt")); code != 2 {
		t.Errorf("a missing -model: exit %d, want 2", code)
	}
	if code := exitCode(run(context.Background(), []string{"-n", "5"}, brokenWriter{}, &bytes.Buffer{}), &bytes.Buffer{}); code != 1 {
		t.Errorf("an unwritable output: exit %d, want 1", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, code := runWithin(t, time.Minute, ctx, "-n", "5"); code != 130 {
		t.Errorf("interrupted: exit %d, want 130", code)
	}
}

// brokenWriter fails every write.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// -version to an output it cannot write exits 1 (TestUsage checks the
// rest of -version).
func TestVersionUnwritable(t *testing.T) {
	if code := exitCode(run(context.Background(), []string{"-version"}, brokenWriter{}, &bytes.Buffer{}), &bytes.Buffer{}); code != 1 {
		t.Errorf("-version to an unwritable output: exit %d, want 1", code)
	}
}
