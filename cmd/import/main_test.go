package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

type result struct {
	stdout, stderr string
	code           int
}

// imp runs the command as main would, failing the test if it has not
// returned within a minute (a FIFO must not block it).
func imp(t *testing.T, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := exitCode(run(context.Background(), args, &out, &errOut), &errOut)
		done <- result{out.String(), errOut.String(), code}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(time.Minute):
		t.Fatalf("import %q still running after a minute", args)
		return result{}
	}
}

// writeST writes c as a safetensors file at path.
func writeST(t *testing.T, path string, c *minigpt.Checkpoint, dtype string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := minigpt.WriteSafetensors(&b, c, dtype); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeEmbeddedST writes the embedded model, step 0, as an F64
// safetensors file m.safetensors in dir and returns its path.
func writeEmbeddedST(t *testing.T, dir string) string {
	t.Helper()
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "m.safetensors")
	writeST(t, in, &minigpt.Checkpoint{Model: m, Vocab: vocab}, "F64")
	return in
}

// The embedded model, exported and imported, is the embedded checkpoint
// again, byte for byte: models/lanternbay.ckpt was written by cmd/train,
// not by this path.
func TestImportGivesTheEmbeddedCheckpointBack(t *testing.T) {
	dir := t.TempDir()
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "m.ckpt")
	writeST(t, in, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 1200}, "F64")
	r := imp(t, "-in", in, "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "models", "lanternbay.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the imported checkpoint (%d bytes) is not models/lanternbay.ckpt (%d bytes)", len(got), len(want))
	}
	if !strings.Contains(r.stderr, "wrote "+out+": a weights-only checkpoint") || !strings.Contains(r.stderr, "step 1200") {
		t.Errorf("stderr %q does not say what was written", r.stderr)
	}
}

// F32 weights are widened exactly: the checkpoint holds the float32
// values the file holds.
func TestImportF32(t *testing.T) {
	dir := t.TempDir()
	m, vocab, _ := minigpt.DefaultModel()
	in, out := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "m.ckpt")
	writeST(t, in, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 3}, "F32")
	if r := imp(t, "-in", in, "-out", out); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	c, err := minigpt.LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	got, want := c.Model.Params(), m.Params()
	for j, x := range want {
		if y := got[j]; y != float64(float32(x)) {
			t.Fatalf("parameter %d = %v, want %v as float32", j, y, x)
		}
	}
	if c.Step != 3 || c.Train != nil {
		t.Errorf("step %d, full %v; want 3, weights only", c.Step, c.Train != nil)
	}
}

func TestRefusedBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	m, vocab, _ := minigpt.DefaultModel()
	good := filepath.Join(dir, "good.safetensors")
	file := writeST(t, good, &minigpt.Checkpoint{Model: m, Vocab: vocab}, "F64")
	// A NaN in the last value (head_bias[23]) and a file cut short.
	nan := filepath.Join(dir, "nan.safetensors")
	bad := slices.Clone(file)
	binary.LittleEndian.PutUint64(bad[len(bad)-8:], math.Float64bits(math.NaN()))
	os.WriteFile(nan, bad, 0o644)
	short := filepath.Join(dir, "short.safetensors")
	os.WriteFile(short, file[:len(file)-100], 0o644)
	existing := filepath.Join(dir, "existing.ckpt")
	os.WriteFile(existing, []byte("mine"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(existing, link)
	out := filepath.Join(dir, "new.ckpt")
	before := testutil.DirNames(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-out", out}, "-in is empty"},
		{[]string{"-in", good}, "-out is empty"},
		{[]string{"-in", good, "-out", good, "-force"}, "-in and -out both name " + good},
		{[]string{"-in", good, "-out", existing}, "-out " + existing + ": the file exists; pass -force to replace it"},
		{[]string{"-in", good, "-out", link, "-force"}, "-out " + link + ": is a symbolic link, not a regular file; it is never replaced, not even with -force"},
		{[]string{"-in", good, "-out", fifo, "-force"}, "is a named pipe (FIFO), not a regular file"},
		{[]string{"-in", fifo, "-out", out}, "-in " + fifo + ": is a named pipe (FIFO), not a regular file"},
		{[]string{"-in", dir, "-out", out}, "is a directory, not a regular file"},
		{[]string{"-in", filepath.Join(dir, "missing"), "-out", out}, "no such file"},
		{[]string{"-in", nan, "-out", out}, `-in ` + nan + `: read safetensors: bad checkpoint: safetensors: tensor "head_bias": element [23] is NaN`},
		{[]string{"-in", short, "-out", out}, `tensor "head_bias": truncated`},
		{[]string{"-in", existing, "-out", out}, "not a minigpt checkpoint, nor a safetensors file"},
		{[]string{"-in", good, "-out", out, "extra"}, `unexpected argument "extra"`},
	} {
		r := imp(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if after := testutil.DirNames(t, dir); !slices.Equal(after, before) {
		t.Errorf("refused runs changed the directory: %q, now %q", before, after)
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Errorf("the existing file was replaced (%d bytes now)", len(b))
	}
	os.Chmod(existing, 0o600)
	if r := imp(t, "-in", good, "-out", existing, "-force"); r.code != 0 {
		t.Fatalf("-force: exit %d: %s", r.code, r.stderr)
	}
	if fi, _ := os.Stat(existing); fi.Mode().Perm() != 0o600 {
		t.Errorf("-force replaced a 0600 file with a %v one", fi.Mode().Perm())
	}
	if _, err := minigpt.LoadCheckpoint(existing); err != nil {
		t.Errorf("-force: %v", err)
	}
}

func TestHelp(t *testing.T) {
	r := imp(t, "-h")
	for _, want := range []string{"Usage: import [flags]", "docs/interop.md", "-in", "-force"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("-h: exit %d, lacks %q", r.code, want)
		}
	}
}

// A large model shows the progress of reading and writing it with
// -progress (and on a terminal), and nothing without.
func TestProgress(t *testing.T) {
	ckpt, c := clitest.LargeCheckpoint(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "large.safetensors"), filepath.Join(dir, "large.ckpt")
	writeST(t, in, c, "F64")
	r := imp(t, "-in", in, "-out", out)
	if r.code != 0 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "wrote ") {
		t.Fatalf("without -progress: exit %d, %q", r.code, r.stderr)
	}
	r = imp(t, "-in", in, "-out", out, "-force", "-progress")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	clitest.ProgressLines(t, r.stderr, "reading "+in)
	clitest.ProgressLines(t, r.stderr, "writing "+out)
	// What it wrote is the checkpoint the safetensors file came from.
	got, err := os.ReadFile(out)
	want, _ := os.ReadFile(ckpt)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the import is not the checkpoint exported (%v)", err)
	}
}

// A file of neither format is refused naming the flag, the path and what
// each format starts with.
func TestNeitherFormat(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "model.safetensors")
	os.WriteFile(junk, []byte("<html>not found</html>"), 0o644)
	r := imp(t, "-in", junk, "-out", filepath.Join(dir, "m.ckpt"))
	if r.code != 2 || !strings.HasPrefix(r.stderr, "import: -in "+junk+": bad checkpoint: magic number is \"<html>no\"") ||
		!strings.Contains(r.stderr, `want "\x89GPT\r\n\x1a\n"`) || !strings.Contains(r.stderr, "nor a safetensors file (an 8-byte header length, then '{')") {
		t.Errorf("exit %d: %q", r.code, r.stderr)
	}
}
