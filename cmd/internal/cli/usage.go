package cli

// This file holds what a command says about itself: -h (its flags grouped
// by purpose, each group with an example, then the exit-status rule) and
// -version.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Command describes a command for -h and -version. Its Parse replaces
// Parse for a command that groups its flags.
type Command struct {
	Name    string  // the command's name: "generate"
	Summary string  // what it does, a paragraph or two
	Groups  []Group // every flag, by purpose, in the order -h lists them
	Notes   string  // optional paragraphs after the flags, before the examples
	Exit    ExitStatus
}

// Group is a set of flags that serve one purpose, and a command line that
// uses them.
type Group struct {
	Title   string   // "Sampling"
	Flags   []string // flag names without the dash, in the order -h lists them
	Example []string // the arguments of one example, without the command's name
}

// ExitStatus is a command's own words for the one exit-status rule that
// every command follows (ExitOK, ExitUsage, ExitFailure, ExitInterrupted).
type ExitStatus struct {
	Done        string // status 0, when "done" does not say all: serve's drain
	Refused     string // status 2: what is refused before any work
	Failed      string // status 1: what can fail after the work began
	Interrupted string // status 130: what an interruption leaves behind
}

// lineWidth is where -h wraps its text.
const lineWidth = 80

// String is the rule as -h prints it: a heading and one entry a status.
func (e ExitStatus) String() string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	entry := func(code int, what, detail string) {
		if detail != "" {
			what += ": " + detail
		}
		b.WriteString(wrap(fmt.Sprintf("  %-5d", code), "       ", what))
	}
	entry(ExitOK, "done", e.Done)
	entry(ExitUsage, "refused before any work, nothing done", e.Refused)
	entry(ExitFailure, "failed after the work began", e.Failed)
	interrupted := e.Interrupted
	if interrupted != "" {
		interrupted += "; "
	}
	entry(ExitInterrupted, "interrupted by SIGINT (Ctrl-C) or SIGTERM", interrupted+"a second signal kills at once")
	return strings.TrimSuffix(b.String(), "\n")
}

