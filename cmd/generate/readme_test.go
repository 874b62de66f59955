package main

import (
	"os"
	"strings"
	"testing"
)

// The README's quick start says which command prints each output block:
// each block follows a block of commands whose first line is that
// generate command, and the command prints exactly the block.
func TestREADMEQuickStart(t *testing.T) {
	md, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	start := strings.Index(s, "## Quick start\n")
	end := strings.Index(s[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("no Quick start section")
	}
	// The fenced blocks, in order: ```sh commands, then ``` their output.
	var blocks [][2]string // info, body
	for rest := s[start : start+1+end]; ; {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		nl := strings.IndexByte(rest[i:], '\n')
		info := rest[i+3 : i+nl]
		body := rest[i+nl+1:]
		j := strings.Index(body, "```")
		blocks = append(blocks, [2]string{info, body[:j]})
		rest = body[j+3:]
	}
	checked := 0
	for i := 0; i+1 < len(blocks); i++ {
		if blocks[i][0] != "sh" || blocks[i+1][0] != "" {
			continue
		}
		first, _, _ := strings.Cut(blocks[i][1], "\n")
		line, _, _ := strings.Cut(first, "#")
		fields := shellFields(t, strings.TrimSpace(line))
		if len(fields) < 3 || strings.Join(fields[:3], " ") != "go run ./cmd/generate" {
			t.Errorf("the output block %d follows %q, not a generate command", i+1, first)
			continue
		}
		// The command runs from the repository's root.
		args := fields[3:]
		for k, a := range args {
			if strings.HasPrefix(a, "models/") {
				args[k] = "../../" + a
			}
		}
		out, errOut, code := runCLI(t, args...)
		if code != 0 || out != blocks[i+1][1] {
			t.Errorf("%s: exit %d (%s), prints\n%s\nthe README shows\n%s", line, code, errOut, out, blocks[i+1][1])
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("%d output blocks checked, want 2 (Lantern Bay and Shakespeare)", checked)
	}
}

// shellFields splits a command line as a POSIX shell would, for the
// plain words and "double-quoted" ones the README uses.
func shellFields(t *testing.T, line string) []string {
	var fields []string
	for line != "" {
		line = strings.TrimLeft(line, " ")
		if strings.HasPrefix(line, `"`) {
			j := strings.Index(line[1:], `"`)
			if j < 0 {
				t.Fatalf("unbalanced quote in %q", line)
			}
			fields = append(fields, line[1:1+j])
			line = line[j+2:]
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if word != "" {
			fields = append(fields, word)
		}
		line = rest
	}
	return fields
}
