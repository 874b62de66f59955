package minigpt

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// tinyTrainer returns an untrained trainer of trainTiny's configs (seed
// 42, batch 8, block 16) and its dataset.
func tinyTrainer(t *testing.T, steps int) *Trainer {
	t.Helper()
	cfg := Config{VocabSize: 24, BlockSize: 16, EmbedDim: 32, Heads: 4, Layers: 2}
	d, err := NewDataset(LanternBay, nil, cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, 42)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.Seed = steps, 8, 42
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestReadersDuringTrainingChangeNothing is the careless user's case:
// while Run trains, other goroutines call Loss and Logits with the
// trainer's own batch shape, Gradients, and generate. Before the Trainer
// held its model, this panicked inside a worker or finished with other
// weights. Every call must succeed, the weights must be those of the same
// run left alone (trained here, so that a change of the arithmetic, which
// the pinned hashes report, does not fail this test), and every Logits
// call must have seen
// the parameters of a whole step, never a half-updated slab: its result
// must be the logits of the parameters after one of the steps.
func TestReadersDuringTrainingChangeNothing(t *testing.T) {
	alone := tinyTrainer(t, 20)
	if err := alone.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	tr := tinyTrainer(t, 20)
	m := tr.Model()
	vocab := tr.data.Vocab
	B, T := tr.Config().BatchSize, m.Config().BlockSize
	idx := make([]int, B*T)
	for i := range idx {
		idx[i] = i % m.Config().VocabSize
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int64
	fail := make(chan error, 8)
	reader := func(f func() error) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := f(); err != nil {
				fail <- err
				return
			}
			calls.Add(1)
		}
	}
	var seenMu sync.Mutex
	seen := map[string]bool{}
	wg.Add(4)
	go reader(func() error { _, err := m.loss(idx, idx, B, T); return err })
	go reader(func() error {
		l, err := m.Logits(idx, B, T)
		seenMu.Lock()
		seen[weightsHash(l)] = true
		seenMu.Unlock()
		return err
	})
	go reader(func() error { _, _, err := m.Gradients(idx[:T], idx[:T], 1, T); return err })
	go reader(func() error {
		_, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 8, Temperature: 1, N: 2, Seed: 1})
		return err
	})
	snapshots := [][]float64{slices.Clone(m.Params())}
	err := tr.Run(context.Background(), func(Progress) { snapshots = append(snapshots, slices.Clone(m.Params())) })
	close(stop)
	wg.Wait()
	close(fail)
	if err != nil {
		t.Fatal(err)
	}
	for err := range fail {
		t.Errorf("a reader failed: %v", err)
	}
	if calls.Load() == 0 {
		t.Fatal("no reader call completed during training")
	}
	if i, ok := testutil.SameBits(m.Params(), alone.Model().Params()); !ok {
		t.Fatalf("weights after training beside %d reader calls differ from the run left alone (parameter %d)", calls.Load(), i)
	}
	whole := map[string]bool{}
	for _, s := range snapshots {
		c := m.Clone()
		copy(c.Params(), s)
		l, _ := c.Logits(idx, B, T)
		whole[weightsHash(l)] = true
	}
	for h := range seen {
		if !whole[h] {
			t.Fatalf("a Logits call during training saw parameters of no step (of %d distinct results)", len(seen))
		}
	}
}

// TestSecondTrainerIsRefused: a second NewTrainer on a model a Trainer
// holds is an error (before, it was accepted and its Run panicked in a
// worker); after Close it is accepted, and the closed trainer refuses to
// step.
func TestSecondTrainerIsRefused(t *testing.T) {
	tr := tinyTrainer(t, 2)
	m, d := tr.Model(), tr.data
	if _, err := NewTrainer(m, d, tr.Config()); !errors.Is(err, ErrModelInUse) {
		t.Fatalf("second NewTrainer on a held model: %v, want ErrModelInUse", err)
	}
	if _, err := tr.trainStep(); err != nil {
		t.Fatalf("the first trainer after the refusal: %v", err)
	}
	tr.Close()
	tr.Close() // idempotent
	if _, err := tr.trainStep(); !errors.Is(err, ErrModelInUse) {
		t.Fatalf("TrainStep after Close: %v, want an error wrapping ErrModelInUse", err)
	}
	if err := tr.Run(context.Background(), nil); !errors.Is(err, ErrModelInUse) {
		t.Fatalf("Run after Close: %v, want an error wrapping ErrModelInUse", err)
	}
	second, err := NewTrainer(m, d, tr.Config())
	if err != nil {
		t.Fatalf("NewTrainer after Close: %v", err)
	}
	if _, err := second.trainStep(); err != nil {
		t.Fatal(err)
	}
	// A clone is a model of its own.
	if _, err := NewTrainer(m.Clone(), d, tr.Config()); err != nil {
		t.Fatalf("NewTrainer on a clone of a held model: %v", err)
	}
}

// TestParamsIsAViewOfAFixedSlab: Params and Tensors alias the model's
// slab (writing through them changes the logits), but appending to them
// cannot write past it, and Config is a copy: nothing a caller does with
// what they return can resize the slab or change the shape the model
// computes with (before, replacing Model.Params left the forward pass on
// the old slab while Adam updated the new one).
func TestParamsIsAViewOfAFixedSlab(t *testing.T) {
	m, err := NewModel(Config{VocabSize: 5, BlockSize: 4, EmbedDim: 8, Heads: 2, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := []int{1, 2}
	before, _ := m.Logits(idx, 1, 2)
	p := m.Params()
	if cap(p) != len(p) {
		t.Fatalf("Params has capacity %d beyond its length %d: an append would write into the model's memory", cap(p), len(p))
	}
	_ = append(p, 1) // must copy
	hb := m.tensors()[len(m.tensors())-1]
	if hb.name != "head_bias" || cap(hb.data) != len(hb.data) {
		t.Fatalf("last tensor %s has capacity %d for length %d", hb.name, cap(hb.data), len(hb.data))
	}
	hb.data[3] += 1 // head bias of token 3
	after, _ := m.Logits(idx, 1, 2)
	if d := after[3] - before[3] - 1; d > 1e-12 || d < -1e-12 || after[2] != before[2] {
		t.Fatalf("writing the head bias through Tensors: logits %v -> %v", before[:5], after[:5])
	}
	c := m.Config()
	c.BlockSize = 1
	if m.Config().BlockSize != 4 {
		t.Fatal("changing Config's result changed the model")
	}
}
