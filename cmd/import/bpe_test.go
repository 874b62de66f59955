package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// A safetensors file of format 2 comes in as a version-3 checkpoint with
// the same tokenizer and weights.
func TestImportBPE(t *testing.T) {
	_, c := clitest.BPECheckpoint(t)
	var st bytes.Buffer
	if err := minigpt.WriteSafetensors(&st, c, "F64"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "bpe.safetensors"), filepath.Join(dir, "bpe.ckpt")
	if err := os.WriteFile(in, st.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := imp(t, "-in", in, "-out", out)
	if r.code != 0 || !strings.Contains(r.stderr, "vocabulary byte-level BPE, 300 tokens (44 merges) (format version 3)") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(out)
	if v := binary.LittleEndian.Uint32(data[8:]); v != 3 {
		t.Errorf("format version %d, want 3", v)
	}
	back, err := minigpt.LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Vocab.String() != c.Vocab.String() || !testutil.BitsEqual(back.Model.Params(), c.Model.Params()) {
		t.Fatal("the checkpoint holds another model")
	}
	text := "über 🙂 the lamp"
	a, _ := back.Vocab.Encode(text)
	b, _ := c.Vocab.Encode(text)
	if !slices.Equal(a, b) {
		t.Errorf("the tokens differ: %v, %v", a, b)
	}
}
