package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// testCommand is a small command with two groups, for the tests below.
func testCommand() (*Command, *flag.FlagSet) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.String("prompt", "the ", "text to continue")
	fs.String("model", "", "checkpoint `file` to load (default: the embedded model)")
	fs.Int("n", 200, "characters to generate")
	fs.Float64("temperature", 1, "divide the logits by this | or not")
	fs.Int("top-k", 0, "keep the k most likely; 0 = off")
	c := &Command{
		Name:    "cmd",
		Summary: "Does things.",
		Groups: []Group{
			{"What to do", []string{"prompt", "n"}, []string{"-prompt", "the keeper ", "-n", "5"}},
			{"How", []string{"temperature", "top-k", "model"}, []string{"-temperature", "0.8"}},
		},
		Notes: "A note.",
		Exit:  ExitStatus{Refused: "a bad flag", Failed: "a write failed", Interrupted: "the text so far is kept"},
	}
	return c, fs
}

func TestUsage(t *testing.T) {
	c, fs := testCommand()
	if err := c.Check(fs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := c.Parse(fs, []string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	want := `Usage: cmd [flags]

Does things.

What to do:
  -prompt string
        text to continue (default "the ")
  -n int
        characters to generate (default 200)
  e.g. cmd -prompt 'the keeper ' -n 5

How:
  -temperature float
        divide the logits by this | or not (default 1)
  -top-k int
        keep the k most likely; 0 = off
  -model file
        checkpoint file to load (default: the embedded model)
  e.g. cmd -temperature 0.8

Help:
  -h
        print this help and exit
  -version
        print the version and exit

A note.

Exit status:
  0    done
  2    refused before any work, nothing done: a bad flag
  1    failed after the work began: a write failed
  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: the text so far is kept; a
       second signal kills at once
`
	if out.String() != want {
		t.Errorf("-h printed\n%s\nwant\n%s", out.String(), want)
	}
}

// A flag left out of the groups is still listed by -h, and Check names it.
func TestUsageCheck(t *testing.T) {
	c, fs := testCommand()
	fs.Bool("stray", false, "a flag nobody grouped")
	c.Groups = append(c.Groups, Group{Title: "Twice", Flags: []string{"n", "missing"}})
	err := c.Check(fs)
	for _, want := range []string{"-stray is in no group", `-n is in groups "What to do" and "Twice"`, `group "Twice" lists -missing, which cmd does not have`, `group "Twice": a group needs a title and an example`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v; want it to say %q", err, want)
		}
	}
	var out bytes.Buffer
	c.Usage(&out, fs)
	if !strings.Contains(out.String(), "\nOther flags:\n  -stray\n        a flag nobody grouped\n") {
		t.Errorf("-h does not list the stray flag:\n%s", out.String())
	}
}

// CheckHelp passes on what Usage prints and names the group whose
// heading or example a help text lacks.
func TestCheckHelp(t *testing.T) {
	c, fs := testCommand()
	var out bytes.Buffer
	c.Usage(&out, fs)
	if err := c.CheckHelp(out.String()); err != nil {
		t.Errorf("CheckHelp on Usage's own text: %v", err)
	}
	g := c.Groups[0]
	for name, help := range map[string]string{
		"no heading": strings.Replace(out.String(), "\n"+g.Title+":\n", "\n", 1),
		"no example": strings.Replace(out.String(), "e.g. "+c.Name+" "+ShellJoin(g.Example), "e.g.", 1),
	} {
		if err := c.CheckHelp(help); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", g.Title)) {
			t.Errorf("%s: CheckHelp says %v, want it to name %q", name, err, g.Title)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, parse := range []func(*flag.FlagSet, []string, *bytes.Buffer) error{
		func(fs *flag.FlagSet, args []string, out *bytes.Buffer) error {
			c, _ := testCommand()
			_, err := c.Parse(fs, args, out)
			return err
		},
		func(fs *flag.FlagSet, args []string, out *bytes.Buffer) error {
			_, err := Parse(fs, args, "Does things.", out)
			return err
		},
	} {
		_, fs := testCommand()
		var out bytes.Buffer
		err := parse(fs, []string{"-n", "3", "-version"}, &out)
		if !errors.Is(err, ErrVersion) || errors.Is(err, flag.ErrHelp) || ExitCode("cmd", err, &bytes.Buffer{}) != 0 {
			t.Errorf("-version: %v, want ErrVersion, not flag.ErrHelp (status 0)", err)
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != Version("cmd") || !strings.HasPrefix(got, "cmd: ") {
			t.Errorf("-version printed %q, want %q", out.String(), Version("cmd"))
		}
		_, fs = testCommand()
		out.Reset()
		if err := parse(fs, []string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-version") {
			t.Errorf("-h does not list -version: %v\n%s", err, out.String())
		}
	}
}

func TestVersionLine(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "example.org/minigpt", Version: "v0.0.0-20261201104040-c3308e744c04+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "c3308e744c0464b6bccd20311893a3f5be39bf3f"},
			{Key: "vcs.time", Value: "2026-12-01T10:40:40Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	clean := *stamped
	clean.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "c3308e7"}, {Key: "vcs.modified", Value: "false"}}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{stamped, "train: example.org/minigpt v0.0.0-20261201104040-c3308e744c04+dirty, commit c3308e744c04 of 2026-12-01T10:40:40Z (modified), go1.26.8 " + platform},
		{&clean, "train: example.org/minigpt v0.0.0-20261201104040-c3308e744c04+dirty, commit c3308e7 (unmodified), go1.26.8 " + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.org/minigpt", Version: "(devel)"}}, "train: example.org/minigpt (devel), go1.26.8 " + platform},
		{nil, "train: example.org/minigpt (devel), " + runtime.Version() + " " + platform},
	} {
		if got := versionLine("train", tc.bi); got != tc.want {
			t.Errorf("versionLine = %q\nwant          %q", got, tc.want)
		}
	}
}

// TestVersionOfABuiltCommand builds a real command and runs -version:
// the line comes from the binary's own build information.
func TestVersionOfABuiltCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a command")
	}
	bin := filepath.Join(t.TempDir(), "import")
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "./cmd/import")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-version").Output()
	want := "import: example.org/minigpt (devel), " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if err != nil || string(out) != want {
		t.Fatalf("import -version: %v, %q; want %q", err, out, want)
	}
}

