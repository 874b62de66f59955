package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
)

// vocabulary, found piece by piece, is the library's own NewVocab,
// whatever the pieces cut through (here every few bytes, inside
// multi-byte characters too).
func TestVocabularyIsNewVocab(t *testing.T) {
	defer func(n int) { vocabPiece = n }(vocabPiece)
	for _, text := range []string{
		minigpt.LanternBay,
		"ab",
		"héllo wörld — ünïcödé 日本語 \U0001F600 and \x7f ASCII\n\t",
		strings.Repeat("zß€\U0001F600a", 50),
	} {
		want, err := minigpt.NewVocab(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 2, 3, 5, 7, 1 << 20} {
			vocabPiece = piece
			got, err := vocabulary(text, nil)
			if err != nil || !slices.Equal(got.Chars(), want.Chars()) {
				t.Errorf("piece %d of %.20q: %q, %v; want %q", piece, text, string(got.Chars()), err, string(want.Chars()))
			}
		}
	}
}

// Before the first step, a large corpus shows its reading, its
// characters being found and its encoding (an estimate, said so), and a
// large model its loading and saving: with -progress, or on a terminal;
// never into standard error that is neither.
func TestStartUpProgress(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "big.txt")
	text := strings.Repeat(minigpt.LanternBay, 1700) // 17 MB, above largeCorpus
	if err := os.WriteFile(corpus, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.ckpt")
	args := tinyArgs(out, "-corpus", corpus, "-steps", "1", "-batch", "1", "-force")
	_, quiet, err := runTrain(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(quiet, "%") {
		t.Errorf("progress without -progress:\n%s", quiet)
	}
	_, stderr, err := runTrain(t.Context(), append(args, "-progress")...)
	if err != nil {
		t.Fatal(err)
	}
	clitest.ProgressLines(t, stderr, "reading "+corpus)
	clitest.ProgressLines(t, stderr, "finding the characters of "+corpus)
	if !strings.Contains(stderr, "encoding "+corpus+" (time left estimated): 100% (17.0 of 17.0 MB)") {
		t.Errorf("no end of the encoding's progress:\n%s", stderr)
	}
	if i, j := strings.Index(stderr, "encoding "), strings.Index(stderr, "training "); i < 0 || j < i {
		t.Errorf("the progress does not come before training starts:\n%s", stderr)
	}

	// A large model: its loading (-init-from) and its saving.
	large, _ := clitest.LargeCheckpoint(t)
	tuned := filepath.Join(dir, "tuned.ckpt")
	_, stderr, err = runTrain(t.Context(), "-init-from", large, "-steps", "1", "-batch", "1", "-eval-batches", "1", "-weights-only", "-out", tuned, "-progress")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	clitest.ProgressLines(t, stderr, "reading "+large)
	clitest.ProgressLines(t, stderr, "writing "+tuned)
}

// The corpus is refused with the place of what is wrong in it: bytes
// that are not UTF-8, or (fine-tuning) a character the model lacks, by
// line and column in a text of lines.
func TestCorpusPositions(t *testing.T) {
	dir := t.TempDir()
	weights := filepath.Join(dir, "w.ckpt")
	if _, stderr, err := runTrain(t.Context(), tinyArgs(weights, "-weights-only")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := filepath.Join(dir, "lines.txt")
	os.WriteFile(lines, []byte(strings.Repeat("the lamp keeper\n", 20)+"the Keeper"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte(strings.Repeat("the lamp keeper\n", 3)+"the \xfflamp"+strings.Repeat(" keeper", 30)), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{tinyArgs(filepath.Join(dir, "o.ckpt"), "-init-from", weights, "-corpus", lines), `'\n' (U+000A) at character 15 (counting from 0), line 1, column 16 is not in the model's vocabulary`},
		{tinyArgs(filepath.Join(dir, "o.ckpt"), "-corpus", bad), "-corpus " + bad + ": unusable text: not valid UTF-8 (byte offset 52) at character 52 (counting from 0), line 4, column 5"},
	} {
		_, _, err := runTrain(t.Context(), tc.args...)
		if err == nil || exitCode(err, &strings.Builder{}) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want exit 2 and %q", tc.args, err, tc.want)
		}
	}
}

// data/lanternbay.txt is the built-in text written out, byte for byte, so
// that the docs' commands that want a corpus file (python/train_ddp.py
// --text, train -corpus) can use it; it was written with
// os.WriteFile(path, []byte(minigpt.LanternBay), 0o644).
func TestShippedLanternBay(t *testing.T) {
	b, err := os.ReadFile("../../data/lanternbay.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != minigpt.LanternBay {
		t.Fatalf("data/lanternbay.txt (%d bytes) is not minigpt.LanternBay (%d bytes)", len(b), len(minigpt.LanternBay))
	}
}
