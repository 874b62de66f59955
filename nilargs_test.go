package minigpt

// Tests that nil arguments are errors naming what is missing, not nil
// dereferences deep in a call.

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNilArgumentsAreErrors(t *testing.T) {
	d, err := NewDataset(LanternBay, nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(Config{VocabSize: d.Vocab.Size(), BlockSize: 16, EmbedDim: 8, Heads: 1, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var nilModel *Model
	var nilCtx context.Context // the caller's mistake this test makes on purpose
	opts := GenerateOptions{MaxNewTokens: 2, Greedy: true}
	ctx := context.Background()
	full := microTrainer(t, nil).Checkpoint()
	for _, c := range []struct {
		name string
		want error
		call func() error
	}{
		{"nil model: Complete", ErrBadOption, func() error { _, err := nilModel.Complete(ctx, d.Vocab, "a", opts); return err }},
		{"nil context: Complete", ErrBadOption, func() error { _, err := m.Complete(nilCtx, d.Vocab, "a", opts); return err }},
		{"nil model: Generate", ErrBadOption, func() error { _, err := nilModel.Generate(ctx, []int{1}, opts); return err }},
		{"nil context: Generate", ErrBadOption, func() error { _, err := m.Generate(nilCtx, []int{1}, opts); return err }},
		{"nil model: Score", ErrBadOption, func() error { _, err := nilModel.Score(ctx, []int{1, 2}, 0, 0); return err }},
		{"nil context: Score", ErrBadOption, func() error { _, err := m.Score(nilCtx, []int{1, 2}, 0, 0); return err }},
		{"nil model: Logits", ErrBadOption, func() error { _, err := nilModel.Logits([]int{1}, 1, 1); return err }},
		{"nil model: Gradients", ErrBadOption, func() error { _, _, err := nilModel.Gradients([]int{1}, []int{2}, 1, 1); return err }},
		{"nil model: NewBatch", ErrBadOption, func() error { _, err := NewBatch(nil, 2); return err }},
		{"nil context: Batch.Complete", ErrBadOption, func() error {
			b, err := NewBatch(m, 2)
			if err != nil {
				return err
			}
			defer b.Close()
			_, err = b.Complete(nilCtx, d.Vocab, "a", opts)
			return err
		}},
		{"nil model: NewTrainer", ErrBadConfig, func() error { _, err := NewTrainer(nil, d, DefaultTrainConfig()); return err }},
		{"nil dataset: NewTrainer", ErrBadConfig, func() error { _, err := NewTrainer(m, nil, DefaultTrainConfig()); return err }},
		{"nil checkpoint: ResumeTrainer", ErrBadCheckpoint, func() error { _, err := ResumeTrainer(nil, d); return err }},
		{"nil dataset: ResumeTrainer", ErrBadConfig, func() error { _, err := ResumeTrainer(full, nil); return err }},
		{"nil context: Run", ErrBadConfig, func() error {
			tr, err := NewTrainer(m.Clone(), d, DefaultTrainConfig())
			if err != nil {
				return err
			}
			defer tr.Close()
			return tr.Run(nilCtx, nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			err := c.call()
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "nil") {
				t.Fatalf("error %v, want one wrapping %v that says what is nil", err, c.want)
			}
		})
	}
}
