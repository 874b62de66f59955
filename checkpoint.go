package minigpt

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// ErrBadCheckpoint is returned (wrapped) for bytes that are not a valid
// checkpoint, and for a Checkpoint value that could not be read back if it
// were written. The message names the field or section at fault.
var ErrBadCheckpoint = errors.New("bad checkpoint")

// Checkpoint is a model with its vocabulary and, for a full checkpoint,
// everything a Trainer needs to continue exactly where it stopped. The
// byte layout is described in CHECKPOINT.md.
type Checkpoint struct {
	Model *Model
	Vocab *Vocab // its size is Model.Config.VocabSize
	Step  int    // training steps completed
	// Train is the run's configuration; nil in a weights-only checkpoint.
	// Its Seed also regenerates the fixed validation batches on resume.
	Train *TrainConfig
	// Opt is the optimizer state; nil in a weights-only checkpoint.
	Opt *Adam
	// CorpusSHA256 is the fingerprint of the text the run trained on
	// (Dataset.SHA256), which ResumeTrainer compares with the dataset it
	// is given. nil when unknown: in a weights-only checkpoint, and in a
	// full one of format version 1. Clear it to resume on another text.
	CorpusSHA256 []byte
	// TrainLoss and ValLoss are the run's loss history as Trainer.Run
	// recorded it (see LossHistory), carried on by ResumeTrainer; nil in a
	// weights-only checkpoint and in one of format version 1.
	TrainLoss, ValLoss []LossPoint
	// rngState is the training batch sampler's PCG state (from
	// MarshalBinary); nil in a weights-only checkpoint.
	rngState []byte
}

// LossPoint is one point of a loss curve: the loss after Step steps.
type LossPoint struct {
	Step int
	Loss float64
}

// ErrCorpusMismatch is returned (wrapped) by ResumeTrainer for a dataset
// whose text is not the one the checkpoint was trained on.
var ErrCorpusMismatch = errors.New("corpus differs from the checkpoint's")

// Full reports whether c holds the complete training state, so that
// ResumeTrainer can continue from it.
func (c *Checkpoint) Full() bool {
	return c.Train != nil && c.Opt != nil && c.rngState != nil
}

// Checkpoint returns a snapshot of the trainer's state: with optimizer, a
// full checkpoint (model, optimizer, training config, sampler state) that
// ResumeTrainer continues bit for bit; without, a weights-only one (model,
// vocabulary, step). The snapshot shares nothing with the trainer, so
// training on does not change it.
func (t *Trainer) Checkpoint(withOptimizer bool) *Checkpoint {
	c := &Checkpoint{Model: t.Model.Clone(), Vocab: t.Data.Vocab, Step: t.Step}
	if !withOptimizer {
		return c
	}
	tc := t.Config
	c.Train = &tc
	c.Opt = cloneAdam(t.Opt, c.Model)
	state, err := t.batchSource.MarshalBinary()
	if err != nil {
		panic("minigpt: PCG.MarshalBinary failed: " + err.Error()) // it never does
	}
	c.rngState = state
	sum := t.corpusSHA256()
	c.CorpusSHA256 = sum[:]
	c.TrainLoss = slices.Clone(t.trainLoss)
	c.ValLoss = slices.Clone(t.valLoss)
	if c.TrainLoss == nil {
		c.TrainLoss = []LossPoint{} // present, if empty: the file records "no points yet"
	}
	if c.ValLoss == nil {
		c.ValLoss = []LossPoint{}
	}
	return c
}

// corpusSHA256 returns t.Data.SHA256(), computed once: a checkpoint is
// taken at every -keep-best improvement, and hashing a large text each
// time would cost more than the snapshot.
func (t *Trainer) corpusSHA256() [32]byte {
	if t.corpusSum == nil {
		sum := t.Data.SHA256()
		t.corpusSum = &sum
	}
	return *t.corpusSum
}

