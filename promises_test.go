package minigpt

// promises_test.go guards documented promises that no other test held:
// each test is named after the sentence it checks (docs/testing.md lists
// them with the rest).

import (
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStopStringOutsideVocabularyNeverMatches: a stop string holding a
// character the vocabulary lacks can never appear in the text, so it
// never ends a sample, even when its in-vocabulary prefix ("the b")
// does appear; a valid stop string beside it still works.
func TestStopStringOutsideVocabularyNeverMatches(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{MaxNewTokens: 60, Greedy: true}
	full := completed(t, m, vocab, "the ", o)[len("the "):]
	if !strings.Contains(full, "the b") {
		t.Fatalf("the greedy text %q lacks the prefix this test needs", full)
	}
	for _, tc := range []struct {
		stops      []string
		text, stop string // the expected text and finish reason
	}{
		{[]string{"the bQ"}, full, finishLength},
		{[]string{"the b\u00e9", "Zthe"}, full, finishLength},
		{[]string{"the bQ", "when"}, full[:strings.Index(full, "when")], finishStop},
	} {
		var streamed strings.Builder
		o := o
		o.Stop = tc.stops
		o.Stream = func(c *Completion) error { streamed.WriteString(c.Text); return nil }
		res, err := m.Complete(context.Background(), vocab, "the ", o)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Text != tc.text || res[0].Finish != tc.stop || streamed.String() != tc.text {
			t.Errorf("stops %q: text %q (%s), streamed %q; want %q (%s)", tc.stops, res[0].Text, res[0].Finish, streamed.String(), tc.text, tc.stop)
		}
	}
}

// TestBatchAdmitsInArrivalOrder: "once its rows are free, in order of
// arrival, it joins": a request for one row waits behind an earlier one
// for two, although one row is free, and both run once rows are free.
func TestBatchAdmitsInArrivalOrder(t *testing.T) {
	saved := maxBacklog
	maxBacklog = 2 // the holder pauses, its rows taken, until cancelled
	t.Cleanup(func() { maxBacklog = saved })
	_, vocab, b := newTestBatch(t, 4)
	waiting := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.waiting)
	}
	hold, release := context.WithCancel(context.Background())
	defer release()
	held := make(chan error, 1)
	go func() {
		o := GenerateOptions{MaxNewTokens: 1000, N: 3, Temperature: 1, Stream: func(*Completion) error {
			<-hold.Done()
			return nil
		}}
		_, err := b.Complete(hold, vocab, "the ", o)
		held <- err
	}()
	waitUntil(t, "the holder takes 3 of the 4 rows", func() bool { return b.Stats().RowsUsed == 3 })

	type result struct {
		name string
		err  error
	}
	done := make(chan result, 2)
	run := func(name string, n int) {
		go func() {
			_, err := b.Complete(context.Background(), vocab, "the keeper ", GenerateOptions{MaxNewTokens: 5, N: n, Temperature: 1})
			done <- result{name, err}
		}()
	}
	run("two rows", 2)
	waitUntil(t, "the request for two rows waits", func() bool { return waiting() == 1 })
	run("one row", 1)
	// The request for one row must wait too: a free row does not let it
	// overtake the one before it.
	for deadline := time.Now().Add(10 * time.Second); waiting() < 2; {
		select {
		case r := <-done:
			t.Fatalf("%s ended (%v) while the request before it still waited", r.name, r.err)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests wait after 10 s, want both", waiting())
		}
	}
	select {
	case r := <-done:
		t.Fatalf("%s ended (%v) before the rows were free", r.name, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Errorf("the holder: %v, want context.Canceled", err)
	}
	for range 2 {
		if r := <-done; r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		}
	}
}

