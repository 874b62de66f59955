package minigpt

// This file holds the checkpoint writer, and SaveCheckpoint, which writes
// a file atomically.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"

	"example.org/minigpt/internal/safefile"
)

// WriteCheckpoint writes c to w in the format of docs/checkpoint-format.md
// (version 2, or 3 for a BPE vocabulary): a full checkpoint when c is
// full, with the corpus fingerprint if c has it, else a weights-only one. It refuses (with
// ErrBadCheckpoint) a checkpoint that ReadCheckpoint would refuse.
func WriteCheckpoint(w io.Writer, c *Checkpoint) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	cw := &ckptWriter{w: bufio.NewWriterSize(w, ioChunk), sum: sha256.New()}
	cfg := c.Model.cfg
	var flags uint32
	s := c.state
	if s == nil {
		s = &trainState{}
	} else {
		flags |= flagsFull
	}
	if c.CorpusSHA256 != nil {
		flags |= flagCorpus
	}
	if s.trainLoss != nil || s.valLoss != nil {
		flags |= flagHistory
	}
	version := uint32(checkpointVersion)
	var tok []byte
	if t := c.Vocab.tok; t != nil {
		flags |= flagTokenizer
		version = versionTokenizer
		var err error
		if tok, err = t.MarshalBinary(); err != nil {
			return fmt.Errorf("write checkpoint: tokenizer: %w", err)
		}
	}

	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, checkpointMagic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, version)
	hdr = binary.LittleEndian.AppendUint32(hdr, flags)
	for _, v := range []int{cfg.VocabSize, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, b2i(cfg.TiedHead)} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(c.Step))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(s.sampler)))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(s.trainLoss)))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(s.valLoss)))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.ChecksumIEEE(hdr))
	cw.write(hdr)

	if tok != nil {
		cw.write(binary.LittleEndian.AppendUint32(nil, uint32(len(tok))))
		cw.write(tok)
	} else {
		vocab := make([]byte, 0, 4*c.Vocab.Size())
		for _, r := range c.Vocab.chars {
			vocab = binary.LittleEndian.AppendUint32(vocab, uint32(r))
		}
		cw.write(vocab)
	}

	if tc := c.Train; tc != nil {
		b := make([]byte, 0, trainSize)
		for _, v := range []uint64{
			uint64(tc.Steps), uint64(tc.BatchSize), math.Float64bits(tc.LR), tc.Seed,
			uint64(tc.WarmupSteps), uint64(b2i(tc.CosineDecay)), math.Float64bits(tc.MinLR),
			math.Float64bits(tc.GradClip), math.Float64bits(tc.WeightDecay),
			uint64(tc.EvalEvery), uint64(tc.EvalBatches),
		} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		cw.write(b)
	}
	if c.state != nil {
		b := make([]byte, 0, optimizerSize)
		for _, v := range []uint64{
			math.Float64bits(s.adam.beta1), math.Float64bits(s.adam.beta2),
			math.Float64bits(s.adam.eps), math.Float64bits(s.adam.weightDecay),
			uint64(s.adamStep),
		} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		cw.write(b)
	}
	cw.write(s.sampler)
	cw.write(c.CorpusSHA256)
	cw.floats(c.Model.slab)
	cw.floats(s.m)
	cw.floats(s.v)
	for _, curve := range [][]LossPoint{s.trainLoss, s.valLoss} {
		for len(curve) > 0 && cw.err == nil {
			n := min(len(curve), ioChunk/lossPointSize)
			cw.buf = cw.buf[:0]
			for _, p := range curve[:n] {
				cw.buf = binary.LittleEndian.AppendUint64(cw.buf, uint64(p.Step))
				cw.buf = binary.LittleEndian.AppendUint64(cw.buf, math.Float64bits(p.Loss))
			}
			cw.write(cw.buf)
			curve = curve[n:]
		}
	}
	if cw.err == nil {
		_, cw.err = cw.w.Write(cw.sum.Sum(nil))
	}
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	if cw.err != nil {
		return fmt.Errorf("write checkpoint: %w", cw.err)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ckptWriter writes through a running SHA-256, keeping the first error.
type ckptWriter struct {
	w   *bufio.Writer
	sum hash.Hash
	err error
	buf []byte
}

func (cw *ckptWriter) write(b []byte) {
	if cw.err != nil {
		return
	}
	cw.sum.Write(b)
	_, cw.err = cw.w.Write(b)
}

func (cw *ckptWriter) floats(xs []float64) {
	for len(xs) > 0 && cw.err == nil {
		n := min(len(xs), ioChunk/8)
		cw.buf = cw.buf[:0]
		for _, x := range xs[:n] {
			cw.buf = binary.LittleEndian.AppendUint64(cw.buf, math.Float64bits(x))
		}
		cw.write(cw.buf)
		xs = xs[n:]
	}
}

// SaveCheckpoint writes c to path atomically (a synced temporary file
// renamed over it), so path holds the old checkpoint or the whole new one.
// Only a regular file is replaced, keeping its permission bits.
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
