// checkpoint_config_test.go tests that a full checkpoint fixes every field of the training config, as read back and as a resumed run reports it.

package minigpt

import (
	"bytes"
	"testing"
)

// Every TrainConfig field, each at a value other than its default and
// other than zero (so that a field the reader drops or defaults shows),
// comes back from a full checkpoint in Checkpoint.Train and
// CheckpointInfo.Train, and a trainer resumed from it reports the same
// config. The weight decay is the case to watch: the resumed optimizer
// has its own copy, so training goes on exactly even if the config loses
// it, and only the reported config would say 0.
func TestCheckpointFixesEveryTrainConfigField(t *testing.T) {
	edit := func(c *TrainConfig) {
		*c = TrainConfig{Steps: 9, BatchSize: 5, LR: 2e-3, Seed: 7, WarmupSteps: 2, CosineDecay: true, MinLR: 1e-4,
			GradClip: 0.75, WeightDecay: 0.05, EvalEvery: 3, EvalBatches: 3}
	}
	var want TrainConfig
	edit(&want)
	if def := DefaultTrainConfig(); def.Steps == want.Steps || def.BatchSize == want.BatchSize || def.LR == want.LR ||
		def.Seed == want.Seed || def.WarmupSteps == want.WarmupSteps || def.CosineDecay == want.CosineDecay ||
		def.MinLR == want.MinLR || def.GradClip == want.GradClip || def.WeightDecay == want.WeightDecay ||
		def.EvalEvery == want.EvalEvery || def.EvalBatches == want.EvalBatches {
		t.Fatalf("a field of %+v is at its default %+v: the test cannot see it dropped", want, def)
	}
	tr := ckptTrainer(t, ckptResumeConfig(), 2, edit)
	if tr.Config() != want {
		t.Fatalf("the trainer's config is %+v, want %+v", tr.Config(), want)
	}
	data := encodeCheckpoint(t, tr.Checkpoint())
	c, err := ReadCheckpoint(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Train != want {
		t.Errorf("checkpoint's training config %+v, want %+v", *c.Train, want)
	}
	if got := resumeOnLanternBay(t, c).Config(); got != want {
		t.Errorf("resumed trainer's config %+v, want %+v", got, want)
	}
}