// cloneAdam returns a deep copy of o for model m (which has o's layout).
func cloneAdam(o *Adam, m *Model) *Adam {
	c, err := NewAdam(o.Config, m)
	if err != nil {
		panic("minigpt: cloning a valid optimizer: " + err.Error()) // o.Config was validated by NewAdam
	}
	copy(c.M, o.M)
	copy(c.V, o.V)
	c.Step = o.Step
	return c
}

// ResumeTrainer returns a trainer that continues the full checkpoint c on
// d exactly as the run that wrote it would have continued: same
// parameters, optimizer moments, step, learning-rate schedule, batch
// sampler state and validation batches. d must be encoded with c's
// vocabulary (see NewDatasetWithVocab) and, if c records the fingerprint
// of its text, be that same text: a different one is an error wrapping
// ErrCorpusMismatch (clear c.CorpusSHA256 to continue on it anyway). To
// extend the run, raise c.Train.Steps before calling. The trainer carries
// on c's loss history. It works on copies; c is not changed.
func ResumeTrainer(c *Checkpoint, d *Dataset) (*Trainer, error) {
	if !c.Full() {
		return nil, fmt.Errorf("resume: the checkpoint is weights-only; resuming needs the optimizer, training config and sampler state of a full checkpoint")
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if !slices.Equal(d.Vocab.chars, c.Vocab.chars) {
		return nil, fmt.Errorf("resume: the dataset's vocabulary (%d characters) differs from the checkpoint's (%d); encode the corpus with the checkpoint's vocabulary", d.Vocab.Size(), c.Vocab.Size())
	}
	if c.CorpusSHA256 != nil {
		if sum := d.SHA256(); !bytes.Equal(sum[:], c.CorpusSHA256) {
			return nil, fmt.Errorf("resume: %w: the dataset's text has SHA-256 %x, the checkpoint was trained on a text with SHA-256 %x", ErrCorpusMismatch, sum[:8], c.CorpusSHA256[:8])
		}
	}
	m := c.Model.Clone()
	t, err := NewTrainer(m, d, *c.Train)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	t.Opt = cloneAdam(c.Opt, m)
	t.Step = c.Step
	t.trainLoss = slices.Clone(c.TrainLoss)
	t.valLoss = slices.Clone(c.ValLoss)
	// t.batchRNG draws from t.batchSource, so restoring the source in
	// place restores the sampler.
	if err := t.batchSource.UnmarshalBinary(c.rngState); err != nil {
		return nil, fmt.Errorf("resume: sampler state: %w", err)
	}
	return t, nil
}

// The byte layout; CHECKPOINT.md is its description.
const (
	checkpointMagic   = "\x89GPT\r\n\x1a\n"
	checkpointVersion = 2 // what WriteCheckpoint writes; 1 is still read

	flagTrain     = 1 << 0 // the training config section is present
	flagOptimizer = 1 << 1 // the optimizer sections are present
	flagRNG       = 1 << 2 // the sampler state section is present
	flagCorpus    = 1 << 3 // the corpus fingerprint section is present (version 2)
	flagHistory   = 1 << 4 // the loss history section is present (version 2)
	flagsFull     = flagTrain | flagOptimizer | flagRNG
	knownFlagsV1  = flagsFull
	knownFlags    = flagsFull | flagCorpus | flagHistory

	headerSizeV1   = 56 // through the header CRC
	headerSize     = 64 // version 2: the loss-point counts before the CRC
	corpusSumSize  = sha256.Size
	lossPointSize  = 16
	trainSize      = 11 * 8
	optimizerSize  = 5 * 8
	maxRNGStateLen = 64 // a PCG state is 20 bytes
	checksumSize   = sha256.Size

	// ioChunk is how many bytes the reader and writer handle at a time;
	// the reader allocates for a section only as its bytes arrive.
	ioChunk = 64 << 10
)

// WriteCheckpoint writes c to w in the format of CHECKPOINT.md: a full
// checkpoint when c.Train, c.Opt and the sampler state are present, a
// weights-only one when they are nil. It refuses (with ErrBadCheckpoint) a
// checkpoint that ReadCheckpoint would refuse.
func WriteCheckpoint(w io.Writer, c *Checkpoint) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	cw := &ckptWriter{w: bufio.NewWriterSize(w, ioChunk), sum: sha256.New()}
	cfg := c.Model.Config
	var flags uint32
	if c.Train != nil {
		flags |= flagTrain
	}
	if c.Opt != nil {
		flags |= flagOptimizer
	}
	if c.rngState != nil {
		flags |= flagRNG
	}
	if c.CorpusSHA256 != nil {
		flags |= flagCorpus
	}
	if c.TrainLoss != nil || c.ValLoss != nil {
		flags |= flagHistory
	}

	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, checkpointMagic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, checkpointVersion)
	hdr = binary.LittleEndian.AppendUint32(hdr, flags)
	for _, v := range []int{cfg.VocabSize, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, b2i(cfg.TiedHead)} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(c.Step))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(c.rngState)))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(c.TrainLoss)))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(c.ValLoss)))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.ChecksumIEEE(hdr))
	cw.write(hdr)

	vocab := make([]byte, 0, 4*c.Vocab.Size())
	for _, r := range c.Vocab.chars {
		vocab = binary.LittleEndian.AppendUint32(vocab, uint32(r))
	}
	cw.write(vocab)

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
	if o := c.Opt; o != nil {
		b := make([]byte, 0, optimizerSize)
		for _, v := range []uint64{
			math.Float64bits(o.Config.Beta1), math.Float64bits(o.Config.Beta2),
			math.Float64bits(o.Config.Eps), math.Float64bits(o.Config.WeightDecay),
			uint64(o.Step),
		} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		cw.write(b)
	}
	cw.write(c.rngState)
	cw.write(c.CorpusSHA256)
	cw.floats(c.Model.Params)
	if o := c.Opt; o != nil {
		cw.floats(o.M)
		cw.floats(o.V)
	}
	for _, curve := range [][]LossPoint{c.TrainLoss, c.ValLoss} {
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

// ReadCheckpoint reads one checkpoint from r and validates all of it (see
// CHECKPOINT.md). It reads exactly the checkpoint's bytes and no further.
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

// read parses the sections, checking what sizes depend on (magic, version,
// flags, header CRC, config) before reading the body, and the SHA-256 of
// the whole before returning. Semantic checks are left to check.
func (cr *ckptReader) read() (*Checkpoint, error) {
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
	version := binary.LittleEndian.Uint32(hdr[8:])
	hdrSize, known := headerSize, uint32(knownFlags)
	switch version {
	case 1:
		hdrSize, known = headerSizeV1, knownFlagsV1
	case 2:
	default:
		return nil, bad("unsupported format version %d (this reader knows versions 1 and 2)", version)
	}
	cr.sectionSize = hdrSize
	rest, err := cr.bytes(hdrSize - 16)
	if err != nil {
		return nil, err
	}
	hdr = append(hdr, rest...)
	crcAt := hdrSize - 4
	if got, want := binary.LittleEndian.Uint32(hdr[crcAt:]), crc32.ChecksumIEEE(hdr[:crcAt]); got != want {
		return nil, bad("header checksum mismatch: stored CRC-32 %#08x, computed %#08x", got, want)
	}
	flags := binary.LittleEndian.Uint32(hdr[12:])
	if flags&^known != 0 {
		return nil, bad("unknown section flags %#x (version %d)", flags&^known, version)
	}
	u32 := func(off int) int { return int(binary.LittleEndian.Uint32(hdr[off:])) }
	cfg := Config{VocabSize: u32(16), BlockSize: u32(20), EmbedDim: u32(24), Heads: u32(28), Layers: u32(32)}
	switch u32(36) {
	case 0:
	case 1:
		cfg.TiedHead = true
	default:
		return nil, bad("tied-head field is %d, want 0 or 1", u32(36))
	}
	if err := cfg.Validate(); err != nil {
		return nil, bad("model config: %w", err)
	}
	step := int64(binary.LittleEndian.Uint64(hdr[40:]))
	rngLen := u32(48)
	switch {
	case flags&flagRNG == 0 && rngLen != 0:
		return nil, bad("sampler state length is %d but the sampler section is absent", rngLen)
	case flags&flagRNG != 0 && (rngLen < 1 || rngLen > maxRNGStateLen):
		return nil, bad("sampler state length %d is outside [1, %d]", rngLen, maxRNGStateLen)
	}
	var nTrain, nVal int64
	if version >= 2 {
		nTrain, nVal = int64(binary.LittleEndian.Uint32(hdr[52:])), int64(binary.LittleEndian.Uint32(hdr[56:]))
	}
	// Bounded by the step before any section is read, so that the counts
	// cannot announce more points than a run of that length records.
	switch {
	case flags&flagHistory == 0 && (nTrain != 0 || nVal != 0):
		return nil, bad("loss history counts are %d and %d but the loss history section is absent", nTrain, nVal)
	case nTrain > max(step, 0):
		return nil, bad("%d training-loss points for %d steps", nTrain, step)
	case nVal > max(step, 0)+1:
		return nil, bad("%d validation-loss points for %d steps (at most one per step, and one before the first)", nVal, step)
	case lossPointSize*(nTrain+nVal) > math.MaxInt:
		return nil, bad("%d loss points do not fit in memory on this platform", nTrain+nVal)
	}

	P := cfg.numParams()
	cr.size = int64(hdrSize) + 4*int64(cfg.VocabSize) + int64(rngLen) + 8*int64(P) + checksumSize + lossPointSize*(nTrain+nVal)
	if flags&flagTrain != 0 {
		cr.size += trainSize
	}
	if flags&flagOptimizer != 0 {
		cr.size += optimizerSize + 16*int64(P)
	}
	if flags&flagCorpus != 0 {
		cr.size += corpusSumSize
	}

	vb, err := cr.readSection("vocabulary", 4*cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	chars := make([]rune, cfg.VocabSize)
	for i := range chars {
		chars[i] = rune(int32(binary.LittleEndian.Uint32(vb[4*i:])))
	}
	var tc *TrainConfig
	if flags&flagTrain != 0 {
		b, err := cr.readSection("training config", trainSize)
		if err != nil {
			return nil, err
		}
		f := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
		cosine := f(5)
		if cosine > 1 {
			return nil, bad("training config: cosine-decay field is %d, want 0 or 1", cosine)
		}
		tc = &TrainConfig{
			Steps: toInt(f(0)), BatchSize: toInt(f(1)), LR: math.Float64frombits(f(2)), Seed: f(3),
			WarmupSteps: toInt(f(4)), CosineDecay: cosine == 1, MinLR: math.Float64frombits(f(6)),
			GradClip: math.Float64frombits(f(7)), WeightDecay: math.Float64frombits(f(8)),
			EvalEvery: toInt(f(9)), EvalBatches: toInt(f(10)),
		}
	}
	var (
		adamCfg  AdamConfig
		adamStep int
	)
	if flags&flagOptimizer != 0 {
		b, err := cr.readSection("optimizer config", optimizerSize)
		if err != nil {
			return nil, err
		}
		f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])) }
		adamCfg = AdamConfig{Beta1: f(0), Beta2: f(1), Eps: f(2), WeightDecay: f(3)}
		adamStep = toInt(binary.LittleEndian.Uint64(b[32:]))
	}
	var rngState []byte
	if flags&flagRNG != 0 {
		if rngState, err = cr.readSection("sampler state", rngLen); err != nil {
			return nil, err
		}
	}
	var corpusSum []byte
	if flags&flagCorpus != 0 {
		if corpusSum, err = cr.readSection("corpus fingerprint", corpusSumSize); err != nil {
			return nil, err
		}
	}
	params, err := cr.floats("parameters", P)
	if err != nil {
		return nil, err
	}
	var adamM, adamV []float64
	if flags&flagOptimizer != 0 {
		if adamM, err = cr.floats("optimizer first moments", P); err != nil {
			return nil, err
		}
		if adamV, err = cr.floats("optimizer second moments", P); err != nil {
			return nil, err
		}
	}
	var trainLoss, valLoss []LossPoint
	if flags&flagHistory != 0 {
		// Read as float64 pairs; a step's bits come back exactly.
		xs, err := cr.floats("loss history", 2*int(nTrain+nVal))
		if err != nil {
			return nil, err
		}
		points := make([]LossPoint, nTrain+nVal)
		for i := range points {
			points[i] = LossPoint{toInt(math.Float64bits(xs[2*i])), xs[2*i+1]}
		}
		trainLoss, valLoss = points[:nTrain:nTrain], points[nTrain:]
	}
	want := cr.sum.Sum(nil)
	got, err := cr.readSection("checksum", checksumSize)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		return nil, bad("checksum mismatch: stored SHA-256 %x, computed %x over the preceding %d bytes", got, want, cr.off-checksumSize)
	}

	// The bytes are as written; build the value for check to judge.
	vocab, err := VocabFromChars(chars)
	if err != nil {
		return nil, bad("vocabulary: %w", err)
	}
	m, err := newModel(cfg, params)
	if err != nil {
		return nil, bad("model: %w", err)
	}
	c := &Checkpoint{Model: m, Vocab: vocab, Step: toInt(uint64(step)), Train: tc, rngState: rngState,
		CorpusSHA256: corpusSum, TrainLoss: trainLoss, ValLoss: valLoss}
	if flags&flagOptimizer != 0 {
		c.Opt, err = NewAdam(adamCfg, m)
		if err != nil {
			return nil, bad("optimizer config: %w", err)
		}
		c.Opt.M, c.Opt.V, c.Opt.Step = adamM, adamV, adamStep
	}
	return c, nil
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

