// Command mutate runs the repository's mutation list: it applies each
// mutant (one documented behaviour broken) to a temporary copy of the
// repository, runs the tests that should catch it, and reports which were
// killed, which survived and which no longer apply.
//
//	go run ./bench/mutate                   # every mutant of bench/mutate/mutants.txt
//	go run ./bench/mutate -only 3,stop-oov  # some, by number or name
//	go run ./bench/mutate -repo /tmp/old    # the list against another checkout
//
// A mutant names a file, an exact snippet that must occur once in it, its
// replacement, the behaviour it breaks and the go test arguments that
// should catch it (for example -short -run '^TestStop' .). A mutant whose
// snippet is no longer found is stale, not a survivor: fix its snippet.
// The list's format is described at the top of mutants.txt.
//
// The command uses the standard library only and is not imported by the
// module.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	// Ctrl-C ends the run and removes the copy.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mutate:", err)
		}
		stop()
		os.Exit(2)
	}
}

// mutant is one entry of the list.
type mutant struct {
	num      int    // 1-based position in the list
	name     string // short, unique
	breaks   string // the behaviour it breaks
	file     string // slash-separated, relative to the repository root
	test     []string
	old, new string
	line     int // of its header in the list, for messages
}

// outcome is what running one mutant gave.
type outcome int

const (
	killed   outcome = iota // the tests failed (or timed out)
	survived                // the tests passed
	stale                   // the snippet is not in the file (or not once)
	invalid                 // the mutated code does not build
)

func (o outcome) String() string {
	return [...]string{"killed", "survived", "stale", "invalid"}[o]
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("list", "bench/mutate/mutants.txt", "the mutant list `file`")
	repo := fs.String("repo", ".", "the repository `directory` to copy and mutate")
	only := fs.String("only", "", "run only these mutants: comma-separated numbers or names")
	timeout := fs.Duration("timeout", 5*time.Minute, "longest test run of one mutant (a mutant that hangs counts as killed)")
	keep := fs.Bool("keep", false, "keep the temporary copy (its path is printed)")
	verbose := fs.Bool("v", false, "print the test output of survivors and invalid mutants")
	check := fs.Bool("check", false, "only report the stale mutants (snippets not found once), running no test")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	data, err := os.ReadFile(*list)
	if err != nil {
		return err
	}
	ms, err := parseList(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", *list, err)
	}
	ms, err = selectMutants(ms, *only)
	if err != nil {
		return err
	}
	if *check {
		return checkList(stdout, *repo, ms)
	}
	tmp, err := os.MkdirTemp("", "minigpt-mutate-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(stdout, "copy in %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if err := copyTree(tmp, *repo); err != nil {
		return err
	}

	// Each distinct test command must pass on the unmutated copy, or its
	// failures would count as kills.
	clean := map[string]bool{}
	for _, m := range ms {
		key := strings.Join(m.test, " ")
		if _, done := clean[key]; done {
			continue
		}
		out, err := goTest(ctx, tmp, m.test, *timeout)
		clean[key] = err == nil
		if err != nil {
			fmt.Fprintf(stdout, "baseline FAILS, its mutants are skipped: go test %s\n%s\n", key, indent(out))
		}
	}

	counts := map[outcome]int{}
	var survivors []string
	for _, m := range ms {
		if !clean[strings.Join(m.test, " ")] {
			continue
		}
		start := time.Now()
		o, by, out, err := runMutant(ctx, tmp, m, *timeout)
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted at mutant %d (%s)", m.num, m.name)
		}
		if err != nil {
			return err
		}
		counts[o]++
		line := fmt.Sprintf("%3d %-28s %-8s", m.num, m.name, o)
		switch o {
		case killed:
			line += " by " + by
		case survived:
			line += " " + m.breaks
			survivors = append(survivors, fmt.Sprintf("%d %s (%s): %s", m.num, m.name, m.file, m.breaks))
		case stale:
			line += " " + by
		case invalid:
			line += " does not build"
		}
		fmt.Fprintf(stdout, "%s (%.1fs)\n", line, time.Since(start).Seconds())
		if *verbose && (o == survived || o == invalid) {
			fmt.Fprint(stdout, indent(out))
		}
	}
	k, s := counts[killed], counts[survived]
	fmt.Fprintf(stdout, "\n%d mutants: %d killed, %d survived, %d stale, %d invalid", len(ms), k, s, counts[stale], counts[invalid])
	if k+s > 0 {
		fmt.Fprintf(stdout, "; score %.1f%% (killed / (killed + survived))", 100*float64(k)/float64(k+s))
	}
	fmt.Fprintln(stdout)
	for _, s := range survivors {
		fmt.Fprintln(stdout, "survived:", s)
	}
	return nil
}

