//go:build unix

package safefile

// promises_unix_test.go guards documented promises of the package that
// no other test held (docs/testing.md lists them with the rest).

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt/internal/testutil"
)

// TestOpenRegularRefusesAtOnce: OpenRegular "refuses anything else at
// once, with a *fs.PathError that wraps ErrNotRegular and says what the
// path is", without blocking on a FIFO that has no writer; a symbolic
// link to a regular file is followed (it is an input), and a regular file
// opens.
func TestOpenRegularRefusesAtOnce(t *testing.T) {
	_, paths, linked := testutil.SpecialFiles(t)
	for kind, path := range paths {
		kind = strings.TrimSpace(kind)
		done := make(chan error, 1)
		go func() {
			f, err := OpenRegular(path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			switch kind {
			case "symbolic link":
				if err != nil && !strings.Contains(path, "dangling") {
					t.Errorf("a symbolic link to a regular file: %v", err)
				}
			default: // a socket included, which open(2) itself refuses
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) {
					t.Errorf("%s: %v, want an error wrapping ErrNotRegular that says %q", kind, err, kind)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("OpenRegular blocked on the %s", kind)
		}
	}
	f, err := OpenRegular(linked)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "linked" {
		t.Errorf("the regular file read %q, %v", b, err)
	}
	if _, err := OpenRegular(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}
