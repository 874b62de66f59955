package main

// This file holds the tests of what tokenize says about itself: -h,
// -version, the examples -h gives, and the docs' flag table.

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/cmd/internal/clitest"
)

// flagsDoc is where the flag table of tokenize belongs.
const flagsDoc = "docs/training.md"

func newFlags() *flag.FlagSet { var o options; return newFlagSet(&o) }

// -h groups every flag with its example and states the exit-status rule,
// and -version prints the build; the docs' flag table is the flag set's
// once the docs have one (clitest.CheckUsage then checks it too).
func TestUsage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", flagsDoc))
	if err != nil {
		t.Fatal(err)
	}
	var help string
	if strings.Contains(string(doc), cli.FlagTableMarker(command.Name)) {
		help = clitest.CheckUsage(t, &command, newFlags, run, flagsDoc)
	} else {
		if err := command.Check(newFlags()); err != nil {
			t.Fatal(err)
		}
		r := tokenizeCLI(t, "-h")
		if r.code != 0 {
			t.Fatalf("-h: exit %d, %s", r.code, r.stderr)
		}
		help = r.stdout
		if err := command.CheckHelp(help); err != nil {
			t.Error(err)
		}
		if r := tokenizeCLI(t, "-version"); r.code != 0 || r.stdout != cli.Version("tokenize")+"\n" || r.stderr != "" {
			t.Errorf("-version: exit %d, %q, %q", r.code, r.stdout, r.stderr)
		}
		t.Logf("%s has no flag table for tokenize yet; it would read:\n\n%s\n%s", flagsDoc, cli.FlagTableMarker(command.Name), command.FlagTable(newFlags()))
	}
	clitest.HelpStates(t, help, false,
		"Exit status:\n  0    done\n",
		"\n  2    refused before any work, nothing done: ",
		"\n  1    failed after the work began: writing ",
		"\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: nothing is written")
}

// Every example -h shows runs as shown, in order (the second uses the
// file the first writes), with the repository's files found from here
// and the files they write in a temporary directory.
func TestHelpExamplesRun(t *testing.T) {
	dir := t.TempDir()
	for _, g := range command.Groups {
		args := make([]string, len(g.Example))
		for i, a := range g.Example {
			switch {
			case strings.HasPrefix(a, "data/"):
				a = filepath.Join("..", "..", a)
			case strings.HasSuffix(a, ".bpe"):
				a = filepath.Join(dir, a)
			}
			args[i] = a
		}
		r := tokenizeCLI(t, args...)
		if r.code != 0 || r.stdout == "" && r.stderr == "" {
			t.Errorf("tokenize %s: exit %d, stdout %q, stderr %q", cli.ShellJoin(g.Example), r.code, r.stdout, r.stderr)
		}
	}
}
