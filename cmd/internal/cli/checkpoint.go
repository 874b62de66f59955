package cli

// This file holds how every command loads a checkpoint a flag names: a
// minigpt checkpoint or a safetensors file, told apart by its content,
// with a progress line for a large one and errors that start with the
// flag and the path.

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"example.org/minigpt"
)

// Formats says what each checkpoint format starts with, for a file that
// is neither.
const Formats = `a minigpt checkpoint starts with "\x89GPT\r\n\x1a\n", a safetensors file with an 8-byte header length, then '{'`

// LoadCheckpoint reads the checkpoint file at path, which flag -name
// names, in either format (minigpt.ReadCheckpoint tells them by their
// first bytes), refusing bytes after its end as minigpt.LoadCheckpoint
// does. A large file shows its reading on po (StartLarge). Every error
// starts with "-name path: ": "-model x.bin: bad checkpoint: magic
// number is ...".
func LoadCheckpoint(name, path string, po ProgressOut) (*minigpt.Checkpoint, error) {
	return LoadCheckpointAs("-"+name+" "+path, path, po)
}

// LoadCheckpointAs is LoadCheckpoint with errors that start with label,
// for a flag whose value is more than the path: "-model tuned=t.ckpt".
func LoadCheckpointAs(label, path string, po ProgressOut) (*minigpt.Checkpoint, error) {
	fail := func(err error) error { return fmt.Errorf("%s: %w", label, err) }
	f, err := OpenRegular(path) // a FIFO is refused, not waited on
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil && path != "" {
			err = inner // OpenRegular's message starts with the path, which label has
		}
		return nil, fail(err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	if size == 0 {
		return nil, fail(fmt.Errorf("%w: the file is empty: %s", minigpt.ErrBadCheckpoint, Formats))
	}
	p := po.StartLarge("reading "+path, size)
	defer p.Done()
	br := bufio.NewReaderSize(p.Reader(f), 64<<10)
	c, err := minigpt.ReadCheckpoint(br)
	if err != nil {
		return nil, fail(err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("%w: data after the checksum", minigpt.ErrBadCheckpoint)
		}
		return nil, fail(err)
	}
	return c, nil
}

// IsBadCheckpoint reports whether err says the bytes are not a usable
// checkpoint (as opposed to a file that could not be opened).
func IsBadCheckpoint(err error) bool { return errors.Is(err, minigpt.ErrBadCheckpoint) }
