package minigpt

// Tests of what a careless or hostile caller may ask of a Trainer: step
// counts no run could reach, curves longer than the Trainer keeps, two
// Runs at once.

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// microTrainer returns a trainer small enough to take thousands of steps
// in a test: block 4, width 8, one layer, batch 1.
func microTrainer(t *testing.T, edit func(*TrainConfig)) *Trainer {
	t.Helper()
	d, err := NewDataset(LanternBay, nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(Config{VocabSize: d.Vocab.Size(), BlockSize: 4, EmbedDim: 8, Heads: 1, Layers: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.BatchSize, tc.EvalBatches, tc.EvalEvery = 1, 1, 1
	if edit != nil {
		edit(&tc)
	}
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Step counts past any run's reach are refused with the field's name,
// before anything is allocated for them.
func TestTrainConfigRefusesAbsurdStepCounts(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*TrainConfig)
	}{
		{"steps", func(c *TrainConfig) { c.Steps = 1 << 62 }},
		{"steps", func(c *TrainConfig) { c.Steps = 1<<30 + 1 }},
		{"warmup steps", func(c *TrainConfig) { c.WarmupSteps = 1 << 62 }},
		{"eval interval", func(c *TrainConfig) { c.EvalEvery = 1<<63 - 1 }},
	} {
		tc := DefaultTrainConfig()
		c.edit(&tc)
		err := tc.Validate()
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.field+" ") {
			t.Errorf("%+v: Validate = %v, want ErrBadConfig naming %q", tc, err, c.field)
		}
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.WarmupSteps, tc.EvalEvery = 1<<30, 1<<30, 1<<30
	if err := tc.Validate(); err != nil {
		t.Errorf("the largest step counts: %v", err)
	}
}

// A run of a huge step count costs what its steps cost, not what its
// history would: Run used to reserve 16 bytes a step for the loss curve
// before the first step (1<<62 steps panicked in growslice; 1<<27 here
// reserved 2 GiB).
func TestRunOfManyStepsAllocatesLittle(t *testing.T) {
	tr := microTrainer(t, func(c *TrainConfig) { c.Steps, c.EvalEvery = 1<<27, 1 })
	ctx, cancel := context.WithCancel(context.Background())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := tr.Run(ctx, func(p Progress) {
		if p.Step == 3 {
			cancel()
		}
	})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, context.Canceled) || tr.Step() != 3 {
		t.Fatalf("Run = %v at step %d, want context.Canceled at step 3", err, tr.Step())
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("three steps of a %d-step run allocated %d MiB", tr.Config().Steps, got>>20)
	}
}

// A loss curve stays within its bound, thinned evenly from the start of
// the run, and a run resumed from a checkpoint on the way records the
// same curves as the uninterrupted one.
func TestLossCurvesAreBoundedAndResumable(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2 × 9000 steps")
	}
	const N, M = 5000, 4000 // N+M passes maxLossPoints (8192) once
	edit := func(c *TrainConfig) { c.Steps, c.EvalEvery = N+M, 1 }
	whole := microTrainer(t, edit)
	if err := whole.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	train, val := whole.LossHistory()
	for name, curve := range map[string][]LossPoint{"training": train, "validation": val} {
		if len(curve) > 8192 {
			t.Fatalf("%s curve holds %d points, above 8192", name, len(curve))
		}
		// Thinned once at 8192 points: steps 1, 3, ..., 8191, then every
		// step from 8193 on.
		var want []int
		for s := 1; s <= 8191; s += 2 {
			want = append(want, s)
		}
		for s := 8193; s <= N+M; s++ {
			want = append(want, s)
		}
		steps := make([]int, len(curve))
		for i, p := range curve {
			steps[i] = p.Step
		}
		if !slices.Equal(steps, want) {
			t.Fatalf("%s curve has %d points at steps %v … %v; want %d", name, len(steps), steps[:4], steps[len(steps)-4:], len(want))
		}
	}

	first := microTrainer(t, edit)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := first.Run(ctx, func(p Progress) {
		if p.Step == N {
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCheckpoint(&buf, first.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCheckpoint(&buf)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ResumeTrainer(c, first.data)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	gotTrain, gotVal := second.LossHistory()
	if !slices.Equal(gotTrain, train) || !slices.Equal(gotVal, val) {
		t.Fatalf("resumed curves (%d, %d points) differ from the uninterrupted run's (%d, %d)", len(gotTrain), len(gotVal), len(train), len(val))
	}
}

// One Run at a time: a second, from another goroutine or from the
// progress callback, is refused; the run then takes exactly its steps.
func TestSecondRunIsRefused(t *testing.T) {
	tr := microTrainer(t, func(c *TrainConfig) { c.Steps = 20 })
	var inner error
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	var outer error
	wg.Add(1)
	go func() {
		defer wg.Done()
		outer = tr.Run(context.Background(), func(p Progress) {
			once.Do(func() {
				inner = tr.Run(context.Background(), nil)
				close(started)
				<-release
			})
		})
	}()
	<-started
	concurrent := tr.Run(context.Background(), nil)
	close(release)
	wg.Wait()
	if outer != nil {
		t.Fatalf("the first Run: %v", outer)
	}
	for name, err := range map[string]error{"from progress": inner, "from another goroutine": concurrent} {
		if !errors.Is(err, ErrModelInUse) {
			t.Errorf("a second Run %s = %v, want ErrModelInUse", name, err)
		}
	}
	if tr.Step() != 20 {
		t.Errorf("the run ended at step %d of 20", tr.Step())
	}
	// Once the first has returned, Run may be called again.
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Errorf("Run after Run: %v", err)
	}
}