// check reports the first reason c could not be written and read back, as
// an ErrBadCheckpoint error naming the field.
func (c *Checkpoint) check() error {
	if c.Model == nil {
		return bad("no model")
	}
	cfg := c.Model.Config
	if err := cfg.Validate(); err != nil {
		return bad("model config: %w", err)
	}
	P := cfg.numParams()
	if len(c.Model.Params) != P {
		return bad("model has %d parameters, its config implies %d", len(c.Model.Params), P)
	}
	if c.Vocab == nil {
		return bad("no vocabulary")
	}
	if c.Vocab.Size() != cfg.VocabSize {
		return bad("vocabulary has %d characters but the config's vocab size is %d", c.Vocab.Size(), cfg.VocabSize)
	}
	if c.Step < 0 {
		return bad("step %d is negative", c.Step)
	}
	full, none := c.Train != nil && c.Opt != nil && c.rngState != nil, c.Train == nil && c.Opt == nil && c.rngState == nil
	if !full && !none {
		return bad("a checkpoint holds the training config, optimizer and sampler state all together or none of them")
	}
	if !full && (c.CorpusSHA256 != nil || c.TrainLoss != nil || c.ValLoss != nil) {
		return bad("only a full checkpoint holds a corpus fingerprint or a loss history")
	}
	if c.CorpusSHA256 != nil && len(c.CorpusSHA256) != corpusSumSize {
		return bad("corpus fingerprint is %d bytes, want %d (SHA-256)", len(c.CorpusSHA256), corpusSumSize)
	}
	if err := checkHistory("training", c.TrainLoss, 1, c.Step); err != nil {
		return err
	}
	if err := checkHistory("validation", c.ValLoss, 0, c.Step); err != nil {
		return err
	}
	if c.Opt != nil && c.Opt.Step != c.Step {
		return bad("optimizer step %d differs from the training step %d", c.Opt.Step, c.Step)
	}
	if c.Train != nil {
		if err := c.Train.Validate(); err != nil {
			return bad("training config: %w", err)
		}
	}
	if err := checkFinite(cfg, c.Model.Params, "parameter", false); err != nil {
		return err
	}
	if o := c.Opt; o != nil {
		if err := o.Config.Validate(); err != nil {
			return bad("optimizer config: %w", err)
		}
		if o.Step < 0 {
			return bad("optimizer step %d is negative", o.Step)
		}
		if len(o.M) != P || len(o.V) != P {
			return bad("optimizer moments have lengths %d and %d, the model has %d parameters", len(o.M), len(o.V), P)
		}
		if err := checkFinite(cfg, o.M, "optimizer first moment", false); err != nil {
			return err
		}
		if err := checkFinite(cfg, o.V, "optimizer second moment", true); err != nil {
			return err
		}
	}
	if c.rngState != nil {
		if len(c.rngState) < 1 || len(c.rngState) > maxRNGStateLen {
			return bad("sampler state length %d is outside [1, %d]", len(c.rngState), maxRNGStateLen)
		}
		if err := new(rand.PCG).UnmarshalBinary(c.rngState); err != nil {
			return bad("sampler state: %w", err)
		}
	}
	return nil
}

