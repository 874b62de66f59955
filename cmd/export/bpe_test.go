package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// A BPE model goes out as safetensors format 2 with its tokenizer, and
// -logits runs it on the prompt's tokens, not its characters.
func TestExportBPE(t *testing.T) {
	ckpt, c := clitest.BPECheckpoint(t)
	dir := t.TempDir()
	out, logits := filepath.Join(dir, "bpe.safetensors"), filepath.Join(dir, "logits.json")
	prompt := "naïve café the keeper"
	r := export(t, "-model", ckpt, "-out", out, "-logits", logits, "-logits-prompt", prompt)
	if r.code != 0 || !strings.Contains(r.stderr, "byte-level BPE, 300 tokens (44 merges) (safetensors format 2") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	back := readST(t, out)
	if back.Vocab.String() != c.Vocab.String() || !testutil.BitsEqual(values(back.Model), values(c.Model)) {
		t.Fatal("the file reads back to another model")
	}
	for id := range c.Vocab.Size() {
		if back.Vocab.Token(id) != c.Vocab.Token(id) {
			t.Fatalf("token %d: %q, was %q", id, back.Vocab.Token(id), c.Vocab.Token(id))
		}
	}
	data, _ := os.ReadFile(logits)
	var got struct {
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	ids, _ := c.Vocab.Encode(prompt)
	flat, _ := c.Model.Logits(ids, 1, len(ids))
	if len(got.Tokens) != len(ids) || len(got.Tokens) >= len([]rune(prompt)) || len(got.Logits) != len(ids) || !testutil.BitsEqual(got.Logits[len(ids)-1], flat[(len(ids)-1)*300:]) {
		t.Errorf("-logits: tokens %v, the prompt's %v", got.Tokens, ids)
	}
	// The window is 16 tokens: a longer prompt is refused in tokens.
	long := strings.Repeat("naïve ", 20)
	r = export(t, "-model", ckpt, "-out", filepath.Join(dir, "x.safetensors"), "-logits", filepath.Join(dir, "x.json"), "-logits-prompt", long)
	if r.code != 2 || !strings.Contains(r.stderr, " tokens, want 1 to the block size, 16") {
		t.Errorf("a long prompt: exit %d, %q", r.code, r.stderr)
	}
}
