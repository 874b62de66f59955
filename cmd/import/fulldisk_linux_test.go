package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

// TestFullDiskChild is the child of clitest.RunFullDisk; alone, it does
// nothing.
func TestFullDiskChild(t *testing.T) { clitest.FullDiskChild(t, "import", run) }

// A checkpoint that does not fit on the disk: status 1, the file that
// was at -out intact, no temporary file left.
func TestFullDiskExits1(t *testing.T) {
	dir := t.TempDir()
	in := writeEmbeddedST(t, dir)
	out := filepath.Join(dir, "m.ckpt")
	if err := os.WriteFile(out, []byte("an older file"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := clitest.RunFullDisk(t, 64<<10, "-in", in, "-out", out, "-force")
	if code != 1 || !strings.Contains(stderr, "file too large") {
		t.Fatalf("exit %d, %q; want 1 and the write's error", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "an older file" {
		t.Errorf("-out holds %d bytes, not the older file", len(b))
	}
	if got := testutil.DirNames(t, dir); len(got) != 2 {
		t.Errorf("the directory holds %q", got)
	}
}
