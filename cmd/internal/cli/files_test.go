package cli

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutput: an existing file is refused up front and at the save,
// naming the flag and saying what to do, unless Replace; an error of the
// content writer comes back as it is, with nothing written; a directory
// is never replaced.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &Output{Flag: "out", Path: path}
	var ue UsageError
	if err := f.Check(); !errors.As(err, &ue) || !strings.Contains(err.Error(), "-out "+path+": the file exists; pass -force") {
		t.Errorf("Check of an existing file: %v", err)
	}
	write := func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }
	if err := f.Save(write); err == nil || !strings.HasPrefix(err.Error(), "-out "+path) {
		t.Errorf("Save over an existing file: %v", err)
	}
	f.Replace = true
	mine := errors.New("the writer's own error")
	if err := f.Save(func(io.Writer) error { return mine }); err != mine {
		t.Errorf("Save with a failing writer: %v, want the writer's error as it is", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("a failed save left %q", b)
	}
	if err := f.Save(write); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("saved %q", b)
	}
	d := &Output{Flag: "plot", Path: dir, Replace: true, Note: "(a directory)"}
	if err := d.Check(); err == nil || !strings.Contains(err.Error(), "-plot "+dir+" (a directory): is a directory") || !strings.Contains(err.Error(), "not even with -force") {
		t.Errorf("Check of a directory: %v", err)
	}
	if !SamePath(path, filepath.Join(dir, ".", "m.ckpt")) || SamePath(path, dir) {
		t.Error("SamePath")
	}
}