// checkHistory reports the first point of a loss curve that a run of
// step steps cannot have recorded: steps strictly increasing within
// [first, step], losses finite and not negative (cross-entropy).
func checkHistory(what string, curve []LossPoint, first, step int) error {
	if int64(len(curve)) > math.MaxUint32 {
		return bad("%d %s-loss points do not fit the format", len(curve), what)
	}
	prev := first - 1
	for i, p := range curve {
		switch {
		case p.Step <= prev || p.Step > step:
			return bad("%s-loss point %d is at step %d, want a step in [%d, %d] after the previous point's", what, i, p.Step, prev+1, step)
		case math.IsNaN(p.Loss) || math.IsInf(p.Loss, 0) || p.Loss < 0:
			return bad("%s-loss point %d (step %d) is %v, want a finite loss ≥ 0", what, i, p.Step, p.Loss)
		}
		prev = p.Step
	}
	return nil
}

// checkFinite reports the first non-finite value of slab (laid out like
// the parameters of cfg), or with nonNegative the first negative one,
// naming the tensor and the element.
func checkFinite(cfg Config, slab []float64, what string, nonNegative bool) error {
	off := 0
	for _, t := range cfg.layout() {
		n := t.size()
		for i, x := range slab[off : off+n] {
			if math.IsNaN(x) || math.IsInf(x, 0) || (nonNegative && x < 0) {
				return bad("%s %s%v (element %d of the tensor, %d of the slab) is %v", what, t.name, tensorIndex(t.shape, i), i, off+i, x)
			}
		}
		off += n
	}
	return nil
}

