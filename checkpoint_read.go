package minigpt

// This file holds the checkpoint reader: every section of docs/checkpoint-format.md
// read, bounded by what the input holds, and checked.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// This file holds the checkpoint reader: every section of docs/checkpoint-format.md
// read, bounded by what the input holds, and checked.

// ReadCheckpointInfo reads the beginning of a checkpoint from r: its
// model config, vocabulary, step and (for a full checkpoint) training
// config, without reading the parameters. It costs a few hundred bytes
// whatever the model's size. It checks what it reads (the header CRC
// among it) but cannot check the SHA-256 that covers the whole file:
// ReadCheckpoint does. It leaves r positioned at the parameters.
func ReadCheckpointInfo(r io.Reader) (*CheckpointInfo, error) {
	cr := &ckptReader{r: r, sum: sha256.New()}
	info, _, err := cr.readInfo()
	if err == nil {
		err = info.finishInfo()
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint info: %w", err)
	}
	return info, nil
}

// VerifyCheckpoint reads the beginning of a checkpoint from r as
// ReadCheckpointInfo does and then checks the SHA-256 that covers the
// whole of it, without keeping the weights: its memory does not grow with
// the model. A damaged or truncated file is an error wrapping
// ErrBadCheckpoint; the fields of such a file are not returned, since
// nothing vouches for them.
func VerifyCheckpoint(r io.Reader) (*CheckpointInfo, error) {
	cr := &ckptReader{r: r, sum: sha256.New()}
	info, _, err := cr.readInfo()
	if err == nil {
		err = info.finishInfo()
	}
	if err == nil {
		cr.begin("remaining", int(info.Bytes-cr.off-checksumSize))
		buf := make([]byte, ioChunk)
		for left := info.Bytes - cr.off - checksumSize; left > 0 && err == nil; {
			var got int
			got, err = io.ReadFull(cr.r, buf[:min(left, ioChunk)])
			cr.sum.Write(buf[:got])
			cr.off += int64(got)
			left -= int64(got)
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = bad("truncated: input ends at byte %d of the %d the header implies", cr.off, info.Bytes)
			}
		}
	}
	if err == nil {
		err = cr.verifyChecksum()
	}
	if err != nil {
		return nil, fmt.Errorf("verify checkpoint: %w", err)
	}
	return info, nil
}

// ReadCheckpoint reads one checkpoint from r and validates all of it (see
// docs/checkpoint-format.md). It reads exactly the checkpoint's bytes and no further.
// Anything wrong with the bytes is an error wrapping ErrBadCheckpoint that
// names the field or section; an error of r itself is returned wrapped as
// is. Memory grows only with the bytes actually read, whatever the header
// claims.
func ReadCheckpoint(r io.Reader) (*Checkpoint, error) {
	cr := &ckptReader{r: r, sum: sha256.New()}
	c, err := cr.read()
	if err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// ckptReader reads sections through a running SHA-256 and knows where it
// is, for error messages.
type ckptReader struct {
	r    io.Reader
	sum  hash.Hash
	off  int64 // bytes consumed
	size int64 // total size the header implies, once known

	section      string // the section being read
	sectionStart int64  // its offset
	sectionSize  int    // its length

	partial []byte // what a read that hit the end did receive
}

// bad returns an ErrBadCheckpoint error.
func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadCheckpoint}, a...)...)
}

// begin starts a section of n bytes; truncation errors name it.
func (cr *ckptReader) begin(section string, n int) {
	cr.section, cr.sectionStart, cr.sectionSize = section, cr.off, n
}

// bytes reads the next n bytes of the current section, allocating in
// chunks as they arrive.
func (cr *ckptReader) bytes(n int) ([]byte, error) {
	out := make([]byte, 0, min(n, ioChunk))
	for len(out) < n {
		k := min(n-len(out), ioChunk)
		out = slices.Grow(out, k)
		got, err := io.ReadFull(cr.r, out[len(out):len(out)+k])
		cr.sum.Write(out[len(out) : len(out)+got])
		cr.off += int64(got)
		out = out[:len(out)+got]
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				cr.partial = out
				size := ""
				if cr.size > 0 {
					size = fmt.Sprintf(" of the %d the header implies", cr.size)
				}
				return nil, bad("truncated in the %s section: input ends at byte %d%s (%d of the section's %d bytes)",
					cr.section, cr.off, size, cr.off-cr.sectionStart, cr.sectionSize)
			}
			return nil, fmt.Errorf("read checkpoint %s section: %w", cr.section, err)
		}
	}
	return out, nil
}

