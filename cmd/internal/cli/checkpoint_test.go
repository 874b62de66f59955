package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"example.org/minigpt"
)

// files writes the embedded model as a minigpt checkpoint and as a
// safetensors file, with names that say nothing of their format.
func files(t *testing.T) (ckpt, st string, want *minigpt.Checkpoint) {
	t.Helper()
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	want = &minigpt.Checkpoint{Model: m, Vocab: v, Step: 1200}
	dir := t.TempDir()
	ckpt, st = filepath.Join(dir, "a.weights"), filepath.Join(dir, "b.weights")
	if err := minigpt.SaveCheckpoint(ckpt, want); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := minigpt.WriteSafetensors(&buf, want, "F64"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return ckpt, st, want
}

func TestLoadCheckpointEitherFormat(t *testing.T) {
	ckpt, st, want := files(t)
	for _, path := range []string{ckpt, st} {
		c, err := LoadCheckpoint("model", path, ProgressOut{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !slices.Equal(c.Model.Params(), want.Model.Params()) || !slices.Equal(c.Vocab.Chars(), want.Vocab.Chars()) || c.Step != want.Step {
			t.Errorf("%s: not the model written", path)
		}
	}
}

func TestLoadCheckpointRefusals(t *testing.T) {
	ckpt, _, _ := files(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		// Neither format: the message says what each starts with.
		{write("notes.txt", []byte("hello, world\n")), []string{"-model ", "notes.txt: bad checkpoint: magic number is \"hello, w\"", `"\x89GPT\r\n\x1a\n"`, "safetensors", "8-byte header length, then '{'"}},
		{write("empty.ckpt", nil), []string{"empty.ckpt: bad checkpoint: the file is empty: " + Formats}},
		{write("long.ckpt", append(good, 0)), []string{"long.ckpt: bad checkpoint: data after the checksum"}},
		{write("short.ckpt", good[:len(good)/2]), []string{"short.ckpt: bad checkpoint: "}},
		{fifo, []string{"-model ", "fifo: ", "not a regular file"}},
		{filepath.Join(dir, "missing.ckpt"), []string{"-model ", "missing.ckpt: ", "no such file"}},
	} {
		_, err := LoadCheckpoint("model", tc.path, ProgressOut{})
		if err == nil {
			t.Errorf("%s: loaded", tc.path)
			continue
		}
		if !strings.HasPrefix(err.Error(), "-model "+tc.path) {
			t.Errorf("%s: %q does not start with the flag and the path", tc.path, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.path, err, w)
			}
		}
	}
}

func TestLoadCheckpointProgress(t *testing.T) {
	ckpt, _, _ := files(t)
	defer func(n int64) { progressMinBytes = n }(progressMinBytes)
	var buf bytes.Buffer
	progressMinBytes = 1 << 30
	if _, err := LoadCheckpoint("model", ckpt, ProgressTo(&buf, true)); err != nil || buf.Len() != 0 {
		t.Fatalf("a small file: %v, progress %q", err, buf.String())
	}
	progressMinBytes = 1
	if _, err := LoadCheckpoint("model", ckpt, ProgressTo(&buf, true)); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(ckpt)
	want := "reading " + ckpt + ": 100% (838.0 of 838.0 kB)"
	if fi.Size() != 838016 || !strings.Contains(buf.String(), want) {
		t.Errorf("progress %q, want a line with %q (%d bytes)", buf.String(), want, fi.Size())
	}
}