// waitUntil polls cond for up to ten seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// TestNewTrainerNeedsBlockSizePlusTwoTokens: NewTrainer refuses
// (ErrBadText) a training or validation part of block size + 1 tokens,
// and trains on parts of block size + 2, one window and its target, as
// NewDataset's documented minimum.
func TestNewTrainerNeedsBlockSizePlusTwoTokens(t *testing.T) {
	cfg := ckptFuzzConfig(false) // block size 4
	T := cfg.BlockSize
	d, err := NewDataset(LanternBay, nil, T)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches = 2, 2, 1
	part := func(src []int32, n int) []int32 { return slices.Clone(src[:n]) }
	for _, c := range []struct {
		name       string
		train, val int
		ok         bool
	}{
		{"train part of T+1", T + 1, T + 2, false},
		{"validation part of T+1", T + 2, T + 1, false},
		{"both of T+2", T + 2, T + 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewModel(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			small := &Dataset{Vocab: d.Vocab, Train: part(d.Train, c.train), Val: part(d.Val, c.val)}
			tr, err := NewTrainer(m, small, tc)
			if !c.ok {
				if !errors.Is(err, ErrBadText) {
					t.Fatalf("NewTrainer = %v, want an error wrapping ErrBadText", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if err := tr.Run(context.Background(), nil); err != nil {
				t.Fatalf("training on the smallest parts: %v", err)
			}
		})
	}
}

// historyTrainer is a trainer of the tiny config after 4 steps with a
// validation point every 2, its loss history not empty.
func historyTrainer(t *testing.T) (*Trainer, *Dataset) {
	t.Helper()
	cfg := ckptFuzzConfig(false)
	d, err := NewDataset(LanternBay, nil, cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches, tc.EvalEvery = 4, 2, 1, 2
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return tr, d
}

// TestCheckpointSharesNothingWithTheTrainer: Trainer.Checkpoint "sharing
// nothing with the trainer" and LossHistory's slices are the caller's:
// scribbling over every part of them changes neither the trainer's next
// checkpoint nor its history.
func TestCheckpointSharesNothingWithTheTrainer(t *testing.T) {
	tr, _ := historyTrainer(t)
	want := encodeCheckpoint(t, tr.Checkpoint())
	wantTrain, wantVal := tr.LossHistory()
	if len(wantTrain) == 0 || len(wantVal) == 0 {
		t.Fatalf("history %v %v: the test needs both curves", wantTrain, wantVal)
	}

	c := tr.Checkpoint()
	for i := range c.Model.Params() {
		c.Model.Params()[i] = 42
	}
	for _, s := range [][]float64{c.state.m, c.state.v} {
		for i := range s {
			s[i] = 7
		}
	}
	for _, s := range [][]LossPoint{c.state.trainLoss, c.state.valLoss} {
		for i := range s {
			s[i] = LossPoint{Step: 99, Loss: 99}
		}
	}
	c.state.sampler[0] ^= 0xff
	c.CorpusSHA256[0] ^= 0xff
	c.Train.LR = 1
	train, val := tr.LossHistory()
	train[0].Loss, val[0].Loss = -1, -1

	if got := encodeCheckpoint(t, tr.Checkpoint()); !bytes.Equal(got, want) {
		t.Error("editing a checkpoint or a loss history the trainer returned changed the trainer's state")
	}
	if gotTrain, gotVal := tr.LossHistory(); !slices.Equal(gotTrain, wantTrain) || !slices.Equal(gotVal, wantVal) {
		t.Errorf("loss history %v %v after editing a copy, want %v %v", gotTrain, gotVal, wantTrain, wantVal)
	}
}

// TestResumeLeavesTheCheckpointAsItWas: ResumeTrainer continues "a copy
// of c's model, optimizer, sampler and loss history": training the
// resumed trainer changes nothing of the checkpoint, which resumes again
// to the same bits.
func TestResumeLeavesTheCheckpointAsItWas(t *testing.T) {
	tr, d := historyTrainer(t)
	c := tr.Checkpoint()
	c.Train.Steps = 7
	before := encodeCheckpoint(t, c)
	tr.Close() // the resumed trainer holds a model of its own anyway
	var after [][]byte
	for range 2 {
		r, err := ResumeTrainer(c, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if !bytes.Equal(encodeCheckpoint(t, c), before) {
			t.Fatal("training a resumed trainer changed the checkpoint it was resumed from")
		}
		after = append(after, encodeCheckpoint(t, r.Checkpoint()))
	}
	if !bytes.Equal(after[0], after[1]) {
		t.Error("two resumptions of one checkpoint ended in different states")
	}
}

// TestProgressReportsEveryStep: Run calls progress after every step with
// the steps completed, the step's loss, the learning rate it used and a
// validation loss only at evaluations (every EvalEvery steps and at the
// end), NaN otherwise; LossHistory records the same points.
func TestProgressReportsEveryStep(t *testing.T) {
	cfg := ckptFuzzConfig(false)
	d, err := NewDataset(LanternBay, nil, cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches, tc.EvalEvery = 7, 2, 1, 3
	tc.WarmupSteps, tc.CosineDecay, tc.MinLR = 2, true, 1e-4
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var got []Progress
	if err := tr.Run(context.Background(), func(p Progress) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != tc.Steps {
		t.Fatalf("%d progress calls for %d steps", len(got), tc.Steps)
	}
	train, val := tr.LossHistory()
	var evals []int
	for i, p := range got {
		step := i + 1
		evaluated := step%tc.EvalEvery == 0 || step == tc.Steps
		if p.Step != step || p.LR != tc.learningRate(i) || !(p.Loss > 0) || math.IsNaN(p.ValLoss) == evaluated {
			t.Errorf("progress %d: %+v; want step %d, LR %v, a loss, a validation loss %v", i, p, step, tc.learningRate(i), evaluated)
		}
		if train[i] != (LossPoint{step, p.Loss}) {
			t.Errorf("training history %d: %v, want %v", i, train[i], LossPoint{step, p.Loss})
		}
		if evaluated {
			evals = append(evals, step)
			if j := len(evals) - 1; j >= len(val) || val[j] != (LossPoint{step, p.ValLoss}) {
				t.Errorf("validation history lacks %v: %v", LossPoint{step, p.ValLoss}, val)
			}
		}
	}
	if !slices.Equal(evals, []int{3, 6, 7}) || len(val) != len(evals) {
		t.Errorf("evaluations after steps %v (history %v), want 3, 6 and 7", evals, val)
	}
}

// TestLearningRateScheduleAsDocumented: TrainConfig's schedule is "linear
// warmup from LR/WarmupSteps to LR" over the first WarmupSteps steps,
// then with CosineDecay a "cosine decay from LR to MinLR at the last
// step" (and MinLR after it, for a resumed run past Steps); without
// CosineDecay, LR. The values are the formula's, by hand.
func TestLearningRateScheduleAsDocumented(t *testing.T) {
	c := TrainConfig{Steps: 11, LR: 1, WarmupSteps: 4, CosineDecay: true, MinLR: 0.1}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-15 }
	for step, want := range map[int]float64{
		0: 0.25, 1: 0.5, 2: 0.75, 3: 1, // warmup: LR·(step+1)/4
		4:  1,                                    // the cosine's start
		7:  0.1 + 0.45*(1+math.Cos(math.Pi*0.5)), // half way: (7-4)/(10-4)
		10: 0.1,                                  // the last step: MinLR
		11: 0.1, 50: 0.1,                         // after it
	} {
		if got := c.learningRate(step); !near(got, want) {
			t.Errorf("the rate of step %d = %v, want %v", step, got, want)
		}
	}
	c.CosineDecay = false
	for _, step := range []int{4, 10, 50} {
		if got := c.learningRate(step); got != 1 {
			t.Errorf("without cosine decay, the rate of step %d = %v, want LR", step, got)
		}
	}
}

// TestVocabErrorsNamePositions: Encode names an unknown character and its
// position in characters (not bytes), Decode an id outside [0, Size())
// (negative too) and its position, both wrapping ErrBadText.
func TestVocabErrorsNamePositions(t *testing.T) {
	v, err := NewVocab("aéb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Encode("ééaQ"); !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), "'Q' (U+0051) at character 3 (counting from 0)") {
		t.Errorf("Encode: %v, want ErrBadText naming 'Q' at character 3", err)
	}
	for _, tc := range []struct {
		ids  []int
		want string
	}{
		{[]int{0, -1}, "token id -1 at index 1 (counting from 0)"},
		{[]int{0, 1, 2, 3}, "token id 3 at index 3 (counting from 0)"},
	} {
		if _, err := v.Decode(tc.ids); !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v): %v, want ErrBadText naming %s", tc.ids, err, tc.want)
		}
	}
}

// TestTrainerModelAndClose: Model returns the model passed to NewTrainer
// (ResumeTrainer's own copy); after Close, which is idempotent, a step is
// refused with ErrModelInUse, the checkpoint and the loss history stay
// readable, and another Trainer may train the model.
func TestTrainerModelAndClose(t *testing.T) {
	tr, d := historyTrainer(t)
	m := tr.Model()
	c := tr.Checkpoint()
	r, err := ResumeTrainer(c, d)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model() == c.Model || r.Model() == m {
		t.Error("ResumeTrainer's model is not a copy of its own")
	}
	r.Close()
	tr.Close()
	tr.Close()
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatalf("Run with no step left after Close: %v", err)
	}
	tr.config.Steps++
	if err := tr.Run(context.Background(), nil); !errors.Is(err, ErrModelInUse) {
		t.Errorf("a step after Close: %v, want ErrModelInUse", err)
	}
	if train, val := tr.LossHistory(); len(train) != 4 || len(val) != 2 || tr.Checkpoint().Step != 4 {
		t.Errorf("after Close: history %v %v, checkpoint step %d", train, val, tr.Checkpoint().Step)
	}
	again, err := NewTrainer(m, d, tr.Config())
	if err != nil {
		t.Fatalf("NewTrainer on the model a closed Trainer held: %v", err)
	}
	again.Close()
}

// TestCopiesAreCopies: DefaultModel returns a fresh copy each call,
// and Model.Clone a deep copy: editing one changes nothing of the other.
func TestCopiesAreCopies(t *testing.T) {
	a, _, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(b.Params())
	c := a.Clone()
	a.Params()[0], a.Params()[len(want)-1] = 42, 42
	if !slices.Equal(b.Params(), want) || !slices.Equal(c.Params(), want) {
		t.Error("editing one DefaultModel changed another, or its Clone")
	}
	c.Params()[1] = 43
	if a.Params()[1] == 43 {
		t.Error("editing a Clone changed the original")
	}
}

// TestNewModelInitialisation: weights and embeddings drawn from N(0,
// 0.02²), LayerNorm gains 1, biases 0; the same seed the same weights,
// another seed others.
func TestNewModelInitialisation(t *testing.T) {
	m, err := NewModel(defaultConfig(), 7)
	if err != nil {
		t.Fatal(err)
	}
	var n, sum, sq float64
	for _, ts := range m.tensors() {
		switch {
		case strings.HasSuffix(ts.name, "_gain"), strings.HasSuffix(ts.name, "_bias"):
			want := 0.0
			if strings.HasSuffix(ts.name, "_gain") {
				want = 1
			}
			for i, x := range ts.data {
				if x != want {
					t.Fatalf("%s[%d] = %v, want %v", ts.name, i, x, want)
				}
			}
		default:
			for _, x := range ts.data {
				n, sum, sq = n+1, sum+x, sq+x*x
			}
		}
	}
	mean, std := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	// n is about 100,000: the sample's standard deviation is within 1% of
	// 0.02 and its mean within 4 standard errors of 0.
	if math.Abs(std-0.02) > 0.0002 || math.Abs(mean) > 4*0.02/math.Sqrt(n) {
		t.Errorf("weights: mean %v, standard deviation %v over %v values; want N(0, 0.02²)", mean, std, n)
	}
	same, _ := NewModel(defaultConfig(), 7)
	other, _ := NewModel(defaultConfig(), 8)
	if !slices.Equal(same.Params(), m.Params()) || slices.Equal(other.Params(), m.Params()) {
		t.Error("the seed does not decide the weights")
	}
}

// TestNewBatchLanes: a Batch has GOMAXPROCS lanes, at most 8 and at most
// its rows.
func TestNewBatchLanes(t *testing.T) {
	m, _, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(16)
	defer runtime.GOMAXPROCS(prev)
	for _, tc := range []struct{ procs, rows, lanes int }{{16, 32, 8}, {16, 3, 3}, {2, 32, 2}, {1, 1, 1}} {
		runtime.GOMAXPROCS(tc.procs)
		b, err := NewBatch(m, tc.rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.lanes) != tc.lanes {
			t.Errorf("GOMAXPROCS %d, %d rows: %d lanes, want %d", tc.procs, tc.rows, len(b.lanes), tc.lanes)
		}
		b.Close()
	}
}

// TestBatchStats: Tokens counts every sample's tokens, Steps the passes,
// RowsHist[n] the steps run with n rows in use, RowsUsed the rows held
// now.
func TestBatchStats(t *testing.T) {
	_, vocab, b := newTestBatch(t, 4)
	o := GenerateOptions{MaxNewTokens: 7, N: 3, Temperature: 1}
	if _, err := b.Complete(context.Background(), vocab, "the ", o); err != nil {
		t.Fatal(err)
	}
	s := b.Stats()
	var steps int64
	for _, n := range s.RowsHist {
		steps += n
	}
	if s.Tokens != 21 || s.RowsUsed != 0 || steps != s.Steps || s.Steps < 7 || s.RowsHist[3] != s.Steps || len(s.RowsHist) != 5 {
		t.Errorf("stats %+v, want 21 tokens, at least 7 steps, every one with 3 rows in use, none in use after", s)
	}
}

// TestStandardLibraryOnly: "the standard library only: no cgo, no
// require line in go.mod": every import of every Go file of the module
// is the standard library's or the module's own.
func TestStandardLibraryOnly(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "require" || f[0] == "replace") {
			t.Errorf("go.mod: %q", strings.TrimSpace(line))
		}
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if p == "C" || strings.Contains(first, ".") && first != "example.org" {
				t.Errorf("%s imports %s", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTestingDocNamesRealTests: every test docs/testing.md's promise
// table names (as file_test.go:TestName, the file from the repository's
// root) exists, so the table cannot point at a test that was renamed or
// removed.
func TestTestingDocNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`([A-Za-z0-9_./]+_test\.go):((?:Test|Example|Fuzz|Benchmark)[A-Za-z0-9_]*)`).FindAllStringSubmatch(string(doc), -1)
	if len(refs) < 200 {
		t.Fatalf("docs/testing.md names %d tests, want its whole promise table", len(refs))
	}
	files := map[string]string{}
	for _, r := range refs {
		src, ok := files[r[1]]
		if !ok {
			b, err := os.ReadFile(filepath.FromSlash(r[1]))
			if err != nil {
				t.Errorf("docs/testing.md names %s:%s: %v", r[1], r[2], err)
				files[r[1]] = ""
				continue
			}
			src = string(b)
			files[r[1]] = src
		}
		if src != "" && !strings.Contains(src, "func "+r[2]+"(") {
			t.Errorf("docs/testing.md names %s:%s, which that file does not define", r[1], r[2])
		}
	}
}

// TestDatasetSplitsNinetyTen: NewDataset's Train is the first 90% of the
// text's characters (rounded down, as the lessons' int(0.9·n)) and Val
// the rest, counted in characters, not bytes.
func TestDatasetSplitsNinetyTen(t *testing.T) {
	text := strings.Repeat("é a b. ", 15) + "xyz" // 108 characters, 123 bytes
	d, err := NewDataset(text, nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(part []int32) []int {
		out := make([]int, len(part))
		for i, id := range part {
			out[i] = int(id)
		}
		return out
	}
	train, _ := d.Vocab.Decode(ids(d.Train))
	val, _ := d.Vocab.Decode(ids(d.Val))
	runes := []rune(text)
	if split := len(runes) * 9 / 10; train != string(runes[:split]) || val != string(runes[split:]) {
		t.Errorf("split %d + %d characters of %d, want the first %d and the rest", len([]rune(train)), len([]rune(val)), len(runes), split)
	}
}
