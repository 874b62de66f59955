package minigpt_test

// The README's claims that code can check: its library program compiles
// and prints what the README says, and every file its commands write is
// in .gitignore.

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fencedBlocks returns the fenced code blocks of a Markdown text, each
// with the info string after its opening fence.
func fencedBlocks(md string) (infos, bodies []string) {
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		infos, bodies = append(infos, strings.TrimSpace(info)), append(bodies, strings.Join(body, "\n")+"\n")
	}
	return infos, bodies
}

// TestREADMEProgram builds the README's Go program in a module of its own
// that requires this one through a replace directive, as a user's would,
// runs it in a temporary directory, and compares what it prints with the
// output block that follows it in the README.
func TestREADMEProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	infos, bodies := fencedBlocks(string(md))
	var program, want string
	for i, info := range infos {
		if info == "go" && strings.Contains(bodies[i], "\npackage main\n") {
			if program != "" {
				t.Fatal("the README has two Go programs; this test knows one")
			}
			if i+1 >= len(infos) || infos[i+1] != "text" {
				t.Fatal("the README's Go program is not followed by a ```text block of its output")
			}
			program, want = bodies[i], bodies[i+1]
		}
	}
	if program == "" {
		t.Fatal("the README has no Go program (a ```go block with package main)")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readmeprogram\n\ngo 1.26\n\nrequire example.org/minigpt v0.0.0\n\nreplace example.org/minigpt => " + root + "\n"
	for name, text := range map[string]string{"main.go": program, "go.mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go run the README's program: %v\n%s", err, stderr)
	}
	if string(out) != want {
		t.Errorf("the README's program printed\n%s\nthe README says\n%s", out, want)
	}
}

// outputPatterns find the files a command line writes: the commands'
// output flags, a shell redirection, and the files a Go program saves.
var outputPatterns = []*regexp.Regexp{
	regexp.MustCompile(`-(?:out|plot|logits|checkpoint|loss-log) ([^\s'"]+)`),
	regexp.MustCompile(`(?:^|\s)> ?([^\s&|>]+)`),
	regexp.MustCompile(`SaveCheckpoint\("([^"]+)"`),
}

// TestCommandOutputsAreIgnored: every file a command in the README or
// docs/*.md writes in the working tree (the default minigpt.ckpt of a
// bare cmd/train included) is in .gitignore, so that trying the
// examples leaves git status clean.
func TestCommandOutputsAreIgnored(t *testing.T) {
	ignore, err := os.ReadFile(".gitignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	ignored := func(file string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, file); ok {
				return true
			}
			if ok, _ := path.Match(p, path.Base(file)); ok && !strings.Contains(p, "/") {
				return true
			}
		}
		return false
	}
	docs, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	for _, name := range append([]string{"README.md"}, docs...) {
		md, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		infos, bodies := fencedBlocks(string(md))
		for i, body := range bodies {
			if infos[i] != "sh" && infos[i] != "go" {
				continue
			}
			for _, line := range strings.Split(body, "\n") {
				line, _, _ = strings.Cut(line, " #") // a comment may mention a file it does not write
				var files []string
				for _, re := range outputPatterns {
					for _, m := range re.FindAllStringSubmatch(line, -1) {
						files = append(files, m[1])
					}
				}
				if strings.Contains(line, "cmd/train") && !strings.Contains(line, "-out ") && !strings.Contains(line, "-resume") && !strings.Contains(line, " -h") {
					files = append(files, "minigpt.ckpt")
				}
				for _, f := range files {
					if strings.HasPrefix(f, "/") || strings.HasPrefix(f, "models/") || f == "-" {
						continue // outside the tree, or the embedded model regenerated on purpose
					}
					if !ignored(f) {
						t.Errorf("%s: %q writes %s, which .gitignore does not list", name, strings.TrimSpace(line), f)
					}
				}
			}
		}
	}
}