// runMutant applies m in the copy at dir, runs its tests and restores the
// file. by is the failing tests (killed) or why it is stale.
func runMutant(ctx context.Context, dir string, m mutant, timeout time.Duration) (o outcome, by, out string, err error) {
	path := filepath.Join(dir, filepath.FromSlash(m.file))
	orig, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stale, "file not found", "", nil
	}
	if err != nil {
		return 0, "", "", err
	}
	switch n := strings.Count(string(orig), m.old); n {
	case 1:
	case 0:
		return stale, "snippet not found", "", nil
	default:
		return stale, fmt.Sprintf("snippet found %d times", n), "", nil
	}
	mutated := strings.Replace(string(orig), m.old, m.new, 1)
	if err := os.WriteFile(path, []byte(mutated), 0o644); err != nil {
		return 0, "", "", err
	}
	defer func() {
		if werr := os.WriteFile(path, orig, 0o644); werr != nil && err == nil {
			err = werr
		}
	}()
	out, terr := goTest(ctx, dir, m.test, timeout)
	switch {
	case terr == nil:
		return survived, "", out, nil
	case errors.Is(terr, context.DeadlineExceeded) || strings.Contains(out, "panic: test timed out"):
		return killed, "timeout", out, nil
	case buildFailed(out):
		return invalid, "", out, nil
	}
	names := failedNames(out)
	if len(names) == 0 {
		return killed, failedTests(out), out, nil
	}
	// A test that fails by chance (a timing test on a loaded machine)
	// must not count as a kill: the failing tests run again, alone, and
	// only those that fail again kill the mutant.
	again, rerr := goTest(ctx, dir, rerun(m.test, names), timeout)
	switch {
	case rerr == nil:
		return survived, "", out + "\n(failed once, passed when run again: " + strings.Join(names, ", ") + ")\n" + again, nil
	case errors.Is(rerr, context.DeadlineExceeded) || strings.Contains(again, "panic: test timed out"):
		return killed, "timeout", again, nil
	}
	if confirmed := failedNames(again); len(confirmed) > 0 {
		return killed, strings.Join(confirmed, ", "), again, nil
	}
	return killed, failedTests(again), again, nil
}

// rerun returns args with its -run pattern replaced by one matching
// exactly the top-level tests names.
func rerun(args, names []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-run" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-run="):
		default:
			out = append(out, a)
		}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	// The flags go before the packages, which are the arguments not
	// starting with "-" that no flag takes.
	return append([]string{"-run", "^(" + strings.Join(quoted, "|") + ")$"}, out...)
}

// checkList reports the mutants whose snippet is not found exactly once
// in the repository at dir.
func checkList(stdout io.Writer, dir string, ms []mutant) error {
	bad := 0
	for _, m := range ms {
		why := ""
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m.file)))
		switch n := strings.Count(string(b), m.old); {
		case err != nil:
			why = err.Error()
		case n == 0:
			why = "snippet not found"
		case n > 1:
			why = fmt.Sprintf("snippet found %d times", n)
		}
		if why != "" {
			bad++
			fmt.Fprintf(stdout, "%3d %-28s stale: %s: %s\n", m.num, m.name, m.file, why)
		}
	}
	fmt.Fprintf(stdout, "%d mutants, %d stale\n", len(ms), bad)
	return nil
}

// goTest runs go test with args in dir, within timeout.
func goTest(ctx context.Context, dir string, args []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-timeout", timeout.String()}, args...)...)
	cmd.Dir = dir
	// An interrupted go test is asked to stop (it stops its test binary),
	// then killed if it has not within a few seconds.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		return buf.String(), ctx.Err()
	}
	return buf.String(), err
}

var (
	failLine  = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	buildLine = regexp.MustCompile(`(?m)\[(build|setup) failed\]$|^# \S+\n`)
)

// buildFailed reports whether go test's output says the code did not
// compile (vet's complaints included).
func buildFailed(out string) bool {
	return buildLine.MatchString(out) && !failLine.MatchString(out)
}

// failedNames lists the top-level tests that failed.
func failedNames(out string) []string {
	var names []string
	for _, m := range failLine.FindAllStringSubmatch(out, -1) {
		name, _, _ := strings.Cut(m[1], "/")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// failedTests lists the top-level tests that failed, or what else ended
// the run.
func failedTests(out string) string {
	names := failedNames(out)
	if len(names) == 0 {
		if i := strings.Index(out, "panic: "); i >= 0 {
			line, _, _ := strings.Cut(out[i:], "\n")
			return line
		}
		return "a failing run (no test named)"
	}
	return strings.Join(names, ", ")
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    | " + line)
	}
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// copyTree copies the repository at src into dst, leaving out .git and
// the outputs the tests and commands leave behind.
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.Name() == ".git" || d.Name() == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}
