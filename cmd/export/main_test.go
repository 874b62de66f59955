package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
	"example.org/minigpt/internal/testutil"
)

type result struct {
	stdout, stderr string
	code           int
}

func export(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := exitCode(run(context.Background(), args, &out, &errOut), &errOut)
	return result{out.String(), errOut.String(), code}
}

func values(m *minigpt.Model) []float64 { return m.Params() }

func readST(t *testing.T, path string) *minigpt.Checkpoint {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := minigpt.ReadCheckpoint(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExportsTheEmbeddedModel(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.safetensors")
	r := export(t, "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	c := readST(t, out)
	if c.Step != 1200 || c.Model.Config() != m.Config() || string(c.Vocab.Chars()) != string(vocab.Chars()) || !testutil.BitsEqual(values(c.Model), values(m)) {
		t.Fatalf("the export reads as step %d, %+v: not the embedded model", c.Step, c.Model.Config())
	}
	if !strings.Contains(r.stderr, "wrote "+out) || !strings.Contains(r.stderr, "step 1200") {
		t.Errorf("stderr %q does not say what was written", r.stderr)
	}

	// F32: half the data, each value rounded to the nearest float32.
	small := filepath.Join(dir, "m32.safetensors")
	if r := export(t, "-out", small, "-dtype", "F32"); r.code != 0 {
		t.Fatalf("-dtype F32: exit %d: %s", r.code, r.stderr)
	}
	f64, _ := os.Stat(out)
	f32, _ := os.Stat(small)
	if d := f64.Size() - f32.Size() - 4*int64(len(m.Params())); d < 0 || d > 1024 { // the offsets have fewer digits
		t.Errorf("F64 %d bytes, F32 %d: want 4 bytes a parameter less", f64.Size(), f32.Size())
	}
	want := values(m)
	for i, x := range values(readST(t, small).Model) {
		if x != float64(float32(want[i])) {
			t.Fatalf("F32 parameter %d is %v, want %v rounded to float32", i, x, want[i])
		}
	}
}

func TestExportsACheckpoint(t *testing.T) {
	dir := t.TempDir()
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: 3, BlockSize: 4, EmbedDim: 4, Heads: 2, Layers: 3, TiedHead: true}, 5)
	if err != nil {
		t.Fatal(err)
	}
	vocab, _ := minigpt.NewVocab("xyz")
	ckpt := filepath.Join(dir, "tied.ckpt")
	if err := minigpt.SaveCheckpoint(ckpt, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 17}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tied.safetensors")
	if r := export(t, "-model", ckpt, "-out", out); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if c := readST(t, out); c.Step != 17 || c.Model.Config() != m.Config() || !testutil.BitsEqual(values(c.Model), values(m)) {
		t.Fatalf("read back step %d, %+v, or other weights", c.Step, c.Model.Config())
	}
}

// The logits go out as JSON numbers that read back to the same float64
// bits (python/test.sh compares PyTorch's with them).
func TestLogitsFile(t *testing.T) {
	dir := t.TempDir()
	lf := filepath.Join(dir, "logits.json")
	if r := export(t, "-out", filepath.Join(dir, "m.safetensors"), "-logits", lf, "-logits-prompt", "the bay"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Prompt string      `json:"prompt"`
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}
	b, _ := os.ReadFile(lf)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	m, vocab, _ := minigpt.DefaultModel()
	ids, _ := vocab.Encode("the bay")
	want, err := m.Logits(ids, 1, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompt != "the bay" || !slices.Equal(got.Tokens, ids) || len(got.Logits) != len(ids) {
		t.Fatalf("logits file: prompt %q tokens %v, %d rows", got.Prompt, got.Tokens, len(got.Logits))
	}
	if !testutil.BitsEqual(slices.Concat(got.Logits...), want) {
		t.Errorf("the logits read back differ from Model.Logits")
	}
	for _, tc := range []struct{ prompt, want string }{
		{"the bay!", `unusable text: '!' (U+0021) at character 7 (counting from 0) is not in the model's vocabulary`},
		{strings.Repeat("a", 33), "33 characters, want 1 to the block size, 32"},
		{"", "0 characters"},
	} {
		r := export(t, "-out", filepath.Join(dir, "x.safetensors"), "-logits", filepath.Join(dir, "x.json"), "-logits-prompt", tc.prompt)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("-logits-prompt %q: exit %d, %q; want exit 2 saying %q", tc.prompt, r.code, r.stderr, tc.want)
		}
	}
	if slices.Contains(testutil.DirNames(t, dir), "x.safetensors") {
		t.Error("a refused -logits-prompt left the export written")
	}
}

func TestRefusedBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.safetensors")
	os.WriteFile(existing, []byte("mine"), 0o644)
	notCkpt := filepath.Join(dir, "notes.ckpt")
	os.WriteFile(notCkpt, []byte("not a checkpoint"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(existing, link)
	// A model with a weight beyond float32's range.
	m, _ := minigpt.NewModel(minigpt.Config{VocabSize: 2, BlockSize: 2, EmbedDim: 2, Heads: 1, Layers: 1}, 1)
	m.Params()[3] = 1e300 // in the token embedding, the slab's first tensor
	vocab, _ := minigpt.NewVocab("ab")
	huge := filepath.Join(dir, "huge.ckpt")
	if err := minigpt.SaveCheckpoint(huge, &minigpt.Checkpoint{Model: m, Vocab: vocab}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new.safetensors")
	before := testutil.DirNames(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-out is empty"},
		{[]string{"-out", out, "-dtype", "BF16"}, `invalid value "BF16" for flag -dtype: want F64 or F32`},
		{[]string{"-out", out, "-logits-prompt", "the"}, "-logits-prompt is given without -logits"},
		{[]string{"-out", existing}, "-out " + existing + ": the file exists; pass -force to replace it"},
		{[]string{"-out", link, "-force"}, "-out " + link + ": is a symbolic link, not a regular file; it is never replaced, not even with -force"},
		{[]string{"-out", dir, "-force"}, "is a directory, not a regular file"},
		{[]string{"-out", fifo, "-force"}, "is a named pipe (FIFO), not a regular file"},
		{[]string{"-out", out, "-logits", out}, "-out and -logits both name " + out},
		{[]string{"-out", notCkpt, "-model", notCkpt, "-force"}, "-out and -model both name " + notCkpt},
		{[]string{"-out", out, "-model", filepath.Join(dir, "missing.ckpt")}, "-model " + filepath.Join(dir, "missing.ckpt") + ": no such file"},
		{[]string{"-out", out, "-model", fifo}, "-model " + fifo + ": is a named pipe (FIFO)"},
		{[]string{"-out", out, "-model", notCkpt}, "bad checkpoint"},
		{[]string{"-out", out, "-model", huge, "-dtype", "F32"}, `tensor "token_embedding": element [1 1] is 1e+300, beyond the range of F32 (use F64); nothing written`},
		{[]string{"-out", out, "-bogus"}, "flag provided but not defined: -bogus"},
	} {
		r := export(t, tc.args...)
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
	// -force replaces a regular file, keeping its mode.
	os.Chmod(existing, 0o600)
	if r := export(t, "-out", existing, "-force"); r.code != 0 {
		t.Fatalf("-force: exit %d: %s", r.code, r.stderr)
	}
	if fi, _ := os.Stat(existing); fi.Mode().Perm() != 0o600 || readST(t, existing).Step != 1200 {
		t.Errorf("-force: mode %v, or not the export", fi.Mode().Perm())
	}
	if r := export(t, "-out", out, "-model", huge); r.code != 0 {
		t.Errorf("F64 of a weight beyond float32: exit %d: %s", r.code, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	r := export(t, "-h")
	for _, want := range []string{"Usage: export [flags]", "docs/interop.md", "-dtype", "-force", "-logits"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("-h: exit %d, lacks %q", r.code, want)
		}
	}
}

// -model takes a safetensors file too (told by its content): export then
// converts it, here to F32; a file of neither format is refused naming
// the flag, the path and what each format starts with.
func TestExportsASafetensorsFile(t *testing.T) {
	dir := t.TempDir()
	f64, f32 := filepath.Join(dir, "a.weights"), filepath.Join(dir, "b.safetensors")
	if r := export(t, "-out", f64); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := export(t, "-model", f64, "-out", f32, "-dtype", "F32"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, _, _ := minigpt.DefaultModel()
	c := readST(t, f32)
	for i, v := range m.Params() {
		if c.Model.Params()[i] != float64(float32(v)) {
			t.Fatalf("parameter %d is %v, want float32(%v)", i, c.Model.Params()[i], v)
		}
	}
	junk := filepath.Join(dir, "junk.ckpt")
	os.WriteFile(junk, []byte("GIF89a..."), 0o644)
	r := export(t, "-model", junk, "-out", filepath.Join(dir, "c.safetensors"))
	if r.code != 2 || !strings.HasPrefix(r.stderr, "export: -model "+junk+": bad checkpoint: magic number is \"GIF89a..\", want \"\\x89GPT\\r\\n\\x1a\\n\"") || !strings.Contains(r.stderr, "nor a safetensors file (an 8-byte header length, then '{')") {
		t.Errorf("exit %d: %q", r.code, r.stderr)
	}
}

// A large model shows the progress of reading and writing it with
// -progress (and on a terminal), and nothing without.
func TestProgress(t *testing.T) {
	in, _ := clitest.LargeCheckpoint(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "large.safetensors")
	r := export(t, "-model", in, "-out", out)
	if r.code != 0 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "wrote ") {
		t.Fatalf("without -progress: exit %d, %q", r.code, r.stderr)
	}
	r = export(t, "-model", in, "-out", out, "-force", "-progress")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	clitest.ProgressLines(t, r.stderr, "reading "+in)
	lines := clitest.ProgressLines(t, r.stderr, "writing "+out)
	fi, _ := os.Stat(out)
	if want := fmt.Sprintf("(%.1f of %.1f MB)", float64(fi.Size())/1e6, float64(2387224*8+4096)/1e6); !strings.Contains(lines[len(lines)-1], "of "+want[strings.Index(want, "of ")+3:]) {
		t.Errorf("last line %q: want the size of the file, about %s", lines[len(lines)-1], want)
	}
	if c := readST(t, out); c.Model.Config().NumParams() != 2387224 {
		t.Errorf("wrote %d parameters", c.Model.Config().NumParams())
	}
}
