package minigpt

import (
	"bufio"
	"fmt"
	"io"

	"example.org/minigpt/internal/safefile"
)

// ErrNotRegularFile is wrapped by SaveCheckpoint for a path that exists and
// is not a regular file (a directory, symbolic link, device, named pipe or
// socket), which is never replaced, and by LoadCheckpoint and
// LoadCheckpointInfo for an input that is not a regular file, which is
// never read.
var ErrNotRegularFile = safefile.ErrNotRegular

// SaveCheckpoint writes c to path atomically, replacing a regular file
// there: the checkpoint goes to a temporary file in path's directory
// (.NAME.tmp-minigpt), which is synced and then renamed over path, so at
// every moment path holds the old checkpoint (or nothing) or the complete
// new one. A failure removes the temporary file; a save killed midway
// leaves it, and the next save of path removes it. Anything at path that
// is not a regular file is refused (ErrNotRegularFile), never replaced; a
// replaced file keeps its permission bits. To write a checkpoint anywhere
// else (or to refuse an existing file), use WriteCheckpoint.
func SaveCheckpoint(path string, c *Checkpoint) error {
	return saveCheckpoint(path, c, WriteCheckpoint)
}

// saveCheckpoint is SaveCheckpoint with the writer as a parameter, so that
// tests can make it fail midway.
func saveCheckpoint(path string, c *Checkpoint, write func(io.Writer, *Checkpoint) error) error {
	if err := safefile.Save(path, true, func(w io.Writer) error { return write(w, c) }); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint reads the checkpoint file at path (see ReadCheckpoint),
// also refusing bytes after its checksum. path must be a regular file: a
// named pipe, device or directory is refused at once (wrapping
// ErrNotRegularFile), without blocking on it.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := safefile.OpenRegular(path) // a FIFO would block in open
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, ioChunk)
	c, err := ReadCheckpoint(br)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", path, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("load checkpoint %s: %w", path, err)
		}
		return nil, fmt.Errorf("load checkpoint %s: %w", path, bad("data after the checksum"))
	}
	return c, nil
}

// LoadCheckpointInfo reads the config, vocabulary, step and training
// config of the checkpoint file at path without reading its weights (see
// ReadCheckpointInfo). It also checks that the file is as long as its
// header says, so that a truncated file is reported here too; the
// weights' checksum is verified only by LoadCheckpoint.
func LoadCheckpointInfo(path string) (*CheckpointInfo, error) {
	f, err := safefile.OpenRegular(path) // a FIFO would block in open
	if err != nil {
		return nil, fmt.Errorf("load checkpoint info: %w", err)
	}
	defer f.Close()
	info, err := ReadCheckpointInfo(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("load checkpoint info %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load checkpoint info %s: %w", path, err)
	}
	if fi.Mode().IsRegular() && fi.Size() != info.Bytes {
		return nil, fmt.Errorf("load checkpoint info %s: %w", path, bad("the file has %d bytes, its header implies %d", fi.Size(), info.Bytes))
	}
	return info, nil
}

// VerifyCheckpointFile is VerifyCheckpoint on the file at path, also
// refusing bytes after the checksum: what the file says about itself,
// once its checksum vouches for every byte.
func VerifyCheckpointFile(path string) (*CheckpointInfo, error) {
	f, err := safefile.OpenRegular(path) // a FIFO would block in open
	if err != nil {
		return nil, fmt.Errorf("verify checkpoint: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, ioChunk)
	info, err := VerifyCheckpoint(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("verify checkpoint %s: %w", path, err)
		}
		return nil, fmt.Errorf("verify checkpoint %s: %w", path, bad("data after the checksum"))
	}
	return info, nil
}
