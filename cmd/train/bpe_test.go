package main

// This file holds the tests of -tokenizer bpe: a run end to end, what it
// writes and reports, resuming and fine-tuning a BPE model, and the
// refusals of -tokenizer and -vocab-size.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/cmd/internal/clitest"
)

// formatVersion is the version field of the checkpoint file at path.
func formatVersion(t *testing.T, path string) uint32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 12 {
		t.Fatalf("%s: %v", path, err)
	}
	return binary.LittleEndian.Uint32(b[8:12])
}

// A BPE run learns the merges from the corpus's training part, reports
// the tokenizer and the compression, and writes a version-3 checkpoint
// (with -weights-only, -keep-best and -plot as for characters) that
// generates text and resumes exactly.
func TestTrainBPE(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte(clitest.BPEText), 0o644); err != nil {
		t.Fatal(err)
	}
	out, plot := filepath.Join(dir, "bpe.ckpt"), filepath.Join(dir, "loss.svg")
	args := tinyArgs(out, "-corpus", corpus, "-tokenizer", "bpe", "-vocab-size", "300", "-steps", "6", "-eval-every", "2", "-keep-best", "-plot", plot)
	r := train(context.Background(), nil, args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.msg, r.stderr)
	}

	want, err := minigpt.NewBPEVocab(context.Background(), clitest.BPEText, 300)
	if err != nil {
		t.Fatal(err)
	}
	// The compression by hand: the text's characters over the tokens of
	// its two parts, split at the 90% character and encoded apart.
	runes := []rune(clitest.BPEText)
	k := len(runes) * 9 / 10
	trainIDs, _ := want.Encode(string(runes[:k]))
	valIDs, _ := want.Encode(string(runes[k:]))
	perToken := fmt.Sprintf("%.2f characters per token", float64(len(runes))/float64(len(trainIDs)+len(valIDs)))
	for _, s := range []string{
		"learnt byte-level BPE, 300 tokens (44 merges) from the training part of " + corpus,
		fmt.Sprintf("(%d training, %d validation tokens; byte-level BPE, 300 tokens (44 merges), %s)", len(trainIDs), len(valIDs), perToken),
	} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
	if len(trainIDs)+len(valIDs) >= len(runes) {
		t.Fatalf("%d tokens for %d characters: the merges do not compress", len(trainIDs)+len(valIDs), len(runes))
	}

	best := filepath.Join(dir, "bpe.best.ckpt")
	for _, f := range []string{out, best} {
		if v := formatVersion(t, f); v != 3 {
			t.Errorf("%s: format version %d, want 3", f, v)
		}
	}
	c := load(t, out)
	if c.Vocab.Size() != 300 || !cli.IsBPE(c.Vocab) || c.Model.Config().VocabSize != 300 || c.Step != 6 {
		t.Fatalf("checkpoint: %s, config %+v, step %d", c.Vocab, c.Model.Config(), c.Step)
	}
	for id := range want.Size() {
		if c.Vocab.Token(id) != want.Token(id) {
			t.Fatalf("token %d is %q, NewBPEVocab's %q", id, c.Vocab.Token(id), want.Token(id))
		}
	}
	if svg, err := os.ReadFile(plot); err != nil || !strings.Contains(string(svg), "BPE of 300 tokens") {
		t.Errorf("the plot's title does not name the tokenizer (%v)", err)
	}
	// Text the lessons' vocabulary lacks is no problem for the tokens.
	res, err := c.Model.Complete(context.Background(), c.Vocab, "Über ZEBRA 🙂 ", minigpt.GenerateOptions{MaxNewTokens: 10, Seed: 1})
	if err != nil || len(res[0].IDs) != 10 {
		t.Errorf("generating: %v, %+v", err, res)
	}

	// Three steps, saved, resumed to six: the six-step run's weights.
	half := filepath.Join(dir, "half.ckpt")
	halfArgs := tinyArgs(half, "-corpus", corpus, "-tokenizer", "bpe", "-vocab-size", "300", "-steps", "3", "-eval-every", "2")
	if r := train(context.Background(), nil, halfArgs...); r.code != 0 {
		t.Fatalf("3 steps: exit %d: %s", r.code, r.msg)
	}
	if r := train(context.Background(), nil, "-resume", half, "-corpus", corpus, "-steps", "6"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.msg)
	}
	if resumed := load(t, half); !sameParams(resumed.Model.Params(), c.Model.Params()) || formatVersion(t, half) != 3 {
		t.Error("3 steps resumed to 6 differ from 6 steps")
	}

	// Fine-tuning on another text keeps the checkpoint's tokens, whatever
	// characters the text has; weights-only is version 3 too.
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("ZEBRA 🙂 the keeper — Ångström ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	tuned := filepath.Join(dir, "tuned.ckpt")
	r = train(context.Background(), nil, "-init-from", out, "-corpus", other, "-steps", "2", "-batch", "2", "-eval-batches", "1", "-weights-only", "-out", tuned)
	if r.code != 0 {
		t.Fatalf("-init-from: exit %d: %s", r.code, r.msg)
	}
	if !strings.Contains(r.stderr, "fine-tuning "+out+": ") || !strings.Contains(r.stderr, "tokens; byte-level BPE, 300 tokens (44 merges)") {
		t.Errorf("-init-from's report:\n%s", r.stderr)
	}
	ct := load(t, tuned)
	if ct.Train != nil || formatVersion(t, tuned) != 3 || ct.Vocab.String() != c.Vocab.String() {
		t.Errorf("-init-from -weights-only wrote %s, full %v, version %d", ct.Vocab, ct.Train != nil, formatVersion(t, tuned))
	}
}

