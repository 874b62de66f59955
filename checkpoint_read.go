package minigpt

// This file holds the checkpoint reader: every section of
// docs/checkpoint-format.md read, bounded by what the input holds, and
// checked.

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

	"example.org/minigpt/internal/bpe"
)

// ReadCheckpoint reads one checkpoint from r, of either format, told by
// its first bytes: minigpt's own (docs/checkpoint-format.md, the magic
// "\x89GPT\r\n\x1a\n"), read exactly to its checksum, or a safetensors
// file (docs/interop.md, a header length then '{'), read to the end of r,
// which gives a weights-only checkpoint. It checks everything; bad bytes
// are an error wrapping ErrBadCheckpoint that names the field, and memory
// grows only with the bytes actually read, whatever a header claims.
func ReadCheckpoint(r io.Reader) (*Checkpoint, error) {
	var head [9]byte
	n, err := io.ReadFull(r, head[:len(checkpointMagic)])
	if err != nil && !isEOF(err) {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	rest := io.MultiReader(bytes.NewReader(head[:n]), r)
	if n == len(checkpointMagic) && string(head[:n]) != checkpointMagic {
		// Not minigpt's magic: a safetensors file has a header length
		// and then '{'.
		k, err := io.ReadFull(r, head[n:n+1])
		if err != nil && !isEOF(err) {
			return nil, fmt.Errorf("read checkpoint: %w", err)
		}
		if k == 1 && head[n] == '{' {
			c, err := readSafetensors(io.MultiReader(bytes.NewReader(head[:n+1]), r))
			if err != nil {
				return nil, fmt.Errorf("read safetensors: %w", err)
			}
			return c, nil
		}
		return nil, badMagic(head[:n])
	}
	cr := &ckptReader{r: rest, sum: sha256.New()}
	c, err := cr.read()
	if err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// badMagic is the error for a file that begins with neither format's
// bytes: it says what each begins with.
func badMagic(head []byte) error {
	return bad("magic number is %q, want %q: not a minigpt checkpoint, nor a safetensors file (an 8-byte header length, then '{')", head, checkpointMagic)
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
	if h.has(flagOptimizer) {
		if info.state.m, err = cr.floats("optimizer first moments", P); err != nil {
			return nil, err
		}
		if info.state.v, err = cr.floats("optimizer second moments", P); err != nil {
			return nil, err
		}
	}
	if h.has(flagHistory) {
		if info.state.trainLoss, info.state.valLoss, err = cr.readHistory(h.nTrain, h.nVal); err != nil {
			return nil, err
		}
	}
	if err := cr.verifyChecksum(); err != nil {
		return nil, err
	}
	// The vocabulary is built only after the checksum matched, so that
	// damaged bytes are reported as damage rather than as whatever they
	// now say.
	var vocab *Vocab
	if info.tok != nil {
		tok, err := bpe.ReadBinary(info.tok)
		if err != nil {
			return nil, bad("tokenizer: %w", err)
		}
		vocab = &Vocab{tok: tok}
	} else if vocab, err = vocabFromChars(info.chars); err != nil {
		return nil, bad("vocabulary: %w", err)
	}

	// The bytes are as written; build the value for check to judge.
	m, err := newModel(h.cfg, params)
	if err != nil {
		return nil, bad("model: %w", err)
	}
	c := &Checkpoint{Model: m, Vocab: vocab, Step: h.step, Train: info.train, CorpusSHA256: info.corpus}
	if h.has(flagOptimizer) || h.has(flagRNG) || h.has(flagTrain) {
		c.state = &info.state
	}
	if c.state != nil && !(h.has(flagOptimizer) && h.has(flagRNG) && h.has(flagTrain)) {
		return nil, bad("a checkpoint holds the training config, optimizer and sampler state all together or none of them")
	}
	return c, nil
}

// ckptInfo is what the sections before the parameters say.
type ckptInfo struct {
	chars  []rune // the vocabulary section, until the checksum vouches for it
	tok    []byte // or the tokenizer's binary form
	train  *TrainConfig
	corpus []byte
	state  trainState // the optimizer's constants and step, the sampler state
}

// readInfo reads every section before the parameters: the header, the
// vocabulary and, when present, the training config, the optimizer's
// constants, the sampler state and the corpus fingerprint.
func (cr *ckptReader) readInfo() (*ckptInfo, *ckptHeader, error) {
	h, err := cr.readHeader()
	if err != nil {
		return nil, nil, err
	}
	info := &ckptInfo{}
	if h.has(flagTokenizer) {
		if info.tok, err = cr.readTokenizer(); err != nil {
			return nil, nil, err
		}
	} else if info.chars, err = cr.readVocab(h.cfg.VocabSize); err != nil {
		return nil, nil, err
	}
	if h.has(flagTrain) {
		if info.train, err = cr.readTrainConfig(); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagOptimizer) {
		if err := cr.readOptimizerConfig(&info.state); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagRNG) {
		if info.state.sampler, err = cr.readSection("sampler state", h.rngLen); err != nil {
			return nil, nil, err
		}
	}
	if h.has(flagCorpus) {
		if info.corpus, err = cr.readSection("corpus fingerprint", corpusSumSize); err != nil {
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
			return nil, badMagic(cr.partial[:n])
		}
		return nil, err
	}
	if string(hdr[:8]) != checkpointMagic {
		return nil, badMagic(hdr[:8])
	}
	h := &ckptHeader{version: binary.LittleEndian.Uint32(hdr[8:])}
	size, known := headerSize, uint32(knownFlags)
	switch h.version {
	case 1:
		size, known = headerSizeV1, knownFlagsV1
	case 2:
		known = knownFlagsV2
	case 3:
	default:
		return nil, bad("unsupported format version %d (this reader knows versions 1 to 3)", h.version)
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
	if h.version == 3 && !h.has(flagTokenizer) {
		return nil, bad("a version 3 checkpoint holds a tokenizer, but its flag is not set")
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
	vocabSize := 4 * int64(h.cfg.VocabSize) // code points; a tokenizer's length is read with it
	if h.has(flagTokenizer) {
		vocabSize = 4
	}
	cr.size = int64(size) + vocabSize + int64(h.rngLen) + 8*P + checksumSize + lossPointSize*(int64(h.nTrain)+int64(h.nVal))
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

// readTokenizer reads a version 3 vocabulary section: the length of the
// tokenizer's binary form, then the form, which read checks once the
// checksum matched.
func (cr *ckptReader) readTokenizer() ([]byte, error) {
	b, err := cr.readSection("tokenizer length", 4)
	if err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(b))
	if n < 1 || n > bpe.MaxBinarySize {
		return nil, bad("tokenizer length %d is outside [1, %d]", n, bpe.MaxBinarySize)
	}
	cr.size += n
	return cr.readSection("tokenizer", int(n))
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

// readOptimizerConfig reads the optimizer's constants and step into s.
func (cr *ckptReader) readOptimizerConfig(s *trainState) error {
	b, err := cr.readSection("optimizer config", optimizerSize)
	if err != nil {
		return err
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
	s.adam = adamConfig{beta1: f(0), beta2: f(1), eps: f(2), weightDecay: f(3)}
	s.adamStep = toInt(binary.LittleEndian.Uint64(b[32:]))
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
