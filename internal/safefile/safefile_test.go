package safefile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/testutil"
)

func TestSaveFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := Save(path, false, writeString("one")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != "one" {
		t.Fatalf("content %q, want %q", got, "one")
	}
	if err := Save(path, true, writeString("two")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); got != "two" {
		t.Fatalf("content %q, want %q", got, "two")
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"out.txt"}) {
		t.Fatalf("directory holds %q, want only out.txt", names)
	}
}

// Without replace, an existing file is refused before anything is
// written, and a file that appears while writing survives.
func TestSaveFileNoReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	err := Save(path, false, func(io.Writer) error { called = true; return nil })
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) || called {
		t.Fatalf("Save over an existing file without replace = %v (write called: %v), want fs.ErrExist naming the path before writing", err, called)
	}

	late := filepath.Join(dir, "late.txt")
	err = Save(late, false, func(w io.Writer) error {
		io.WriteString(w, "ours")
		return os.WriteFile(late, []byte("theirs"), 0o644) // someone else, meanwhile
	})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Save when the target appears midway = %v, want fs.ErrExist", err)
	}
	if got := mustRead(t, late); got != "theirs" {
		t.Fatalf("the file that appeared midway now holds %q", got)
	}
	if got := mustRead(t, path); got != "precious" {
		t.Fatalf("the refused target now holds %q", got)
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"late.txt", "out.txt"}) {
		t.Fatalf("directory holds %q, want no temporary file left", names)
	}
}

func TestSaveFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Save(path, true, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Save = %v, want the writer's error", err)
	}
	if got := mustRead(t, path); got != "old" {
		t.Fatalf("after a failed save the file holds %q, want the old content", got)
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"out.txt"}) {
		t.Fatalf("directory holds %q, want the temporary file removed", names)
	}
}

// A save killed midway leaves its temporary file; the next save of the
// same path removes it, and nothing else.
func TestSaveFileRemovesStaleTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	stale := filepath.Join(dir, ".run.ckpt.tmp-minigpt")
	other := filepath.Join(dir, ".other.ckpt.tmp-minigpt") // another target's: not ours to remove
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Save(path, false, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{".other.ckpt.tmp-minigpt", "run.ckpt"}) {
		t.Fatalf("directory holds %q, want the stale temporary file of run.ckpt gone and the other kept", names)
	}
}

// A symbolic link planted at the temporary name is removed, not written
// through.
func TestSaveFileTempSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.txt")
	if err := os.Symlink(victim, tempName(path)); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := Save(path, false, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, victim); got != "keep me" {
		t.Fatalf("the link's target now holds %q", got)
	}
	if got := mustRead(t, path); got != "new" {
		t.Fatalf("the target holds %q", got)
	}
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.ckpt")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		replace bool
		want    string // "" = no error
	}{
		{"new file", filepath.Join(dir, "new.ckpt"), false, ""},
		{"existing, replace", existing, true, ""},
		{"existing, no replace", existing, false, "file already exists"},
		{"empty name", "", true, "empty file name"},
		{"directory", dir, true, "is a directory, not a regular file"},
		{"missing directory", filepath.Join(dir, "nowhere", "x.ckpt"), false, "cannot create a file in " + filepath.Join(dir, "nowhere")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutput(tc.path, tc.replace)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckOutput(%q, %v) = %v, want nil", tc.path, tc.replace, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("CheckOutput(%q, %v) = %v, want an error naming the path and saying %q", tc.path, tc.replace, err, tc.want)
			}
		})
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"existing.ckpt"}) {
		t.Fatalf("CheckOutput left %q behind", names)
	}
}
