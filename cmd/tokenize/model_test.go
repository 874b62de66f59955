package main

// This file holds the tests of -model: a BPE model's own tokenizer, from
// either checkpoint format, and the refusal of a character model.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
)

func TestModelTokenizer(t *testing.T) {
	ckpt, c := clitest.BPECheckpoint(t)
	var st bytes.Buffer
	if err := minigpt.WriteSafetensors(&st, c, "F32"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	safetensors := writeFile(t, dir, "bpe.weights", st.String())
	text := "the keeper's naïve café 🙂"
	ids, _ := c.Vocab.Encode(text)
	var want []string
	for _, id := range ids {
		want = append(want, strconv.Itoa(id))
	}
	for _, model := range []string{ckpt, safetensors} {
		r := tokenizeCLI(t, "-model", model, "-text", text, "-ids")
		if r.code != 0 || r.stdout != strings.Join(want, " ")+"\n" {
			t.Errorf("-model %s -ids: exit %d, %q (%s); want %q", model, r.code, r.stdout, r.stderr, strings.Join(want, " "))
		}
	}
	r := tokenizeCLI(t, "-model", ckpt, "-merges")
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || lines[0] != c.Vocab.String() || len(lines) != 2+44+1 {
		t.Fatalf("-merges: exit %d, %d lines:\n%s", r.code, len(lines), r.stdout)
	}
	for rank, line := range lines[2 : 2+44] {
		id := 256 + rank
		if !strings.HasPrefix(line, fmt.Sprintf("%d  %d = ", rank, id)) || !strings.HasSuffix(line, " = "+strconv.Quote(c.Vocab.Token(id))) {
			t.Errorf("merge %d: %q, token %d is %q", rank, line, id, c.Vocab.Token(id))
		}
	}
	if r := tokenizeCLI(t, "-model", ckpt, "-decode", "195 169"); r.code != 0 || r.stdout != "é" {
		t.Errorf("-decode: exit %d, %q", r.code, r.stdout)
	}
	lb := filepath.Join("..", "..", "models", "lanternbay.ckpt")
	if r := tokenizeCLI(t, "-model", lb, "-text", "the"); r.code != 2 || !strings.Contains(r.stderr, "-model "+lb+": the model reads 24 characters, one token each, not a BPE tokenizer's") || r.stdout != "" {
		t.Errorf("a character model: exit %d, %q", r.code, r.stderr)
	}
	missing := filepath.Join(dir, "none.ckpt")
	if r := tokenizeCLI(t, "-model", missing, "-text", "the"); r.code != 2 || !strings.Contains(r.stderr, "-model "+missing) {
		t.Errorf("a missing model: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("the missing model appeared")
	}
}