// tensorIndex turns a row-major flat index into per-dimension indices.
func tensorIndex(shape []int, i int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

// SaveCheckpoint writes c to path atomically, replacing the file there
// (see SaveFile): at every moment path holds the old checkpoint (or
// nothing) or the complete new one. A failure removes the temporary file;
// a save killed midway leaves it (.NAME.tmp-minigpt), and the next save of
// path removes it. Anything at path that is not a regular file is refused,
// not replaced; a replaced file keeps its permission bits.
func SaveCheckpoint(path string, c *Checkpoint) error {
	return saveCheckpoint(path, true, c, WriteCheckpoint)
}

// SaveNewCheckpoint is SaveCheckpoint that also refuses to replace an
// existing file (fs.ErrExist), even one that appears while it writes.
func SaveNewCheckpoint(path string, c *Checkpoint) error {
	return saveCheckpoint(path, false, c, WriteCheckpoint)
}

// saveCheckpoint is SaveCheckpoint with the writer as a parameter, so that
// tests can make it fail midway.
func saveCheckpoint(path string, replace bool, c *Checkpoint, write func(io.Writer, *Checkpoint) error) error {
	if err := SaveFile(path, replace, func(w io.Writer) error { return write(w, c) }); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint reads the checkpoint file at path (see ReadCheckpoint),
// also refusing bytes after its checksum. path must be a regular file: a
// named pipe, device or directory is refused at once (wrapping
// ErrNotRegularFile), without blocking on it.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := openRegular(path)
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