// readSection begins a section of n bytes and reads all of it.
func (cr *ckptReader) readSection(name string, n int) ([]byte, error) {
	cr.begin(name, n)
	return cr.bytes(n)
}

// floats reads a section of n little-endian float64s.
func (cr *ckptReader) floats(name string, n int) ([]float64, error) {
	cr.begin(name, 8*n)
	out := make([]float64, 0, min(n, ioChunk/8))
	for len(out) < n {
		k := min(n-len(out), ioChunk/8)
		b, err := cr.bytes(8 * k)
		if err != nil {
			return nil, err
		}
		for i := 0; i < k; i++ {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
	return out, nil
}

// ckptHeader is what the fixed-size header says.
type ckptHeader struct {
	version      uint32
	flags        uint32
	cfg          Config
	step         int
	rngLen       int
	nTrain, nVal int // loss-history points (version 2)
}

func (h *ckptHeader) has(flag uint32) bool { return h.flags&flag != 0 }

// read parses the sections, checking what sizes depend on (magic, version,
// flags, header CRC, config) before reading the body, and the SHA-256 of
// the whole before returning. Semantic checks are left to check.
func (cr *ckptReader) read() (*Checkpoint, error) {
	info, h, err := cr.readInfo()
	if err != nil {
		return nil, err
	}
	P := h.cfg.numParams()
	params, err := cr.floats("parameters", P)
	if err != nil {
		return nil, err
	}
	var adamM, adamV []float64
	if h.has(flagOptimizer) {
		if adamM, err = cr.floats("optimizer first moments", P); err != nil {
			return nil, err
		}
		if adamV, err = cr.floats("optimizer second moments", P); err != nil {
			return nil, err
		}
	}
	var trainLoss, valLoss []LossPoint
	if h.has(flagHistory) {
		if trainLoss, valLoss, err = cr.readHistory(h.nTrain, h.nVal); err != nil {
			return nil, err
		}
	}
	if err := cr.verifyChecksum(); err != nil {
		return nil, err
	}
	if err := info.finishInfo(); err != nil {
		return nil, err
	}

	// The bytes are as written; build the value for check to judge.
	m, err := newModel(h.cfg, params)
	if err != nil {
		return nil, bad("model: %w", err)
	}
	c := &Checkpoint{Model: m, Vocab: info.Vocab, Step: info.Step, Train: info.Train, rngState: info.rngState,
		CorpusSHA256: info.CorpusSHA256, TrainLoss: trainLoss, ValLoss: valLoss}
	if info.adam != nil {
		if err := info.adam.Validate(); err != nil {
			return nil, bad("optimizer config: %w", err)
		}
		c.Opt = restoreAdam(*info.adam, m.cfg, adamM, adamV, info.adamStep)
	}
	return c, nil
}

// readInfo reads every section before the parameters: the header, the
// vocabulary and, when present, the training config, the optimizer's
// constants, the sampler state and the corpus fingerprint.
func (cr *ckptReader) readInfo() (*CheckpointInfo, *ckptHeader, error) {
	h, err := cr.readHeader()
	if err != nil {
		return nil, nil, err
	}
	info := &CheckpointInfo{Config: h.cfg, Step: h.step, Full: h.has(flagTrain), Bytes: cr.size}
	if info.chars, err = cr.readVocab(h.cfg.VocabSize); err != nil {
		return nil, nil, err
	}
	if h.has(flagTrain) {
		if info.Train, err = cr.readTrainConfig(); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagOptimizer) {
		if err := cr.readOptimizerConfig(info); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagRNG) {
		if info.rngState, err = cr.readSection("sampler state", h.rngLen); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagCorpus) {
		if info.CorpusSHA256, err = cr.readSection("corpus fingerprint", corpusSumSize); err != nil {
			return nil, nil, err
		}
	}
	return info, h, nil
}

// readHeader reads and checks the fixed-size header, and sets cr.size to
// the total size it implies.
func (cr *ckptReader) readHeader() (*ckptHeader, error) {
	// Magic, version and flags come first in every version.
	cr.begin("header", headerSize)
	hdr, err := cr.bytes(16)
	if err != nil {
		// Say "not a checkpoint" rather than "truncated" when even the bytes
		// that did arrive are not the magic number.
		if n := min(len(cr.partial), len(checkpointMagic)); string(cr.partial[:n]) != checkpointMagic[:n] {
			return nil, bad("magic number is %q, want %q: not a minigpt checkpoint", cr.partial[:n], checkpointMagic)
		}
		return nil, err
	}
	if string(hdr[:8]) != checkpointMagic {
		return nil, bad("magic number is %q, want %q: not a minigpt checkpoint", hdr[:8], checkpointMagic)
	}
	h := &ckptHeader{version: binary.LittleEndian.Uint32(hdr[8:])}
	size, known := headerSize, uint32(knownFlags)
	switch h.version {
	case 1:
		size, known = headerSizeV1, knownFlagsV1
	case 2:
	default:
		return nil, bad("unsupported format version %d (this reader knows versions 1 and 2)", h.version)
	}
	cr.sectionSize = size
	rest, err := cr.bytes(size - 16)
	if err != nil {
		return nil, err
	}
	hdr = append(hdr, rest...)
	crcAt := size - 4
	if got, want := binary.LittleEndian.Uint32(hdr[crcAt:]), crc32.ChecksumIEEE(hdr[:crcAt]); got != want {
		return nil, bad("header checksum mismatch: stored CRC-32 %#08x, computed %#08x", got, want)
	}
	h.flags = binary.LittleEndian.Uint32(hdr[12:])
	if unknown := h.flags &^ known; unknown != 0 {
		return nil, bad("unknown section flags %#x (version %d)", unknown, h.version)
	}
	u32 := func(off int) int { return int(binary.LittleEndian.Uint32(hdr[off:])) }
	h.cfg = Config{VocabSize: u32(16), BlockSize: u32(20), EmbedDim: u32(24), Heads: u32(28), Layers: u32(32)}
	switch u32(36) {
	case 0:
	case 1:
		h.cfg.TiedHead = true
	default:
		return nil, bad("tied-head field is %d, want 0 or 1", u32(36))
	}
	if err := h.cfg.Validate(); err != nil {
		return nil, bad("model config: %w", err)
	}
	h.step = toInt(binary.LittleEndian.Uint64(hdr[40:]))
	if h.step < 0 {
		return nil, bad("step %d is negative", h.step)
	}
	h.rngLen = u32(48)
	switch {
	case !h.has(flagRNG) && h.rngLen != 0:
		return nil, bad("sampler state length is %d but the sampler section is absent", h.rngLen)
	case h.has(flagRNG) && (h.rngLen < 1 || h.rngLen > maxRNGStateLen):
		return nil, bad("sampler state length %d is outside [1, %d]", h.rngLen, maxRNGStateLen)
	}
	if h.version >= 2 {
		h.nTrain, h.nVal = u32(52), u32(56)
	}
	// Bounded by the step before any section is read: the counts cannot
	// announce more points than a run of that length records.
	switch {
	case !h.has(flagHistory) && (h.nTrain != 0 || h.nVal != 0):
		return nil, bad("loss history counts are %d and %d but the loss history section is absent", h.nTrain, h.nVal)
	case h.nTrain > h.step:
		return nil, bad("%d training-loss points for %d steps", h.nTrain, h.step)
	case h.nVal > h.step+1:
		return nil, bad("%d validation-loss points for %d steps (at most one per step, and one before the first)", h.nVal, h.step)
	case int64(h.nTrain)+int64(h.nVal) > math.MaxInt/lossPointSize:
		return nil, bad("%d loss points do not fit in memory on this platform", int64(h.nTrain)+int64(h.nVal))
	}

	P := int64(h.cfg.numParams())
	cr.size = int64(size) + 4*int64(h.cfg.VocabSize) + int64(h.rngLen) + 8*P + checksumSize + lossPointSize*(int64(h.nTrain)+int64(h.nVal))
	if h.has(flagCorpus) {
		cr.size += corpusSumSize
	}
	if h.has(flagTrain) {
		cr.size += trainSize
	}
	if h.has(flagOptimizer) {
		cr.size += optimizerSize + 16*P
	}
	return h, nil
}

// readHistory reads the loss history section: nTrain training points,
// then nVal validation points, each an i64 step and an f64 loss. The
// section is read as float64 pairs, allocating as bytes arrive; a step's
// bits come back exactly.
func (cr *ckptReader) readHistory(nTrain, nVal int) (train, val []LossPoint, err error) {
	xs, err := cr.floats("loss history", 2*(nTrain+nVal))
	if err != nil {
		return nil, nil, err
	}
	points := make([]LossPoint, nTrain+nVal)
	for i := range points {
		points[i] = LossPoint{toInt(math.Float64bits(xs[2*i])), xs[2*i+1]}
	}
	return points[:nTrain:nTrain], points[nTrain:], nil
}

// readVocab reads the vocabulary section: n code points, which
// finishInfo checks.
func (cr *ckptReader) readVocab(n int) ([]rune, error) {
	vb, err := cr.readSection("vocabulary", 4*n)
	if err != nil {
		return nil, err
	}
	chars := make([]rune, n)
	for i := range chars {
		chars[i] = rune(int32(binary.LittleEndian.Uint32(vb[4*i:])))
	}
	return chars, nil
}

// finishInfo builds the vocabulary of info from its characters. The
// reader calls it only after the checksum matched, so that damaged bytes
// are reported as damage rather than as whatever they now say.
func (info *CheckpointInfo) finishInfo() error {
	vocab, err := VocabFromChars(info.chars)
	if err != nil {
		return bad("vocabulary: %w", err)
	}
	info.Vocab, info.chars = vocab, nil
	return nil
}

// readTrainConfig reads the training config section.
func (cr *ckptReader) readTrainConfig() (*TrainConfig, error) {
	b, err := cr.readSection("training config", trainSize)
	if err != nil {
		return nil, err
	}
	f := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	cosine := f(5)
	if cosine > 1 {
		return nil, bad("training config: cosine-decay field is %d, want 0 or 1", cosine)
	}
	return &TrainConfig{
		Steps: toInt(f(0)), BatchSize: toInt(f(1)), LR: math.Float64frombits(f(2)), Seed: f(3),
		WarmupSteps: toInt(f(4)), CosineDecay: cosine == 1, MinLR: math.Float64frombits(f(6)),
		GradClip: math.Float64frombits(f(7)), WeightDecay: math.Float64frombits(f(8)),
		EvalEvery: toInt(f(9)), EvalBatches: toInt(f(10)),
	}, nil
}

// readOptimizerConfig reads the optimizer's constants and step into info.
func (cr *ckptReader) readOptimizerConfig(info *CheckpointInfo) error {
	b, err := cr.readSection("optimizer config", optimizerSize)
	if err != nil {
		return err
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
	info.adam = &AdamConfig{Beta1: f(0), Beta2: f(1), Eps: f(2), WeightDecay: f(3)}
	info.adamStep = toInt(binary.LittleEndian.Uint64(b[32:]))
	return nil
}

// verifyChecksum reads the trailing SHA-256 and compares it with the sum
// of everything read before it.
func (cr *ckptReader) verifyChecksum() error {
	want := cr.sum.Sum(nil)
	got, err := cr.readSection("checksum", checksumSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return bad("checksum mismatch: stored SHA-256 %x, computed %x over the preceding %d bytes", got, want, cr.off-checksumSize)
	}
	return nil
}

// toInt converts a stored signed 64-bit count to int; a value that does
// not fit becomes -1, which the checks refuse as negative.
func toInt(u uint64) int {
	v := int64(u)
	if int64(int(v)) != v {
		return -1
	}
	return int(v)
}
