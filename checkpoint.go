package minigpt

import (
	"errors"
	"math"
	"math/rand/v2"
)

// ErrBadCheckpoint is returned (wrapped) for bytes that are not a valid
// checkpoint, and for a Checkpoint value that could not be read back if it
// were written. The message names the field or section at fault.
var ErrBadCheckpoint = errors.New("bad checkpoint")

// Checkpoint is a model with its vocabulary and, for a full checkpoint,
// everything a Trainer needs to continue exactly where it stopped. The
// byte layout is described in docs/checkpoint-format.md.
type Checkpoint struct {
	Model *Model
	Vocab *Vocab // its size is Model.Config.VocabSize
	Step  int    // training steps completed
	// Train is the run's configuration; nil in a weights-only checkpoint.
	// Its Seed also regenerates the fixed validation batches on resume.
	Train *TrainConfig
	// Opt is the optimizer state; nil in a weights-only checkpoint.
	Opt *Adam
	// rngState is the training batch sampler's PCG state (from
	// MarshalBinary); nil in a weights-only checkpoint.
	rngState []byte
	// CorpusSHA256 is the fingerprint of the text the run trained on
	// (Dataset.SHA256), which ResumeTrainer compares with the dataset it
	// is given. nil when unknown: in a weights-only checkpoint, and in a
	// full one of format version 1. Clear it to resume on another text.
	CorpusSHA256 []byte
	// TrainLoss and ValLoss are the run's loss history as Trainer.Run
	// recorded it (see Trainer.LossHistory), carried on by ResumeTrainer;
	// nil in a weights-only checkpoint and in one of format version 1.
	TrainLoss, ValLoss []LossPoint
}

// LossPoint is one point of a loss curve: the loss after Step steps.
type LossPoint struct {
	Step int     // the step that measured it, counted from 1 (as Progress.Step)
	Loss float64 // that step's batch loss, or the validation loss after it
}

// ErrCorpusMismatch is returned (wrapped) by ResumeTrainer for a dataset
// whose text is not the one the checkpoint was trained on.
var ErrCorpusMismatch = errors.New("corpus differs from the checkpoint's")

// Full reports whether c holds the complete training state, so that
// ResumeTrainer can continue from it.
func (c *Checkpoint) Full() bool {
	return c.Train != nil && c.Opt != nil && c.rngState != nil
}

// CheckpointInfo is what a checkpoint says about itself before its
// weights: enough to describe a model file, or to check that it fits a
// corpus, without loading it (ReadCheckpointInfo, LoadCheckpointInfo).
type CheckpointInfo struct {
	Config Config // the model's shape
	Vocab  *Vocab // its vocabulary (Config.VocabSize characters)
	Step   int    // training steps completed
	Full   bool   // a full checkpoint (resumable); false: weights-only
	// Train is the run's configuration; nil in a weights-only checkpoint.
	Train *TrainConfig
	// CorpusSHA256 is the fingerprint of the training text, if recorded
	// (see Checkpoint.CorpusSHA256).
	CorpusSHA256 []byte
	Bytes        int64 // the checkpoint's size, as its header implies

	chars    []rune      // the vocabulary section, until finishInfo checks it
	adam     *AdamConfig // the optimizer's constants; nil when weights-only
	adamStep int
	rngState []byte
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
	if c.Opt != nil && c.Opt.step != c.Step {
		return bad("optimizer step %d differs from the training step %d", c.Opt.step, c.Step)
	}
	if c.Train != nil {
		if err := c.Train.Validate(); err != nil {
			return bad("training config: %w", err)
		}
	}
	if err := checkFinite(cfg, c.Model.slab, "parameter", false); err != nil {
		return err
	}
	if o := c.Opt; o != nil {
		if err := o.config.Validate(); err != nil {
			return bad("optimizer config: %w", err)
		}
		if o.step < 0 {
			return bad("optimizer step %d is negative", o.step)
		}
		if len(o.m) != P || len(o.v) != P {
			return bad("optimizer moments have lengths %d and %d, the model has %d parameters", len(o.m), len(o.v), P)
		}
		if err := checkFinite(cfg, o.m, "optimizer first moment", false); err != nil {
			return err
		}
		if err := checkFinite(cfg, o.v, "optimizer second moment", true); err != nil {
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