// wrap writes text after first (and every later line after indent),
// breaking at spaces before lineWidth, and ends with a newline. A word
// longer than a line stays whole.
func wrap(first, indent, text string) string {
	var b strings.Builder
	line := first
	fresh := true // nothing but the lead-in on this line yet
	for _, w := range strings.Fields(text) {
		if !fresh && len(line)+1+len(w) > lineWidth {
			b.WriteString(line + "\n")
			line, fresh = indent, true
		}
		if !fresh {
			line += " "
		}
		line += w
		fresh = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// Check reports what would make -h wrong: a flag of fs in no group or in
// two, a group naming a flag fs lacks, or a group without a title or an
// example. The commands' tests call it; -h itself lists a stray flag
// under "Other flags" rather than fail.
func (c *Command) Check(fs *flag.FlagSet) error {
	var errs []error
	seen := map[string]string{}
	for _, g := range c.Groups {
		if g.Title == "" || len(g.Example) == 0 {
			errs = append(errs, fmt.Errorf("group %q: a group needs a title and an example", g.Title))
		}
		for _, name := range g.Flags {
			switch {
			case fs.Lookup(name) == nil:
				errs = append(errs, fmt.Errorf("group %q lists -%s, which %s does not have", g.Title, name, c.Name))
			case seen[name] != "":
				errs = append(errs, fmt.Errorf("-%s is in groups %q and %q", name, seen[name], g.Title))
			}
			seen[name] = g.Title
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] == "" && f.Name != versionFlag {
			errs = append(errs, fmt.Errorf("-%s is in no group", f.Name))
		}
	})
	return errors.Join(errs...)
}

// CheckHelp reports each group whose heading or example is missing from
// help, what the command printed for -h: the commands' tests run -h
// their own way and hand its output here.
func (c *Command) CheckHelp(help string) error {
	var errs []error
	for _, g := range c.Groups {
		if !strings.Contains(help, "\n"+g.Title+":\n") || !strings.Contains(help, "e.g. "+c.Name+" "+ShellJoin(g.Example)) {
			errs = append(errs, fmt.Errorf("-h lacks the group %q or its example", g.Title))
		}
	}
	return errors.Join(errs...)
}

// versionFlag is the flag Parse adds to every command.
const versionFlag = "version"

// ErrVersion is what Parse returns after -version has printed the
// version line: the command does nothing else, and ExitCode maps it to
// status 0. It is not flag.ErrHelp, so that a command which adds text to
// -h does not add it to -version.
var ErrVersion = errors.New("version printed")

// Parse parses args with fs (made with flag.ContinueOnError; its output
// is discarded here), after adding -version to it. On -h it writes the
// usage (see Usage) to stdout and returns flag.ErrHelp; on -version it
// writes the version line (see Version) and returns ErrVersion. ExitCode
// maps both to status 0: the command has printed what was asked for and
// does nothing else. A parse error or a positional argument is a
// UsageError. It returns the set of flags given explicitly.
func (c *Command) Parse(fs *flag.FlagSet, args []string, stdout io.Writer) (map[string]bool, error) {
	return c.parse(fs, args, stdout, c.Usage)
}

func (c *Command) parse(fs *flag.FlagSet, args []string, stdout io.Writer, usage func(io.Writer, *flag.FlagSet)) (map[string]bool, error) {
	var version bool
	if fs.Lookup(versionFlag) == nil {
		fs.BoolVar(&version, versionFlag, false, "print the version and exit")
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return nil, err
		}
		return nil, UsageError{err}
	}
	if version {
		fmt.Fprintln(stdout, Version(c.Name))
		return nil, ErrVersion
	}
	if fs.NArg() > 0 {
		return nil, Usagef("unexpected argument %q (flags only)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, nil
}

// Usage writes -h: the usage line, the summary, the flags by group (each
// with its default and the group's example), the notes, and the
// exit-status rule.
func (c *Command) Usage(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [flags]\n\n%s\n", c.Name, strings.TrimSpace(c.Summary))
	listed := map[string]bool{}
	group := func(title string, names []string, example []string) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		for _, name := range names {
			if f := fs.Lookup(name); f != nil {
				listed[name] = true
				writeFlag(&b, f)
			}
		}
		if len(example) > 0 {
			b.WriteString(wrap("  e.g. ", "         ", c.Name+" "+ShellJoin(example)))
		}
	}
	for _, g := range c.Groups {
		group(g.Title, g.Flags, g.Example)
	}
	var other []string
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] && f.Name != versionFlag {
			other = append(other, f.Name)
		}
	})
	if len(other) > 0 {
		group("Other flags", other, nil)
	}
	fmt.Fprintf(&b, "\nHelp:\n  -h\n        print this help and exit\n")
	if fs.Lookup(versionFlag) != nil {
		writeFlag(&b, fs.Lookup(versionFlag))
	}
	if notes := strings.TrimSpace(c.Notes); notes != "" {
		fmt.Fprintf(&b, "\n%s\n", notes)
	}
	fmt.Fprintf(&b, "\n%s\n", c.Exit)
	io.WriteString(w, b.String())
}

// writeFlag writes one flag as flag.PrintDefaults does (its name, the
// name of its value, its usage and a default that is not the zero
// value), with the usage wrapped.
func writeFlag(b *strings.Builder, f *flag.Flag) {
	arg, usage := flag.UnquoteUsage(f)
	b.WriteString("  -" + f.Name)
	if arg != "" {
		b.WriteString(" " + arg)
	}
	b.WriteString("\n")
	if d := DefaultText(f); d != "" {
		usage += " (default " + d + ")"
	}
	for _, para := range strings.Split(usage, "\n") {
		b.WriteString(wrap("        ", "        ", para))
	}
}

// DefaultText is a flag's default as -h and the docs' flag tables show
// it: a string quoted, anything else as it prints, and "" for the zero
// value of the flag's type, which -h leaves out (as flag.PrintDefaults
// does).
func DefaultText(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(string); ok {
			if f.DefValue == "" {
				return ""
			}
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	if slices.Contains([]string{"", "0", "false", "0s", "[]"}, f.DefValue) {
		return ""
	}
	return f.DefValue
}

// ShellJoin quotes args for a POSIX shell where they need it, so that an
// example can be pasted: ShellJoin([]string{"-prompt", "the keeper "}) is
// -prompt 'the keeper '.
func ShellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
