package minigpt

import (
	"context"
	"sync"
	"testing"
)

var trained struct {
	once  sync.Once
	model *Model
	vocab *Vocab
	err   error
	final float64 // mean training loss over the last 50 steps
	first float64 // loss of step 0
	val   float64
}

// trainedLanternBay returns the model of the default run (1200 steps on
// Lantern Bay, seed 42), trained once per test binary.
func trainedLanternBay(t testing.TB) (*Model, *Vocab) {
	t.Helper()
	if testing.Short() {
		t.Skip("the 1200-step default run is skipped in -short mode")
	}
	trained.once.Do(func() {
		d, err := NewDataset(LanternBay, nil, defaultConfig().BlockSize)
		if err != nil {
			trained.err = err
			return
		}
		tc := DefaultTrainConfig()
		m, err := NewModel(defaultConfig(), tc.Seed)
		if err != nil {
			trained.err = err
			return
		}
		tr, err := NewTrainer(m, d, tc)
		if err != nil {
			trained.err = err
			return
		}
		var losses []float64
		trained.err = tr.Run(context.Background(), func(p Progress) {
			losses = append(losses, p.Loss)
			if p.Step == tc.Steps {
				trained.val = p.ValLoss
			}
		})
		trained.first = losses[0]
		for _, l := range losses[len(losses)-50:] {
			trained.final += l / 50
		}
		trained.model, trained.vocab = m, d.Vocab
	})
	if trained.err != nil {
		t.Fatal(trained.err)
	}
	return trained.model, trained.vocab
}
