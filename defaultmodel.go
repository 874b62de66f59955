package minigpt

import (
	"bytes"
	_ "embed"
	"fmt"
)

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

// DefaultModelInfo describes the embedded model (see CheckpointInfo)
// without loading its weights, its checksum verified.
func DefaultModelInfo() (*CheckpointInfo, error) {
	info, err := VerifyCheckpoint(bytes.NewReader(defaultCheckpoint))
	if err != nil {
		return nil, fmt.Errorf("embedded model: %w", err)
	}
	return info, nil
}
