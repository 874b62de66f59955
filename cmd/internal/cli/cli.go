// Package cli is the plumbing minigpt's commands share: flag parsing with
// -h and -version, exit statuses, signal handling and bounded file reading.
// Each command keeps a testable run(ctx, args, stdout, stderr) error and
// hands it to Main; everything here is about the process around it.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses shared by the commands. The rule is about when, not
// why: everything a command can check before it starts its work (flags,
// their values, the files they name, whether the outputs may be written)
// is checked first, and a refusal there is status 2 with nothing done;
// status 1 is a failure after the work began.
const (
	ExitOK          = 0
	ExitFailure     = 1   // failed after the work began: a save, a write, divergence
	ExitUsage       = 2   // refused before any work: a flag, its value, or a file it names
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM (128 + SIGINT, as shells report it)
)

// ExitRule is the exit-status rule in general words, for the -h of a
// command that uses Parse; a Command states it in its own words
// (ExitStatus).
const ExitRule = `Exit status: 0 done; 2 refused before any work (a bad flag or value, or a
file a flag names that cannot be used; nothing was written); 1 failed after
the work began (a save or a write failed); 130 interrupted by SIGINT or
SIGTERM (a second signal kills at once).`

// MaxSteps bounds the optimizer steps a command will run (train -steps,
// serve -train-max-steps): 2^30, about a million times the default run,
// and months of it on two cores. A run must be able to finish; a larger
// count is a typo or an attack, and is refused before any work.
const MaxSteps = 1 << 30

// Prefix returns err with name and ": " before its message, or nil.
func Prefix(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// UsageError marks a command refused before any work (see ExitUsage):
// exit status 2, and the message points at -h.
type UsageError struct{ Err error }

// Error is the refusal's message, without the pointer to -h that
// ExitCode adds.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the refusal, so that errors.Is sees through the mark.
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// ErrInterrupted is returned (wrapped) by a command that a signal stopped
// after it finished what it could (for cmd/train: the checkpoint is
// written). A bare context.Canceled counts as an interruption too.
var ErrInterrupted = errors.New("interrupted")

// Main runs a command: run gets a context that the first SIGINT or SIGTERM
// cancels (a second one kills the process at once, for a run that does
// not stop), and its error becomes the exit status (see ExitCode).
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // restore the default handlers: the next signal is fatal
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(ExitCode(name, err, os.Stderr))
}

// ExitCode reports err on stderr, prefixed with the command's name, and
// returns the exit status: 0 for nil, -h or -version, 2 for a UsageError, 130 for an
// interruption, 1 otherwise.
func ExitCode(name string, err error, stderr io.Writer) int {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, ErrVersion):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v (run '%s -h' for usage)\n", name, err, name)
		return ExitUsage
	case errors.Is(err, ErrInterrupted):
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitInterrupted
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "%s: interrupted\n", name)
		return ExitInterrupted
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitFailure
	}
}

// Parse parses args with fs (made with flag.ContinueOnError; its output
// is discarded here), after adding -version to it, for a command whose
// -h lists its flags alphabetically (Command.Parse groups them). On -h it
// writes "Usage: <name> [flags]", the summary and the flag defaults to
// stdout and returns flag.ErrHelp; on -version it writes the version line
// (Version) and returns ErrVersion. ExitCode maps both to status 0. A
// parse error or a
// positional argument is a UsageError. It returns the set of flags given
// explicitly.
func Parse(fs *flag.FlagSet, args []string, summary string, stdout io.Writer) (map[string]bool, error) {
	c := &Command{Name: fs.Name(), Summary: summary}
	return c.parse(fs, args, stdout, func(w io.Writer, fs *flag.FlagSet) {
		fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n\nFlags:\n", fs.Name(), strings.TrimSpace(summary))
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	})
}

// BadValue is the UsageError for flag -name's current value, with why.
func BadValue(fs *flag.FlagSet, name, why string) error {
	return Usagef("invalid value %q for flag -%s: %s", fs.Lookup(name).Value.String(), name, why)
}

// ReadFile returns the contents of the regular file at path, at most
// limit bytes, without a leading UTF-8 byte-order mark (editors on some
// systems write one; it is not text). Devices, FIFOs and directories are
// refused rather than read (a FIFO would block, /dev/zero never ends).
// Every error message starts with the path, so that a caller can prefix
// the flag: "-corpus x.txt: not a regular file".
func ReadFile(path string, limit int64) (string, error) {
	return ReadFileShowing(path, limit, ProgressOut{})
}

// ReadFileShowing is ReadFile showing the reading of a large file on po
// (ProgressOut.StartLarge). The text is read into memory of its size
// once, not grown by doubling and copied into a string: a 1 GiB corpus
// costs 1 GiB.
func ReadFileShowing(path string, limit int64, po ProgressOut) (string, error) {
	f, err := OpenRegular(path) // refuses a FIFO without blocking on it
	if err != nil {
		return "", err
	}
	defer f.Close()
	// A file over the limit is refused from its size, before a byte is
	// read (a 1 GiB corpus took 10 s and 2 GB to refuse when it was read
	// first); the limited read below still catches a file that grows.
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	if size > limit {
		return "", fmt.Errorf("%s: %d bytes, larger than %d", path, size, limit)
	}
	p := po.StartLarge("reading "+path, size)
	defer p.Done()
	var b strings.Builder
	b.Grow(int(size) + 1) // the 1: a file that grew since is caught without growing b
	n, err := io.Copy(&b, io.LimitReader(p.Reader(f), limit+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if n > limit {
		return "", fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return strings.TrimPrefix(b.String(), "\uFEFF"), nil
}
