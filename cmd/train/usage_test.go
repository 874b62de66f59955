package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/cmd/internal/clitest"
)

// Every example -h shows passes the flag checks (running them would
// train for minutes).
func TestHelpExamplesParse(t *testing.T) {
	for _, g := range command.Groups {
		if _, _, err := parseFlags(g.Example, nil); err != nil {
			t.Errorf("train %s: %v", cli.ShellJoin(g.Example), err)
		}
	}
}

// The exit-status rule -h states holds: each status is what the command
// returns in a case of its kind.
func TestExitRule(t *testing.T) {
	help, _, _ := runTrain(context.Background(), "-h")
	clitest.HelpStates(t, help, true,
		"Exit status:\n  0    done\n",
		"\n  2    refused before any work, nothing done: a bad flag or value, a -corpus,\n",
		"\n  1    failed after the work began: training diverged or a save failed",
		"\n  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: the checkpoint is saved first,\n")
	dir := t.TempDir()
	if r := train(context.Background(), nil, tinyArgs(filepath.Join(dir, "ok.ckpt"))...); r.code != 0 {
		t.Errorf("a run: exit %d, %s", r.code, r.msg)
	}
	if r := train(context.Background(), nil, tinyArgs(filepath.Join(dir, "no.ckpt"), "-corpus", filepath.Join(dir, "missing.txt"))...); r.code != 2 {
		t.Errorf("a missing corpus: exit %d, %s", r.code, r.msg)
	}
	if r := train(context.Background(), nil, tinyArgs(filepath.Join(dir, "nan.ckpt"), "-lr", "1e300", "-steps", "20")...); r.code != 1 {
		t.Errorf("divergence: exit %d, %s", r.code, r.msg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := train(ctx, nil, tinyArgs(filepath.Join(dir, "int.ckpt"))...); r.code != 130 {
		t.Errorf("interrupted: exit %d, %s", r.code, r.msg)
	}
}

// -h groups every flag with its example, -version prints the build, and
// docs/training.md's flag table is the flag set's.
func TestUsage(t *testing.T) {
	clitest.CheckUsage(t, &command, func() *flag.FlagSet { var o options; return newFlagSet(&o) }, run, "docs/training.md")
}

// docs/training.md lists every preset's values as -h does.
func TestPresetsInDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "training.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range presets {
		var want strings.Builder
		for _, kv := range p.values {
			if kv[1] == "true" {
				want.WriteString(" -" + kv[0])
			} else {
				want.WriteString(" -" + kv[0] + " " + kv[1])
			}
		}
		if line := "| `" + p.name + "` | `" + strings.TrimSpace(want.String()) + "` |"; !strings.Contains(doc, line) {
			t.Errorf("docs/training.md lacks the line %q", line)
		}
	}
}
