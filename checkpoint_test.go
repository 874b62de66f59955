package minigpt

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// ckptResumeConfig is the model of the resume tests: Lantern Bay's 24
// characters, block 16, width 32, 4 heads, 2 layers.
func ckptResumeConfig() Config {
	return Config{VocabSize: 24, BlockSize: 16, EmbedDim: 32, Heads: 4, Layers: 2}
}

// ckptTrainer returns a trainer of cfg on Lantern Bay, batch 8, with edit
// applied to its training config, after `steps` steps.
func ckptTrainer(t testing.TB, cfg Config, steps int, edit func(*TrainConfig)) *Trainer {
	t.Helper()
	d, err := NewDataset(LanternBay, nil, cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.BatchSize, tc.Steps, tc.EvalBatches = 8, 12, 2
	if edit != nil {
		edit(&tc)
	}
	m, err := NewModel(cfg, tc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	for range steps {
		if _, err := tr.trainStep(); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func TestWriteCheckpointRefusesWhatCannotBeRead(t *testing.T) {
	tr := ckptTrainer(t, ckptFuzzConfig(false), 1, nil)
	other, err := vocabFromChars([]rune("abc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Checkpoint)
		want string
	}{
		{"no model", func(c *Checkpoint) { c.Model = nil }, "no model"},
		{"no vocabulary", func(c *Checkpoint) { c.Vocab = nil }, "no vocabulary"},
		{"vocabulary size", func(c *Checkpoint) { c.Vocab = other }, "vocabulary has 3 characters but the config's vocab size is 24"},
		{"negative step", func(c *Checkpoint) { c.Step = -2 }, "step -2 is negative"},
		{"NaN param", func(c *Checkpoint) { c.Model.Params()[0] = math.NaN() }, "parameter token_embedding[0 0]"},
		{"short moments", func(c *Checkpoint) { c.state.v = c.state.v[:1] }, "optimizer moments have lengths"},
		{"bad train config", func(c *Checkpoint) { c.Train.LR = 0 }, "learning rate 0"},
		{"optimizer without config", func(c *Checkpoint) { c.Train = nil }, "all together or none"},
		{"config without optimizer", func(c *Checkpoint) { c.state = nil }, "all together or none"},
		{"steps disagree", func(c *Checkpoint) { c.Step = 1 << 40 }, "optimizer step 1 differs from the training step 1099511627776"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tr.Checkpoint()
			tc.edit(c)
			err := WriteCheckpoint(io.Discard, c)
			if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteCheckpoint = %v, want ErrBadCheckpoint mentioning %q", err, tc.want)
			}
		})
	}
}
