package cli

// This file holds the commands' checked standard output: a writer that
// remembers its first error, and RunChecked, which reports it.

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// CheckedWriter passes writes to w and keeps the first error, so that a
// command can write its output in many small pieces and check once at
// the end: "generate -compare > /dev/full" must fail, not exit 0. After
// an error every further write fails with it, without writing.
type CheckedWriter struct {
	w   io.Writer
	err error
}

// NewCheckedWriter returns a CheckedWriter writing to w.
func NewCheckedWriter(w io.Writer) *CheckedWriter { return &CheckedWriter{w: w} }

// Write writes p to the underlying writer unless an earlier write failed.
func (c *CheckedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}

// Err returns the first write error, or nil.
func (c *CheckedWriter) Err() error { return c.err }

// RunChecked runs f with stdout and stderr behind CheckedWriters: when f
// succeeds (or answered -h or -version) but some output did not arrive (a
// full disk, a closed pipe), that is the error, so the exit status says
// the output is not whole.
func RunChecked(ctx context.Context, args []string, stdout, stderr io.Writer, f func(ctx context.Context, args []string, stdout, stderr io.Writer) error) error {
	out, errOut := NewCheckedWriter(stdout), NewCheckedWriter(stderr)
	err := f(ctx, args, out, errOut)
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrVersion) {
		if werr := cmp.Or(out.Err(), errOut.Err()); werr != nil {
			return fmt.Errorf("writing the output: %w", werr)
		}
	}
	return err
}