// -tokenizer and -vocab-size are refused where they cannot apply, before
// any work.
func TestTokenizerRefusals(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(ckpt)...); r.code != 0 {
		t.Fatal(r.msg)
	}
	out := filepath.Join(dir, "out.ckpt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-vocab-size", "300"}, "-vocab-size is the size of a BPE vocabulary: give -tokenizer bpe too"},
		{[]string{"-tokenizer", "char", "-vocab-size", "300"}, "give -tokenizer bpe too"},
		{[]string{"-tokenizer", "words"}, `invalid value "words" for flag -tokenizer: want char or bpe`},
		{[]string{"-tokenizer", "bpe", "-vocab-size", "255"}, `invalid value "255" for flag -vocab-size: want 256 (the bytes alone) to 131072`},
		{[]string{"-tokenizer", "bpe", "-vocab-size", "131073"}, "want 256 (the bytes alone) to 131072"},
		{[]string{"-resume", ckpt, "-tokenizer", "bpe"}, "-tokenizer cannot be combined with -resume"},
		{[]string{"-resume", ckpt, "-vocab-size", "300"}, "-vocab-size cannot be combined with -resume"},
		{[]string{"-init-from", ckpt, "-tokenizer", "bpe"}, "-tokenizer cannot be combined with -init-from: the model reads the tokens of its checkpoint's vocabulary"},
		{[]string{"-init-from", ckpt, "-tokenizer", "char"}, "-tokenizer cannot be combined with -init-from"},
		{[]string{"-init-from", ckpt, "-vocab-size", "300"}, "-vocab-size cannot be combined with -init-from"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := train(context.Background(), nil, append(tc.args, "-out", out)...)
			if r.code != 2 || !strings.Contains(r.msg, tc.want) {
				t.Errorf("exit %d, %q; want 2 and %q", r.code, r.msg, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a refused run wrote its -out")
			}
		})
	}
}

// An interrupt while the merges are learnt is an interrupt (130), not a
// refusal, and writes nothing.
func TestInterruptWhileLearningBPE(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "m.ckpt")
	r := train(ctx, nil, tinyArgs(out, "-tokenizer", "bpe")...)
	if r.code != 130 || !strings.Contains(r.msg, "interrupted while learning the BPE merges; nothing saved") {
		t.Errorf("exit %d, %q", r.code, r.msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an interrupted run wrote its -out")
	}
}
