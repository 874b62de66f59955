package minigpt

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// SaveCheckpoint writes c to path atomically: into a temporary file in the
// same directory, synced to disk, then renamed over path. If anything
// fails, or the machine stops midway, the file at path is the old one (or
// none) and the temporary file is removed.
func SaveCheckpoint(path string, c *Checkpoint) error {
	return saveCheckpoint(path, c, WriteCheckpoint)
}

// saveCheckpoint is SaveCheckpoint with the writer as a parameter, so that
// tests can make it fail midway.
func saveCheckpoint(path string, c *Checkpoint, write func(io.Writer, *Checkpoint) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	tmp := f.Name()
	if err := writeSynced(f, c, write); err != nil {
		f.Close() // already failed; this error adds nothing
		os.Remove(tmp)
		return fmt.Errorf("save checkpoint %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("save checkpoint %s: written, but syncing its directory: %w", path, err)
	}
	return nil
}

// writeSynced writes c to f and flushes it to stable storage.
func writeSynced(f *os.File, c *Checkpoint, write func(io.Writer, *Checkpoint) error) error {
	if err := write(f, c); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a rename in dir durable. Windows cannot sync a directory
// (and does not need to).
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// LoadCheckpoint reads the checkpoint file at path (see ReadCheckpoint),
// also refusing bytes after its checksum.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
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
	f, err := os.Open(path)
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
