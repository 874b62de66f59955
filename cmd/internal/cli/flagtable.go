package cli

// This file holds the docs' flag tables: each is checked against the
// command's flag set by the command's tests, so that the docs cannot
// drift from -h.

import (
	"flag"
	"fmt"
	"strings"
)

// FlagTable is the Markdown table of c's flags in the order -h lists
// them (-version, which every command has, left out): the flag, its
// default as DefaultText gives it, and the first line of its usage.
func (c *Command) FlagTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	for _, r := range c.flagRows(fs) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	return b.String()
}

// flagRows are FlagTable's rows, as cells.
func (c *Command) flagRows(fs *flag.FlagSet) [][3]string {
	var rows [][3]string
	add := func(f *flag.Flag) {
		def := DefaultText(f)
		if def != "" {
			def = "`" + def + "`"
		}
		usage, _, _ := strings.Cut(f.Usage, "\n")
		rows = append(rows, [3]string{"`-" + f.Name + "`", def, strings.ReplaceAll(usage, "|", `\|`)})
	}
	listed := map[string]bool{}
	for _, g := range c.Groups {
		for _, name := range g.Flags {
			if f := fs.Lookup(name); f != nil && !listed[name] {
				listed[name] = true
				add(f)
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] && f.Name != versionFlag {
			add(f)
		}
	})
	return rows
}

// FlagTableMarker is the line that precedes a command's flag table in a
// Markdown file (an HTML comment, which renders as nothing).
func FlagTableMarker(name string) string { return "<!-- flags: " + name + " -->" }

// CheckFlagTable finds the table after FlagTableMarker(c.Name) in the
// Markdown text doc and compares it with FlagTable: the same flags in the
// same order, with the same defaults and the same wording. The error
// names the first row that differs and gives the whole table as it
// should be.
func (c *Command) CheckFlagTable(doc string, fs *flag.FlagSet) error {
	marker := FlagTableMarker(c.Name)
	_, after, ok := strings.Cut(doc, marker+"\n")
	if !ok {
		return fmt.Errorf("no line %q before the flag table", marker)
	}
	var lines []string
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		if line == "" && len(lines) == 0 {
			continue // blank lines between the marker and the table
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		lines = append(lines, line)
	}
	want := c.flagRows(fs)
	fail := func(format string, a ...any) error {
		return fmt.Errorf("the flag table after %s: %s; it should read:\n\n%s", marker, fmt.Sprintf(format, a...), c.FlagTable(fs))
	}
	if len(lines) < 2 || strings.Join(splitRow(lines[0]), "|") != "flag|default|meaning" {
		return fail("want the columns | flag | default | meaning |")
	}
	rows := lines[2:] // the header and the |---| line
	for i, w := range want {
		if i >= len(rows) {
			return fail("%s is missing (the table ends after %d rows)", w[0], len(rows))
		}
		got := splitRow(rows[i])
		if len(got) != 3 {
			return fail("row %d has %d cells, want 3: %s", i+1, len(got), rows[i])
		}
		for j, col := range []string{"flag", "default", "meaning"} {
			if got[j] != w[j] {
				return fail("row %d (%s): the %s is %q, want %q", i+1, w[0], col, got[j], w[j])
			}
		}
	}
	if len(rows) > len(want) {
		return fail("row %d (%s) is not a flag of %s", len(want)+1, rows[len(want)], c.Name)
	}
	return nil
}

// splitRow splits a Markdown table row into its trimmed cells; a \| is
// part of a cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}
