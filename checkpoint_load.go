package minigpt

// This file holds loading: a checkpoint file by its path, and the
// embedded default model.

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"io"

	"example.org/minigpt/internal/safefile"
)

// LoadCheckpoint reads the checkpoint file at path, of either format (see
// ReadCheckpoint), also refusing bytes after its end. path must be a
// regular file: a named pipe, device or directory is refused at once
// (wrapping ErrNotRegularFile), without blocking on it.
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

// defaultCheckpoint is the weights-only checkpoint written by
//
//	go run ./cmd/train -weights-only -force -out models/lanternbay.ckpt
//
// with every other flag at its default (the lessons' run: 1200 steps on
// Lantern Bay, seed 42). TestEmbeddedModelIsReproducible retrains and
// checks these weights bit for bit.
//
//go:embed models/lanternbay.ckpt
var defaultCheckpoint []byte

// DefaultModel returns the model of the default training run, embedded in
// the package, and its vocabulary. Each call returns a fresh copy.
func DefaultModel() (*Model, *Vocab, error) {
	c, err := ReadCheckpoint(bytes.NewReader(defaultCheckpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("embedded model: %w", err)
	}
	return c.Model, c.Vocab, nil
}
