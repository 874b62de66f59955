package minigpt

// This file holds checkpoints: the Checkpoint value, how a Trainer makes
// one and is resumed from one, the byte layout's constants, and the
// checks a checkpoint must pass to be written or read back. The layout is
// docs/checkpoint-format.md; checkpoint_write.go writes it (and saves
// files), checkpoint_read.go reads it, checkpoint_load.go loads files and
// the embedded model; safetensors*.go holds the other format.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"example.org/minigpt/internal/safefile"
)

var (
	// ErrBadCheckpoint is returned (wrapped) for bytes that are not a
	// valid checkpoint of either format, and for a Checkpoint that could
	// not be read back if written; the message names the field at fault.
	ErrBadCheckpoint = errors.New("bad checkpoint")
	// ErrNotRegularFile is wrapped by SaveCheckpoint and LoadCheckpoint for
	// a path that is not a regular file (a directory, symbolic link,
	// device, named pipe or socket): never replaced, never read.
	ErrNotRegularFile = safefile.ErrNotRegular
)

// The byte layout; docs/checkpoint-format.md is its description.
const (
	checkpointMagic   = "\x89GPT\r\n\x1a\n"
	checkpointVersion = 2 // what WriteCheckpoint writes for a character vocabulary; 1 is still read
	versionTokenizer  = 3 // what it writes for a BPE one: version 2 and flagTokenizer

	flagTrain     = 1 << 0 // the training config section is present
	flagOptimizer = 1 << 1 // the optimizer sections are present
	flagRNG       = 1 << 2 // the sampler state section is present
	flagCorpus    = 1 << 3 // the corpus fingerprint section is present (version 2)
	flagHistory   = 1 << 4 // the loss history section is present (version 2)
	flagTokenizer = 1 << 5 // the vocabulary section is a BPE tokenizer (version 3)
	flagsFull     = flagTrain | flagOptimizer | flagRNG
	knownFlagsV1  = flagsFull
	knownFlagsV2  = flagsFull | flagCorpus | flagHistory
	knownFlags    = knownFlagsV2 | flagTokenizer

	headerSizeV1   = 56 // through the header CRC
	headerSize     = 64 // version 2: the loss-point counts before the CRC
	corpusSumSize  = sha256.Size
	lossPointSize  = 16 // an i64 step and an f64 loss
	trainSize      = 11 * 8
	optimizerSize  = 5 * 8
	maxRNGStateLen = 64 // a PCG state is 20 bytes
	checksumSize   = sha256.Size

	// ioChunk is how many bytes the reader and writer handle at a time;
	// the reader allocates for a section only as its bytes arrive.
	ioChunk = 64 << 10
)

// bad returns an ErrBadCheckpoint error.
func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadCheckpoint}, a...)...)
}

// Checkpoint is a model with its vocabulary and, for a full checkpoint,
// everything a Trainer needs to continue exactly where it stopped.
type Checkpoint struct {
	Model *Model
	Vocab *Vocab // its size is Model.Config().VocabSize
	Step  int    // training steps completed
	// Train is the run's configuration: set in a full checkpoint, which
	// ResumeTrainer continues, nil in a weights-only one. Its Seed also
	// regenerates the fixed validation batches on resume; raise its Steps
	// to extend the run.
	Train *TrainConfig
	// CorpusSHA256 is the SHA-256 of the text the run trained on (as given
	// to NewDataset), which ResumeTrainer checks; nil when unknown (in a
	// weights-only checkpoint, or a full one of format version 1). Clear
	// it to resume on another text.
	CorpusSHA256 []byte

	// state is the optimizer, sampler and loss history; nil in a
	// weights-only checkpoint.
	state *trainState
}

// WeightsOnly returns c without the training state (sharing its model):
// enough to generate or to fine-tune, a third of the size.
func (c *Checkpoint) WeightsOnly() *Checkpoint {
	return &Checkpoint{Model: c.Model, Vocab: c.Vocab, Step: c.Step}
}

// Checkpoint returns a full checkpoint of the trainer's state, everything
// ResumeTrainer needs to continue bit for bit (the model, its vocabulary,
// the training config, the optimizer and sampler, the text's fingerprint,
// the loss history), sharing nothing with the trainer.
func (t *Trainer) Checkpoint() *Checkpoint {
	tc := t.config
	sum := t.corpusSHA256()
	return &Checkpoint{Model: t.model.Clone(), Vocab: t.data.Vocab, Step: t.step, Train: &tc, CorpusSHA256: sum[:], state: t.state()}
}

