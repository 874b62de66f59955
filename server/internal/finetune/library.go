package finetune

// This file is the only one in the package that calls the minigpt
// library: the built-in text, the presets, a model's shape and
// vocabulary, a job's dataset and training configuration, and a job's
// run with the library's Trainer (its steps, samples and checkpoint).

import (
	"context"
	"errors"
	"fmt"
	"io"

	"example.org/minigpt"
	"example.org/minigpt/internal/safefile"
)

// builtinText is the built-in Lantern Bay text, file-lanternbay.
var builtinText = minigpt.LanternBay

// presets are the models a job trains from scratch, by the name a job's
// "model" gives: the shape for the training text's vocabulary. "scratch"
// is cmd/train's default model (ConfigFor the text: block 32, width 64,
// 4 heads, 2 layers), so a job with it is the run cmd/train makes with
// the same -corpus, -seed, -steps, -batch and -lr.
var presets = map[string]func(*minigpt.Vocab) minigpt.Config{
	"scratch": minigpt.ConfigFor,
}

// presetNames lists the presets for messages.
const presetNames = `"scratch"`

// checkMaxSteps refuses a MaxSteps no job could be trained with: the
// library's own bound on a run's steps.
func checkMaxSteps(n int) error {
	tc := minigpt.DefaultTrainConfig()
	tc.Steps = n
	return tc.Validate()
}

// baseModel is a served model a job fine-tunes.
type baseModel struct {
	name  string
	model *minigpt.Model
	vocab *minigpt.Vocab
}

// shape is what a job reads of a model: its configuration and its size.
type shape struct {
	config minigpt.Config
	params int
}

// presetShape returns text's vocabulary and the shape of preset for it:
// vocabErr if the text has no vocabulary, shapeErr if no model of it can
// be made.
func presetShape(preset func(*minigpt.Vocab) minigpt.Config, text string) (v *minigpt.Vocab, s shape, vocabErr, shapeErr error) {
	v, vocabErr = minigpt.NewVocab(text)
	if vocabErr != nil {
		return nil, shape{}, vocabErr, nil
	}
	c := preset(v)
	if err := c.Validate(); err != nil {
		return v, shape{}, nil, err
	}
	return v, shape{c, c.NumParams()}, nil, nil
}

// modelShape is m's shape.
func modelShape(m *minigpt.Model) shape { return shape{m.Config(), m.Config().NumParams()} }

// vocabChars is v's characters, by token id.
func vocabChars(v *minigpt.Vocab) []rune { return v.Chars() }

// vocabSize is the number of v's characters.
func vocabSize(v *minigpt.Vocab) int { return v.Size() }

// newDataset encodes text with v, split as cmd/train splits it, in
// windows of blockSize.
func newDataset(text string, v *minigpt.Vocab, blockSize int) (*minigpt.Dataset, error) {
	return minigpt.NewDataset(text, v, blockSize)
}

// defaultTrainConfig is cmd/train's training configuration.
func defaultTrainConfig() minigpt.TrainConfig { return minigpt.DefaultTrainConfig() }

// checkTrainConfig returns what the library refuses of tc.
func checkTrainConfig(tc minigpt.TrainConfig) error { return tc.Validate() }

// training is a job's run: the model it trains and the library's Trainer.
type training struct {
	tr   *minigpt.Trainer
	data *minigpt.Dataset
}

// newTraining makes j's model (from the seed for a preset, a copy of the base
// model otherwise: the served one keeps serving as it was) and its
// Trainer.
func newTraining(j *job, data *minigpt.Dataset) (*training, error) {
	var m *minigpt.Model
	if j.base == nil {
		var err error
		if m, err = minigpt.NewModel(j.shape.config, j.seed); err != nil {
			return nil, fmt.Errorf("the model cannot be made: %w", err)
		}
	} else {
		m = j.base.model.Clone()
	}
	tr, err := minigpt.NewTrainer(m, data, j.tc)
	if err != nil {
		return nil, err
	}
	return &training{tr, data}, nil
}

// steps runs the training, calling each after every step.
func (r *training) steps(ctx context.Context, each func(minigpt.Progress)) error {
	return r.tr.Run(ctx, each)
}

// diverged reports whether err is the library's non-finite loss.
func diverged(err error) bool { return errors.Is(err, minigpt.ErrNonFinite) }

// sample continues prompt by n characters from the model as it is, at
// temperature 0.8 with seed.
func (r *training) sample(ctx context.Context, prompt string, n int, seed uint64) (string, error) {
	res, err := r.tr.Model().Complete(ctx, r.data.Vocab, prompt, minigpt.GenerateOptions{MaxNewTokens: n, Temperature: 0.8, Seed: seed})
	if err != nil {
		return "", err
	}
	return res[0].Text, nil
}

// close frees the Trainer's buffers: from then on the model is only read.
func (r *training) close() { r.tr.Close() }

// save writes the trained model and its training state as a full
// checkpoint at path, never replacing a file (fs.ErrExist if one is
// there).
func (r *training) save(path string) error {
	c := r.tr.Checkpoint()
	return safefile.Save(path, false, func(w io.Writer) error { return minigpt.WriteCheckpoint(w, c) })
}

// model is the trained model and its vocabulary.
func (r *training) model() (*minigpt.Model, *minigpt.Vocab) { return r.tr.Model(), r.data.Vocab }
