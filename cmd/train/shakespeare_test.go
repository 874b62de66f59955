package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"example.org/minigpt"
)

// shakespeareDoc returns the command docs/training.md gives for
// regenerating models/shakespeare.ckpt (its arguments after "go run
// ./cmd/train") and the SHA-256 it states for the file.
func shakespeareDoc(t *testing.T) (args []string, sum string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/training.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile("(?m)^go run ./cmd/train (.* -out models/shakespeare.ckpt)$").FindSubmatch(doc)
	hash := regexp.MustCompile("`models/shakespeare.ckpt` has the SHA-256 `([0-9a-f]{64})`").FindSubmatch(doc)
	if cmd == nil || hash == nil {
		t.Fatal("docs/training.md gives no command for models/shakespeare.ckpt, or no SHA-256 of it")
	}
	return strings.Fields(string(cmd[1])), string(hash[1])
}

// The shipped Shakespeare model is the file docs/training.md describes:
// its SHA-256, and nanoGPT's baby shape on tiny Shakespeare's vocabulary.
func TestShippedShakespeareModel(t *testing.T) {
	_, sum := shakespeareDoc(t)
	b, err := os.ReadFile("../../models/shakespeare.ckpt")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != sum {
		t.Errorf("models/shakespeare.ckpt has SHA-256 %s; docs/training.md says %s", got, sum)
	}
	c, err := minigpt.ReadCheckpoint(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Model.Config()
	if cfg.NumParams() != 816193 || cfg.VocabSize != 65 || cfg.BlockSize != 64 || cfg.EmbedDim != 128 || cfg.Heads != 4 || cfg.Layers != 4 || c.Step != 2000 || c.Train != nil {
		t.Errorf("models/shakespeare.ckpt: %+v, step %d, full %v; want the baby preset's 816193 parameters, step 2000, weights only", cfg, c.Step, c.Train != nil)
	}
}

// TestShakespeareModelIsReproducible runs docs/training.md's command for
// models/shakespeare.ckpt and compares the file it writes with the
// shipped one, byte for byte: the model is provably made from the source.
// It trains for minutes, so it runs only with MINIGPT_LONG_TESTS=1.
func TestShakespeareModelIsReproducible(t *testing.T) {
	if os.Getenv("MINIGPT_LONG_TESTS") != "1" {
		t.Skip("retraining the Shakespeare model takes minutes: set MINIGPT_LONG_TESTS=1")
	}
	args, sum := shakespeareDoc(t)
	out := filepath.Join(t.TempDir(), "shakespeare.ckpt")
	for i, a := range args {
		switch {
		case a == "models/shakespeare.ckpt":
			args[i] = out
		case strings.HasPrefix(a, "data/"):
			args[i] = "../../" + a
		}
	}
	if _, stderr, err := runTrain(t.Context(), args...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != sum {
		t.Fatalf("the command writes a file of SHA-256 %s, models/shakespeare.ckpt is %s: regenerate it with the command in docs/training.md", got, sum)
	}
}
