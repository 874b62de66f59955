package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// OpenRegular opens path for reading if it is a regular file. Anything
// else is refused with what it is ("is a named pipe (FIFO), not a regular
// file"): a FIFO would block until a writer comes (and Go's runtime cannot
// interrupt that open, so Ctrl-C would go unheard), /dev/zero never ends.
// The open itself is non-blocking, so a FIFO is refused at once, and a
// path swapped for one after a check cannot block either. Error messages
// start with the path.
func OpenRegular(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("empty file name")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "open PATH: ..." would name the operation, not the input
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: is a %s, not a regular file", path, FileKind(fi.Mode()))
	}
	return f, nil
}

// FileKind names the type of a file mode for messages.
func FileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	default:
		return "irregular file"
	}
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
