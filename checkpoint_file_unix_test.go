//go:build unix

package minigpt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt/internal/testutil"
)

// The case at the checkpoint level: SaveCheckpoint used to rename
// its temporary file over whatever was at the path — a device node made
// like /dev/null, a FIFO, a symbolic link — and gave a 0600 checkpoint
// back as 0644.
func TestSaveCheckpointSafety(t *testing.T) {
	c := fuzzSeedTrainer(t, false).Checkpoint()
	_, paths, linked := testutil.SpecialFiles(t)
	for kind, path := range paths {
		was, _ := os.Lstat(path)
		err := SaveCheckpoint(path, c)
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), path) {
			t.Errorf("SaveCheckpoint over a %s = %v, want ErrNotRegularFile naming the path", strings.TrimSpace(kind), err)
		}
		if now, err := os.Lstat(path); err != nil || !os.SameFile(was, now) || now.Mode() != was.Mode() {
			t.Errorf("the %s at %s was replaced", strings.TrimSpace(kind), path)
		}
	}
	if got := mustRead(t, linked); got != "linked" {
		t.Errorf("the symbolic link's target now holds %q", got)
	}

	private := filepath.Join(t.TempDir(), "private.ckpt")
	if err := SaveCheckpoint(private, c); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SaveCheckpoint(private, c); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(private); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a 0600 checkpoint saved over comes back %v (%v)", fi.Mode().Perm(), err)
	}
}

// LoadCheckpoint refuses a FIFO at once instead of blocking in open until
// a writer comes (which no signal could interrupt).
func TestLoadCheckpointDoesNotBlockOnFIFO(t *testing.T) {
	_, paths, _ := testutil.SpecialFiles(t)
	for _, kind := range []string{"named pipe (FIFO)", "directory"} {
		path, ok := paths[kind]
		if !ok {
			continue
		}
		done := make(chan error, 1)
		go func() { _, err := LoadCheckpoint(path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind) {
				t.Errorf("LoadCheckpoint(%s) = %v, want ErrNotRegularFile naming the path and %q", path, err, kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadCheckpoint(%s) still blocked after 10 s", path)
		}
	}
}