// ResumeTrainer returns a trainer that continues the full checkpoint c on
// d (a copy of c's model, optimizer, sampler and loss history) exactly as
// the run that wrote it would have continued. d must be encoded with c's
// vocabulary and, if c records the fingerprint of its text, be that text:
// otherwise the error wraps ErrDatasetMismatch. To extend the run, raise
// c.Train.Steps first. To fine-tune instead, pass c.Model to NewTrainer.
func ResumeTrainer(c *Checkpoint, d *Dataset) (*Trainer, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("resume: %w: no checkpoint (nil)", ErrBadCheckpoint)
	case d == nil:
		return nil, fmt.Errorf("resume: %w: no dataset (nil)", ErrBadConfig)
	}
	if c.Train == nil || c.state == nil {
		return nil, fmt.Errorf("resume: %w: the checkpoint is weights-only; resuming needs the optimizer, training config and sampler state of a full checkpoint (to fine-tune from it, use NewTrainer)", ErrBadCheckpoint)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if !d.Vocab.equal(c.Vocab) {
		return nil, fmt.Errorf("resume: %w: the dataset's vocabulary (%d characters) differs from the checkpoint's (%d); encode the corpus with the checkpoint's vocabulary", ErrDatasetMismatch, d.Vocab.Size(), c.Vocab.Size())
	}
	if c.CorpusSHA256 != nil {
		if sum := d.textSHA256(); !bytes.Equal(sum[:], c.CorpusSHA256) {
			return nil, fmt.Errorf("resume: %w: the dataset's text has SHA-256 %x…, the checkpoint was trained on one with %x…", ErrDatasetMismatch, sum[:8], c.CorpusSHA256[:8])
		}
	}
	t, err := NewTrainer(c.Model.Clone(), d, *c.Train)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if err := t.restore(c.state, c.Step); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return t, nil
}

// check reports the first reason c could not be written and read back, as
// an ErrBadCheckpoint error naming the field.
func (c *Checkpoint) check() error {
	if c.Model == nil {
		return bad("no model")
	}
	cfg := c.Model.cfg
	if err := cfg.Validate(); err != nil {
		return bad("model config: %w", err)
	}
	P := cfg.numParams()
	if len(c.Model.slab) != P {
		return bad("model has %d parameters, its config implies %d", len(c.Model.slab), P)
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
	s := c.state
	if (c.Train == nil) != (s == nil) {
		return bad("a checkpoint holds the training config, optimizer and sampler state all together or none of them")
	}
	if s == nil {
		if c.CorpusSHA256 != nil {
			return bad("only a full checkpoint holds a corpus fingerprint")
		}
		return checkFinite(cfg, c.Model.slab, "parameter", false)
	}
	if c.CorpusSHA256 != nil && len(c.CorpusSHA256) != corpusSumSize {
		return bad("corpus fingerprint is %d bytes, want %d (SHA-256)", len(c.CorpusSHA256), corpusSumSize)
	}
	if err := checkHistory("training", s.trainLoss, 1, c.Step); err != nil {
		return err
	}
	if err := checkHistory("validation", s.valLoss, 0, c.Step); err != nil {
		return err
	}
	if s.adamStep != c.Step {
		return bad("optimizer step %d differs from the training step %d", s.adamStep, c.Step)
	}
	if err := c.Train.Validate(); err != nil {
		return bad("training config: %w", err)
	}
	if err := checkFinite(cfg, c.Model.slab, "parameter", false); err != nil {
		return err
	}
	if err := s.adam.validate(); err != nil {
		return bad("optimizer config: %w", err)
	}
	if len(s.m) != P || len(s.v) != P {
		return bad("optimizer moments have lengths %d and %d, the model has %d parameters", len(s.m), len(s.v), P)
	}
	if err := checkFinite(cfg, s.m, "optimizer first moment", false); err != nil {
		return err
	}
	if err := checkFinite(cfg, s.v, "optimizer second moment", true); err != nil {
		return err
	}
	if len(s.sampler) < 1 || len(s.sampler) > maxRNGStateLen {
		return bad("sampler state length %d is outside [1, %d]", len(s.sampler), maxRNGStateLen)
	}
	if err := new(rand.PCG).UnmarshalBinary(s.sampler); err != nil {
		return bad("sampler state: %w", err)
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
