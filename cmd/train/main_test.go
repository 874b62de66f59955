package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"example.org/minigpt"
)

// tinyArgs is a model and run small enough for tests: milliseconds a step.
func tinyArgs(out string, more ...string) []string {
	return append([]string{
		"-steps", "3", "-block", "8", "-embd", "16", "-heads", "2", "-layers", "1",
		"-batch", "4", "-eval-batches", "1", "-out", out,
	}, more...)
}

// runTrain runs the command and returns its stdout, stderr and error.
func runTrain(ctx context.Context, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func load(t *testing.T, path string) *minigpt.Checkpoint {
	t.Helper()
	c, err := minigpt.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameParams(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func TestRunWritesLoadableCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		more []string
		full bool
	}{
		{"full", nil, true},
		{"weights-only", []string{"-weights-only"}, false},
		{"tied", []string{"-tied"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.ckpt")
			_, stderr, err := runTrain(context.Background(), tinyArgs(out, tc.more...)...)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr)
			}
			c := load(t, out)
			want := minigpt.Config{VocabSize: 24, BlockSize: 8, EmbedDim: 16, Heads: 2, Layers: 1, TiedHead: tc.name == "tied"}
			if c.Model.Config() != want || c.Step != 3 || c.Train != nil != tc.full {
				t.Fatalf("checkpoint: config %+v step %d full %v; want %+v 3 %v", c.Model.Config(), c.Step, c.Train != nil, want, tc.full)
			}
			last := lastLine(stderr)
			for _, s := range []string{"step 3/3", "train loss", "mean of the last 3 steps", "val loss", "wall time", out} {
				if !strings.Contains(last, s) {
					t.Errorf("final line %q lacks %q", last, s)
				}
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badUTF8 := write("bad.txt", "the lam\xffp keeper"+strings.Repeat(" walks", 100))
	short := write("short.txt", "the lamp keeper")
	weights := filepath.Join(dir, "weights.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(weights, "-weights-only")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	corrupt := write("corrupt.ckpt", "\x89GPT\r\n\x1a\n\x01\x00\x00\x00 and then nonsense")
	out := filepath.Join(dir, "out.ckpt")
	other := write("other.txt", strings.Repeat("zebra quartz vexing jumps. ", 20))
	otherFull := filepath.Join(dir, "other.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(otherFull, "-corpus", other)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative steps", tinyArgs(out, "-steps", "-1"), 2, `invalid value "-1" for flag -steps: invalid config: training: steps -1 is negative`},
		{"heads not dividing width", []string{"-heads", "3", "-embd", "64"}, 2, `invalid value "3" for flag -heads: invalid config: embedding width 64 is not divisible by 3 heads`},
		{"zero lr", []string{"-lr", "0"}, 2, `invalid value "0" for flag -lr`},
		{"NaN lr", []string{"-lr", "NaN"}, 2, `invalid value "NaN" for flag -lr`},
		{"min lr above lr", []string{"-min-lr", "1"}, 2, `invalid value "1" for flag -min-lr`},
		{"zero batch", []string{"-batch", "0"}, 2, `invalid value "0" for flag -batch`},
		{"unparsable steps", []string{"-steps", "many"}, 2, `invalid value "many" for flag -steps`},
		// Issue 39: these panicked (growslice), ran out of memory, or
		// allocated gigabytes before the first step.
		{"steps 1e15", tinyArgs(out, "-steps", "1000000000000000"), 2, `invalid value "1000000000000000" for flag -steps: at most 1073741824 (2^30)`},
		{"steps 1e11", tinyArgs(out, "-steps", "100000000000"), 2, `invalid value "100000000000" for flag -steps: at most 1073741824`},
		{"steps MaxInt64", tinyArgs(out, "-steps", "9223372036854775807"), 2, `invalid value "9223372036854775807" for flag -steps: at most 1073741824`},
		{"steps 2^30+1 with a preset", []string{"-preset", "baby", "-steps", "1073741825"}, 2, `invalid value "1073741825" for flag -steps: at most 1073741824`},
		{"steps 1e12 on resume", []string{"-resume", otherFull, "-corpus", other, "-steps", "1000000000000"}, 2, `invalid value "1000000000000" for flag -steps: at most 1073741824`},
		{"unknown flag", []string{"-epochs", "3"}, 2, "flag provided but not defined: -epochs"},
		{"stray argument", []string{"input.txt"}, 2, `unexpected argument "input.txt"`},
		{"unknown preset", []string{"-preset", "huge"}, 2, `invalid value "huge" for flag -preset: the presets are baby, shakespeare-char`},
		{"model flag with resume", []string{"-resume", weights, "-embd", "8"}, 2, "-embd cannot be combined with -resume"},
		{"init-from with resume", []string{"-resume", otherFull, "-init-from", weights}, 2, "-init-from cannot be combined with -resume"},
		{"init-from shape mismatch", tinyArgs(out, "-init-from", weights, "-embd", "32"), 2, "-embd 32 does not match -init-from " + weights + ", whose model has 16"},
		{"init-from corpus outside vocabulary", tinyArgs(out, "-init-from", weights, "-corpus", other), 2, `'z' (U+007A) at character 0 (counting from 0) is not in the model's vocabulary, in "zebra quartz vexing j"…`},
		{"init-from missing", tinyArgs(out, "-init-from", filepath.Join(dir, "nope.ckpt")), 2, "-init-from " + filepath.Join(dir, "nope.ckpt") + ": no such file or directory"},
		{"out is the init-from file", tinyArgs(weights, "-init-from", weights), 2, "-out and -init-from both name"},
		{"embd 30 heads 4", []string{"-embd", "30"}, 2, `invalid value "30" for flag -embd: invalid config: embedding width 30 is not divisible by 4 heads`},
		{"missing corpus", tinyArgs(out, "-corpus", filepath.Join(dir, "nope.txt")), 2, "no such file"},
		{"invalid UTF-8 corpus", tinyArgs(out, "-corpus", badUTF8), 2, "-corpus " + badUTF8 + ": unusable text: not valid UTF-8 (byte offset 7) at character 7 (counting from 0), in \"the lam\uFFFDp keeper walks walks\"…"},
		{"short corpus", tinyArgs(out, "-corpus", short), 2, "a corpus of at least 100 characters"},
		{"missing resume file", []string{"-resume", filepath.Join(dir, "nope.ckpt")}, 2, "no such file"},
		{"weights-only resume", []string{"-resume", weights}, 2, "weights-only checkpoint; -resume needs a full one"},
		{"corrupt resume file", []string{"-resume", corrupt}, 2, "bad checkpoint"},
		{"out is the plot", tinyArgs(out, "-plot", out), 2, "-out and -plot both name"},
		{"out is the corpus", tinyArgs(other, "-corpus", other), 2, "-out and -corpus both name"},
		{"out in a missing directory", tinyArgs(filepath.Join(dir, "no", "such", "m.ckpt")), 2, "cannot create a file in " + filepath.Join(dir, "no", "such") + ": no such file or directory"},
		{"out is a directory", tinyArgs(dir), 2, "is a directory"},
		{"plot in a missing directory", tinyArgs(out, "-plot", filepath.Join(dir, "no", "p.svg")), 2, "-plot " + filepath.Join(dir, "no", "p.svg") + ": cannot create a file in"},
		{"corpus is a directory", tinyArgs(out, "-corpus", dir), 2, "-corpus " + dir + ": is a directory, not a regular file"},
		{"weights-only over the resumed file", []string{"-resume", otherFull, "-corpus", other, "-weights-only"}, 2, "would replace the full checkpoint"},
		{"resume without its corpus", []string{"-resume", otherFull}, 2, "was not trained on the built-in text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runTrain(context.Background(), tc.args...)
			if err == nil {
				t.Fatal("run succeeded")
			}
			var msg bytes.Buffer
			code := exitCode(err, &msg)
			if code != tc.code || !strings.Contains(msg.String(), tc.want) {
				t.Fatalf("exit %d with %q; want exit %d mentioning %q", code, msg.String(), tc.code, tc.want)
			}
			if code == 2 && (strings.Count(msg.String(), "\n") != 1 || !strings.Contains(msg.String(), "train -h")) {
				t.Fatalf("usage error %q is not one line with a usage hint", msg.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("a failed run wrote %s", out)
			}
		})
	}
}

// cancelOnLine is a stderr that cancels a context when the first progress
// line arrives, as a signal would.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte("step ")) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func TestRunCancelSavesAndResumesExactly(t *testing.T) {
	dir := t.TempDir()
	sched := []string{"-warmup", "4", "-cosine", "-min-lr", "1e-4", "-grad-clip", "1", "-weight-decay", "0.1", "-eval-every", "5"}
	whole := filepath.Join(dir, "whole.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(whole, append(sched, "-steps", "40")...)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}

	part := filepath.Join(dir, "part.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnLine{cancel: cancel}
	err := run(ctx, tinyArgs(part, append(sched, "-steps", "40")...), io.Discard, stderr)
	if code := exitCode(err, io.Discard); !errors.Is(err, errInterrupted) || code != 130 {
		t.Fatalf("cancelled run: %v (exit %d), want interrupted (exit 130)\n%s", err, code, stderr.buf.String())
	}
	if !strings.Contains(err.Error(), "-resume "+part) || !strings.Contains(stderr.buf.String(), "saving the full checkpoint") {
		t.Fatalf("the interruption is not reported with how to continue: %v\n%s", err, stderr.buf.String())
	}
	c := load(t, part)
	if c.Step < 1 || c.Step >= 40 || c.Train == nil {
		t.Fatalf("interrupted checkpoint at step %d (full %v), want a full one in [1, 40)", c.Step, c.Train != nil)
	}

	done := filepath.Join(dir, "done.ckpt")
	if _, stderr, err := runTrain(context.Background(), "-resume", part, "-out", done); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got, want := load(t, done), load(t, whole)
	if got.Step != 40 || !sameParams(got.Model.Params(), want.Model.Params()) {
		t.Fatalf("resumed run: step %d; parameters equal to the uninterrupted run's: %v", got.Step, sameParams(got.Model.Params(), want.Model.Params()))
	}
	// Byte for byte: the optimizer moments, the sampler and the loss
	// history too.
	gotB, _ := os.ReadFile(done)
	wantB, _ := os.ReadFile(whole)
	if !bytes.Equal(gotB, wantB) {
		t.Fatal("resumed run: its checkpoint differs from the uninterrupted run's")
	}
}

func TestResumeExtendsRun(t *testing.T) {
	dir := t.TempDir()
	whole, part := filepath.Join(dir, "whole.ckpt"), filepath.Join(dir, "part.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(whole, "-steps", "6")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if _, stderr, err := runTrain(context.Background(), tinyArgs(part, "-steps", "3")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// Without -out, the -resume file is rewritten.
	_, stderr, err := runTrain(context.Background(), "-resume", part, "-steps", "6")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "resuming "+part+" at step 3 of 6") {
		t.Fatalf("stderr does not announce the resume:\n%s", stderr)
	}
	got, want := load(t, part), load(t, whole)
	if got.Step != 6 || !sameParams(got.Model.Params(), want.Model.Params()) {
		t.Fatalf("3 steps then 3 more: step %d; parameters equal to 6 steps: %v", got.Step, sameParams(got.Model.Params(), want.Model.Params()))
	}
	_, _, err = runTrain(context.Background(), "-resume", part, "-steps", "4")
	if exitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), "already at step 6") {
		t.Fatalf("shrinking a finished run: %v, want a usage error", err)
	}
}

func TestKeepBest(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	_, stderr, err := runTrain(context.Background(), tinyArgs(out, "-steps", "6", "-eval-every", "2", "-keep-best")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	best := filepath.Join(dir, "m.best.ckpt")
	c := load(t, best)
	if c.Step%2 != 0 || c.Step < 2 || c.Step > 6 || c.Train == nil {
		t.Fatalf("best checkpoint at step %d (full %v), want an evaluated step", c.Step, c.Train != nil)
	}
	if !strings.Contains(stderr, "best val loss") {
		t.Fatalf("stderr does not report the best checkpoint:\n%s", stderr)
	}
	// A resumed run starts from the best loss so far, not from scratch.
	_, stderr, err = runTrain(context.Background(), "-resume", out, "-steps", "8", "-keep-best")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "to beat") {
		t.Fatalf("resumed -keep-best run did not recall the best loss:\n%s", stderr)
	}
}

// A byte-order mark at the start of a corpus is not a character of it.
func TestCorpusByteOrderMarkIsDropped(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "bom.txt")
	os.WriteFile(corpus, []byte("\uFEFF"+strings.Repeat("the lamp keeper. ", 30)), 0o644)
	out := filepath.Join(dir, "m.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(out, "-corpus", corpus)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if chars := string(load(t, out).Vocab.Chars()); strings.ContainsRune(chars, '\uFEFF') {
		t.Fatalf("vocabulary %q holds the byte-order mark", chars)
	}
}

// -init-from fine-tunes: the run starts from the checkpoint's weights
// (not a fresh initialisation), at step 0 with a fresh optimizer, on a
// new corpus encoded with the checkpoint's vocabulary; shape flags that
// match are accepted.
func TestInitFromFineTunes(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.ckpt")
	if _, stderr, err := runTrain(context.Background(), tinyArgs(base, "-steps", "5")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	corpus := filepath.Join(dir, "mine.txt")
	os.WriteFile(corpus, []byte(strings.Repeat("the gulls rest on the rocks at dusk. ", 10)), 0o644)
	tuned := filepath.Join(dir, "tuned.ckpt")
	_, stderr, err := runTrain(context.Background(), "-init-from", base, "-corpus", corpus, "-steps", "2",
		"-batch", "4", "-eval-batches", "1", "-block", "8", "-seed", "7", "-out", tuned)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "fine-tuning "+base) {
		t.Errorf("stderr does not announce the fine-tuning:\n%s", stderr)
	}
	b, got := load(t, base), load(t, tuned)
	if got.Model.Config() != b.Model.Config() || !slices.Equal(got.Vocab.Chars(), b.Vocab.Chars()) {
		t.Fatalf("fine-tuned model %+v %q, want the base's shape %+v and vocabulary %q", got.Model.Config(), string(got.Vocab.Chars()), b.Model.Config(), string(b.Vocab.Chars()))
	}
	if got.Step != 2 || got.Train.Seed != 7 || got.Train.Steps != 2 {
		t.Fatalf("fine-tuned checkpoint at step %d (seed %d, steps %d); want a fresh run of 2 steps with seed 7", got.Step, got.Train.Seed, got.Train.Steps)
	}

	// The same two steps from the base weights through the library.
	d, err := minigpt.NewDataset(strings.Repeat("the gulls rest on the rocks at dusk. ", 10), b.Vocab, b.Model.Config().BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tc := minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches, tc.Seed = 2, 4, 1, 7
	tr, err := minigpt.NewTrainer(b.Model, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !sameParams(got.Model.Params(), tr.Model().Params()) {
		t.Fatal("-init-from's weights differ from NewTrainer on the loaded model with the same settings")
	}
}
