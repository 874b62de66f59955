package main

import (
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// TestFullDiskChild is the child of clitest.RunFullDisk; alone, it does
// nothing.
func TestFullDiskChild(t *testing.T) { clitest.FullDiskChild(t, "export", run) }

// A file that does not fit on the disk: status 1, no temporary file
// left. With -logits the safetensors file is written first; when the
// disk fills up there, the logits are not written either.
func TestFullDiskExits1(t *testing.T) {
	dir := t.TempDir()
	code, stderr := clitest.RunFullDisk(t, 64<<10, "-out", filepath.Join(dir, "m.safetensors"), "-logits", filepath.Join(dir, "l.json"))
	if code != 1 || !strings.Contains(stderr, "file too large") {
		t.Fatalf("exit %d, %q; want 1 and the write's error", code, stderr)
	}
	if got := testutil.DirNames(t, dir); len(got) != 0 {
		t.Errorf("the directory holds %q", got)
	}
}