func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"-prompt", "the keeper ", "-stop", ".", "-logit-bias", "e=-100", "-x", "it's", "-y", ""})
	want := `-prompt 'the keeper ' -stop . -logit-bias e=-100 -x 'it'\''s' -y ''`
	if got != want {
		t.Errorf("ShellJoin = %s, want %s", got, want)
	}
}

func TestCheckFlagTable(t *testing.T) {
	c, fs := testCommand()
	table := c.FlagTable(fs)
	wantTable := "| flag | default | meaning |\n|---|---|---|\n" +
		"| `-prompt` | `\"the \"` | text to continue |\n" +
		"| `-n` | `200` | characters to generate |\n" +
		"| `-temperature` | `1` | divide the logits by this \\| or not |\n" +
		"| `-top-k` |  | keep the k most likely; 0 = off |\n" +
		"| `-model` |  | checkpoint `file` to load (default: the embedded model) |\n"
	if table != wantTable {
		t.Fatalf("FlagTable:\n%s\nwant\n%s", table, wantTable)
	}
	doc := "# Cmd\n\nSome text.\n\n" + FlagTableMarker("cmd") + "\n\n" + table + "\nMore text.\n"
	if err := c.CheckFlagTable(doc, fs); err != nil {
		t.Fatalf("the table itself: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"| `-n` | `200` |", "| `-n` | `100` |", "row 2 (`-n`): the default is \"`100`\", want \"`200`\""},
		{"characters to generate", "characters to write", "row 2 (`-n`): the meaning"},
		{"| `-top-k` |  | keep the k most likely; 0 = off |\n", "", "row 4 (`-top-k`): the flag is \"`-model`\""},
		{"| `-model` |  | checkpoint `file` to load (default: the embedded model) |\n", "", "`-model` is missing"},
		{"\nMore text.", "| `-gone` | | a flag removed |", "row 6 (| `-gone` | | a flag removed |) is not a flag of cmd"},
		{"| flag | default | meaning |", "| name | default | meaning |", "want the columns"},
		{FlagTableMarker("cmd"), "", "no line \"<!-- flags: cmd -->\""},
	} {
		bad := strings.Replace(doc, tc.from, tc.to, 1)
		err := c.CheckFlagTable(bad, fs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q → %q: %v; want it to say %q", tc.from, tc.to, err, tc.want)
			continue
		}
		if tc.from != FlagTableMarker("cmd") && !strings.Contains(err.Error(), table) {
			t.Errorf("the error does not give the table as it should be: %v", err)
		}
	}
}

// The exit rule's words for each status stay what the docs quote.
func TestExitStatusString(t *testing.T) {
	got := ExitStatus{Done: "the server drained", Refused: "x", Failed: "y"}.String()
	want := `Exit status:
  0    done: the server drained
  2    refused before any work, nothing done: x
  1    failed after the work began: y
  130  interrupted by SIGINT (Ctrl-C) or SIGTERM: a second signal kills at once`
	if got != want {
		t.Errorf("ExitStatus.String:\n%s\nwant\n%s", got, want)
	}
}
