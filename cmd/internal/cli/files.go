package cli

// This file holds the files a command writes: refused before any work
// if they cannot or may not be written, saved atomically, and every
// refusal named by its flag.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"example.org/minigpt"
	"example.org/minigpt/internal/safefile"
)

// Output is a file a command writes, named by flag -Flag, and whether it
// may replace a file that is there (-force, usually).
type Output struct {
	Flag, Path string
	Note       string // added to the flag in messages: "(the best checkpoint so far)"
	Replace    bool
	// Exists is what a refusal says of an existing file, after the label;
	// "" says "the file exists; pass -force to replace it, or choose
	// another file".
	Exists string
}

// Label names the output in messages: "-out m.ckpt".
func (f *Output) Label() string {
	s := "-" + f.Flag + " " + f.Path
	if f.Note != "" {
		s += " " + f.Note
	}
	return s
}

// Refusal turns a safefile.CheckOutput or Save error into the message the
// user sees, naming the flag and what to do.
func (f *Output) Refusal(err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrExist):
		why := f.Exists
		if why == "" {
			why = "the file exists; pass -force to replace it, or choose another file"
		}
		return fmt.Errorf("%s: %s", f.Label(), why)
	case errors.Is(err, minigpt.ErrNotRegularFile) && errors.As(err, &pe):
		return fmt.Errorf("%s: %v; it is never replaced, not even with -force", f.Label(), pe.Err)
	case errors.As(err, &pe) && pe.Path == f.Path:
		return fmt.Errorf("%s: %w", f.Label(), pe.Err) // the path is in the label already
	}
	return fmt.Errorf("%s: %w", f.Label(), err)
}

// Check refuses, before any work, what Save would refuse: a UsageError.
func (f *Output) Check() error {
	if err := safefile.CheckOutput(f.Path, f.Replace); err != nil {
		return UsageError{Err: f.Refusal(err)}
	}
	return nil
}

// Save writes the file atomically (safefile.Save) with the consent it
// has. An error of write itself comes back as it is; one of the file, as
// a Refusal.
func (f *Output) Save(write func(io.Writer) error) error {
	var werr error
	err := safefile.Save(f.Path, f.Replace, func(w io.Writer) error {
		werr = write(w)
		return werr
	})
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return f.Refusal(err)
	}
	return nil
}

// SamePath reports whether a and b name the same file, existing or not.
func SamePath(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}
