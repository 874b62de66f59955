package main

// This file holds the full-disk test: a tokenizer that does not fit.

import (
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// TestFullDiskChild is the child of clitest.RunFullDisk; alone, it does
// nothing.
func TestFullDiskChild(t *testing.T) { clitest.FullDiskChild(t, "tokenize", run) }

// A tokenizer that does not fit on the disk: status 1, and no file, not
// even a temporary one, is left.
func TestFullDiskExits1(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join("..", "..", "data", "tinyshakespeare.txt")
	code, stderr := clitest.RunFullDisk(t, 1<<10, "-corpus", corpus, "-vocab-size", "1024", "-out", filepath.Join(dir, "t.bpe"))
	if code != 1 || !strings.Contains(stderr, "file too large") {
		t.Fatalf("exit %d, %q; want 1 and the write's error", code, stderr)
	}
	if got := testutil.DirNames(t, dir); len(got) != 0 {
		t.Errorf("the directory holds %q", got)
	}
}
