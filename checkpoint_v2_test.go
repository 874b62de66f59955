package minigpt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// v1FullFixture is testdata/v1_full.ckpt: a full checkpoint in the
// version-1 format of ckptTrainer(t, Config{VocabSize: 24, BlockSize: 4,
// EmbedDim: 4, Heads: 2, Layers: 1, TiedHead: true}, 3, nil): Lantern
// Bay, 3 steps. It was first written by the version-1 writer (commit
// ad44dd9's SaveCheckpoint). When the training arithmetic was re-pinned
// (the input gradients' order, see pinnedWeightsSHA256) it was rewritten
// as downgradeToV1 of that run's checkpoint without fingerprint and
// history: before the change, that procedure gave the writer's file byte
// for byte, and this test checks the helper against the file itself.
const v1FullFixture = "testdata/v1_full.ckpt"

func v1FixtureConfig() Config {
	return Config{VocabSize: 24, BlockSize: 4, EmbedDim: 4, Heads: 2, Layers: 1, TiedHead: true}
}

// Version-1 files, as the old writer wrote them, still load and resume
// exactly; they have no fingerprint and no history. The stored fixture
// pins the format (its fields, and that downgradeToV1 makes its bytes);
// whether a version-1 file resumes the run exactly is checked on one
// made from a run of today's code, so that a change of the training
// arithmetic (LayerNorm's ε, say), which changes every stored run, does
// not fail this test: the pinned hashes and the NumPy agreement say that.
func TestCheckpointVersion1StillLoads(t *testing.T) {
	raw, err := os.ReadFile(v1FullFixture)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(raw[8:]); v != 1 {
		t.Fatalf("%s is version %d, want the version-1 fixture", v1FullFixture, v)
	}
	c, err := LoadCheckpoint(v1FullFixture)
	if err != nil {
		t.Fatal(err)
	}
	if c.Train == nil || c.Step != 3 || c.Model.Config() != v1FixtureConfig() || c.CorpusSHA256 != nil || c.state.trainLoss != nil || c.state.valLoss != nil {
		t.Fatalf("v1 checkpoint: full %v, step %d, config %+v, fingerprint %x, history %v %v",
			c.Train != nil, c.Step, c.Model.Config(), c.CorpusSHA256, c.state.trainLoss, c.state.valLoss)
	}
	// Its bytes are exactly what the test helper makes of the version-2
	// encoding, which validates the helper the fuzz seeds use.
	if !bytes.Equal(downgradeToV1(encodeCheckpoint(t, c)), raw) {
		t.Fatal("downgradeToV1(WriteCheckpoint(v1 file)) differs from the v1 file")
	}
	// Resumed, the fixture goes on as the same state in version 2 does.
	resumed4 := func(c *Checkpoint) []float64 {
		tr := resumeOnLanternBay(t, c)
		for range 4 {
			if _, err := tr.trainStep(); err != nil {
				t.Fatal(err)
			}
		}
		return tr.Model().Params()
	}
	asV2, err := ReadCheckpoint(bytes.NewReader(encodeCheckpoint(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	if !testutil.BitsEqual(resumed4(c), resumed4(asV2)) {
		t.Fatal("the version-1 fixture resumes differently from the same checkpoint written as version 2")
	}
	// A version-1 file of today's run, made as the fixture was, continues
	// the run exactly: 3 steps + 4 = 7 uninterrupted.
	three := ckptTrainer(t, v1FixtureConfig(), 3, nil).Checkpoint()
	three.CorpusSHA256, three.state.trainLoss, three.state.valLoss = nil, nil, nil
	v1, err := ReadCheckpoint(bytes.NewReader(downgradeToV1(encodeCheckpoint(t, three))))
	if err != nil {
		t.Fatal(err)
	}
	want := ckptTrainer(t, v1FixtureConfig(), 7, nil)
	if !testutil.BitsEqual(resumed4(v1), want.Model().Params()) {
		t.Fatal("a resumed version-1 checkpoint does not continue the run exactly")
	}
	// Written again, it becomes version 2 and says the same.
	again, err := ReadCheckpoint(bytes.NewReader(encodeCheckpoint(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	_, sameP := testutil.SameBits(again.Model.Params(), c.Model.Params())
	_, sameV := testutil.SameBits(again.state.v, c.state.v)
	if again.Step != c.Step || !sameP || !sameV {
		t.Fatal("a v1 checkpoint written as v2 reads back differently")
	}
}

// runTo trains tr with Run until it has done `stop` steps (or the run's
// end), as an interrupted run would.
func runTo(t *testing.T, tr *Trainer, stop int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := tr.Run(ctx, func(p Progress) {
		if p.Step == stop {
			cancel()
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// The loss history survives a checkpoint and a resume: the resumed run's
// history is bit for bit the uninterrupted run's, training and
// validation points alike.
func TestCheckpointKeepsLossHistory(t *testing.T) {
	const N, M = 5, 6
	edit := func(c *TrainConfig) { c.Steps, c.EvalEvery = N+M, 2 }
	whole := ckptTrainer(t, ckptResumeConfig(), 0, edit)
	runTo(t, whole, N+M)
	wantTrain, wantVal := whole.LossHistory()
	if len(wantTrain) != N+M || len(wantVal) != (N+M)/2+1 {
		t.Fatalf("uninterrupted history: %d training, %d validation points; want %d and %d", len(wantTrain), len(wantVal), N+M, (N+M)/2+1)
	}
	for i, p := range wantTrain {
		if p.Step != i+1 || !(p.Loss > 0) {
			t.Fatalf("training point %d is %+v", i, p)
		}
	}

	first := ckptTrainer(t, ckptResumeConfig(), 0, edit)
	runTo(t, first, N)
	c, err := ReadCheckpoint(bytes.NewReader(encodeCheckpoint(t, first.Checkpoint())))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.state.trainLoss) != N || len(c.state.valLoss) != N/2 {
		t.Fatalf("checkpoint after %d steps holds %d training and %d validation points", N, len(c.state.trainLoss), len(c.state.valLoss))
	}
	if sum := sha256.Sum256([]byte(LanternBay)); !bytes.Equal(c.CorpusSHA256, sum[:]) {
		t.Fatalf("corpus fingerprint %x, want SHA-256 of Lantern Bay %x", c.CorpusSHA256, sum)
	}
	second, err := ResumeTrainer(c, first.data)
	if err != nil {
		t.Fatal(err)
	}
	runTo(t, second, N+M)
	gotTrain, gotVal := second.LossHistory()
	if !slices.Equal(gotTrain, wantTrain) || !slices.Equal(gotVal, wantVal) {
		t.Fatalf("resumed history differs from the uninterrupted one:\ntrain %v\nwant  %v\nval %v\nwant %v", gotTrain, wantTrain, gotVal, wantVal)
	}
	// A weights-only checkpoint keeps neither.
	w := second.Checkpoint().WeightsOnly()
	if w.CorpusSHA256 != nil || w.state != nil {
		t.Fatal("a weights-only checkpoint holds a fingerprint or history")
	}
}

// A corpus with the same vocabulary but another text is refused on
// resume; clearing the fingerprint is the way to continue on it anyway.
func TestResumeRefusesAnotherCorpus(t *testing.T) {
	tr := ckptTrainer(t, ckptResumeConfig(), 2, nil)
	c := tr.Checkpoint()
	// Lantern Bay rotated by 7 characters: the same 24 characters, another text.
	other := LanternBay[7:] + LanternBay[:7]
	d, err := NewDataset(other, c.Vocab, c.Model.Config().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResumeTrainer(c, d); !errors.Is(err, ErrDatasetMismatch) {
		t.Fatalf("ResumeTrainer on another text = %v, want ErrDatasetMismatch", err)
	}
	c.CorpusSHA256 = nil
	if _, err := ResumeTrainer(c, d); err != nil {
		t.Fatalf("ResumeTrainer with the fingerprint cleared = %v", err)
	}
	if _, err := ResumeTrainer(tr.Checkpoint(), tr.data); err != nil {
		t.Fatalf("ResumeTrainer on the same text = %v", err)
	}
}

// Dataset.SHA256 is the hash of the text NewDataset was given.
func TestDatasetSHA256(t *testing.T) {
	for _, text := range []string{LanternBay, strings.Repeat("naïve café 日本 ", 40)} {
		d, err := NewDataset(text, nil, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := d.textSHA256(), sha256.Sum256([]byte(text)); got != want {
			t.Fatalf("SHA256 = %x, want %x", got, want)
		}
	}
}

// The damage the version-2 sections can suffer is named.
func TestReadCheckpointV2Corruption(t *testing.T) {
	cfg := ckptResumeConfig()
	tr := ckptTrainer(t, cfg, 0, func(c *TrainConfig) { c.Steps, c.EvalEvery = 4, 2 })
	runTo(t, tr, 4)
	good := encodeCheckpoint(t, tr.Checkpoint())
	off := ckptOffsets(cfg, 4+2)
	if off["end"] != len(good) {
		t.Fatalf("checkpoint is %d bytes, the layout says %d", len(good), off["end"])
	}
	hist := off["loss history"]
	put64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at:], v); return resealCheckpoint(b) }
	}
	put32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return resealCheckpoint(b) }
	}
	weightsOnly := encodeCheckpoint(t, tr.Checkpoint().WeightsOnly())
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"more training points than steps", put32(52, 5)(slices.Clone(good)), "5 training-loss points for 4 steps"},
		{"too many validation points", put32(56, 6)(slices.Clone(good)), "6 validation-loss points for 4 steps"},
		{"counts without the section", put32(12, flagsFull|flagCorpus)(slices.Clone(good)), "loss history counts are 4 and 2 but the loss history section is absent"},
		{"cut in the history", good[:hist+20], "truncated in the loss history section"},
		{"steps not increasing", put64(hist+16, 1)(slices.Clone(good)), "training-loss point 1 is at step 1"},
		{"training step 0", put64(hist, 0)(slices.Clone(good)), "training-loss point 0 is at step 0, want a step in [1, 4]"},
		{"validation step past the end", put64(hist+16*5, 9)(slices.Clone(good)), "validation-loss point 1 is at step 9"},
		{"NaN loss", put64(hist+8, math.Float64bits(math.NaN()))(slices.Clone(good)), "training-loss point 0 (step 1) is NaN"},
		{"negative loss", put64(hist+16*4+8, math.Float64bits(-1))(slices.Clone(good)), "validation-loss point 0 (step 2) is -1"},
		{"fingerprint in a weights-only checkpoint", put32(12, flagCorpus)(slices.Clone(weightsOnly)), "truncated"},
		{"version-2 flag in a version-1 file", put32(12, flagsFull|flagCorpus)([]byte(mustRead(t, v1FullFixture))), "unknown section flags 0x8 (version 1)"},
		{"version 4", put32(8, 4)(slices.Clone(good)), "unsupported format version 4 (this reader knows versions 1 to 3)"},
		{"version 3 without its tokenizer", put32(8, 3)(slices.Clone(good)), "a version 3 checkpoint holds a tokenizer, but its flag is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCheckpoint(bytes.NewReader(tc.in))
			if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadCheckpoint = %v\nwant ErrBadCheckpoint mentioning %q", err, tc.want)
			}
		})
	}
	// What check refuses, WriteCheckpoint refuses too.
	for _, tc := range []struct {
		name string
		edit func(*Checkpoint)
		want string
	}{
		{"short fingerprint", func(c *Checkpoint) { c.CorpusSHA256 = c.CorpusSHA256[:8] }, "corpus fingerprint is 8 bytes"},
		{"history in weights-only", func(c *Checkpoint) { st := c.state; c.Train, c.state = nil, nil; _ = st }, "only a full checkpoint holds"},
		{"history past the step", func(c *Checkpoint) { c.state.trainLoss = append(c.state.trainLoss, LossPoint{5, 1}) }, "training-loss point 4 is at step 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tr.Checkpoint()
			tc.edit(c)
			if err := WriteCheckpoint(&bytes.Buffer{}, c); !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteCheckpoint = %v, want ErrBadCheckpoint mentioning %q", err, tc.want)
			}
		})
	}
}

// The sizes docs/checkpoint-format.md states for the default model.
func TestCheckpointSizesInTheDocs(t *testing.T) {
	d, err := NewDataset(LanternBay, nil, defaultConfig().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(defaultConfig(), 42)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, d, DefaultTrainConfig())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(encodeCheckpoint(t, tr.Checkpoint().WeightsOnly())); n != 838_016 {
		t.Errorf("default weights-only checkpoint: %d bytes, docs/checkpoint-format.md says 838,016", n)
	}
	// After the default run: 1200 steps, one training point each, one
	// validation point at the end.
	c := tr.Checkpoint()
	c.Step, c.state.adamStep = 1200, 1200
	for s := 1; s <= 1200; s++ {
		c.state.trainLoss = append(c.state.trainLoss, LossPoint{s, 1})
	}
	c.state.valLoss = []LossPoint{{1200, 1}}
	if n := len(encodeCheckpoint(t, c)); n != 2_533_060 {
		t.Errorf("default full checkpoint after 1200 steps: %d bytes, docs/checkpoint-format.md says 2,533,060", n)
	}
}
