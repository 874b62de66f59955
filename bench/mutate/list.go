// list.go reads the mutant list (mutants.txt) and picks the mutants a run asks for.

package main

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// parseList reads the mutant list (see mutants.txt for the format).
func parseList(text string) ([]mutant, error) {
	var ms []mutant
	var cur *mutant
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	n := 0
	var block *[]string // the snippet or the replacement being read
	var oldLines, newLines []string
	finish := func() error {
		if cur == nil {
			return nil
		}
		switch {
		case cur.file == "":
			return fmt.Errorf("line %d: mutant %s has no `file:` line", cur.line, cur.name)
		case len(cur.test) == 0:
			return fmt.Errorf("line %d: mutant %s has no `test:` line", cur.line, cur.name)
		case cur.old == "":
			return fmt.Errorf("line %d: mutant %s has no snippet", cur.line, cur.name)
		case cur.old == cur.new:
			return fmt.Errorf("line %d: mutant %s changes nothing", cur.line, cur.name)
		}
		ms = append(ms, *cur)
		cur = nil
		return nil
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		if block != nil {
			switch line {
			case "====":
				if block != &oldLines {
					return nil, fmt.Errorf("line %d: ==== outside a snippet", n)
				}
				block = &newLines
			case ">>>>":
				if block != &newLines {
					return nil, fmt.Errorf("line %d: >>>> before ====", n)
				}
				cur.old, cur.new = strings.Join(oldLines, "\n"), strings.Join(newLines, "\n")
				block = nil
			default:
				*block = append(*block, line)
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "## "):
			if err := finish(); err != nil {
				return nil, err
			}
			name, breaks, ok := strings.Cut(strings.TrimPrefix(line, "## "), ": ")
			if !ok || strings.ContainsAny(name, " ,") || breaks == "" {
				return nil, fmt.Errorf("line %d: want \"## name: the behaviour it breaks\"", n)
			}
			for _, m := range ms {
				if m.name == name {
					return nil, fmt.Errorf("line %d: mutant %s listed twice", n, name)
				}
			}
			cur = &mutant{num: len(ms) + 1, name: name, breaks: breaks, line: n}
		case cur != nil && strings.HasPrefix(line, "file: "):
			cur.file = strings.TrimSpace(strings.TrimPrefix(line, "file: "))
		case cur != nil && strings.HasPrefix(line, "test: "):
			words, err := splitWords(strings.TrimPrefix(line, "test: "))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur.test = words
		case cur != nil && line == "<<<<":
			if cur.old != "" {
				return nil, fmt.Errorf("line %d: mutant %s has two snippets", n, cur.name)
			}
			oldLines, newLines, block = nil, nil, &oldLines
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if block != nil {
		return nil, fmt.Errorf("the list ends inside a snippet of mutant %s", cur.name)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return ms, nil
}

// splitWords splits s at spaces, keeping 'single-quoted' and
// "double-quoted" words whole, as a shell would.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// selectMutants keeps those -only names (all when only is empty).
func selectMutants(ms []mutant, only string) ([]mutant, error) {
	if only == "" {
		return ms, nil
	}
	var out []mutant
	for sel := range strings.SplitSeq(only, ",") {
		sel = strings.TrimSpace(sel)
		i := slices.IndexFunc(ms, func(m mutant) bool { return m.name == sel || strconv.Itoa(m.num) == sel })
		if i < 0 {
			return nil, fmt.Errorf("-only: no mutant %q", sel)
		}
		out = append(out, ms[i])
	}
	return out, nil
}
