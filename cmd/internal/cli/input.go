package cli

// This file holds the commands' reading of input: regular files only, and
// reads bounded in size and cancellable.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"example.org/minigpt/internal/safefile"
)

// OpenRegular is safefile.OpenRegular (open path for reading if it is a
// regular file; refuse anything else at once, without blocking on a
// FIFO) with the error message starting with the path rather than with
// the operation, so that a caller can prefix the flag: "-resume x: is a
// named pipe (FIFO), not a regular file". The errors wrap the same
// sentinels (minigpt.ErrNotRegularFile, fs.ErrNotExist).
func OpenRegular(path string) (*os.File, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "open PATH: ..." would name the operation, not the input
		}
		if path == "" {
			return nil, err // "empty file name"
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ReadAllContext reads r to its end, at most limit bytes (more is an
// error), and gives up when ctx is done: standard input may be a terminal
// or a pipe that nobody writes to, and Ctrl-C must still stop the command.
// On cancellation the read goes on in the background until the process
// exits; the error wraps ctx.Err().
func ReadAllContext(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("reading: %w", ctx.Err())
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		if int64(len(res.b)) > limit {
			return nil, fmt.Errorf("larger than %d bytes", limit)
		}
		return res.b, nil
	}
}
