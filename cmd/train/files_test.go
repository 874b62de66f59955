//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/internal/testutil"
)

// trainResult is one run of the command: its error, exit status and
// reports.
type trainResult struct {
	err    error
	code   int
	msg    string // what exitCode printed
	stderr string
}

func train(ctx context.Context, stderr io.Writer, args ...string) trainResult {
	var errOut bytes.Buffer
	if stderr == nil {
		stderr = &errOut
	}
	err := run(ctx, args, io.Discard, stderr)
	var msg bytes.Buffer
	code := exitCode(err, &msg)
	if b, ok := stderr.(*bytes.Buffer); ok {
		errOut = *b
	}
	return trainResult{err, code, msg.String(), errOut.String()}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestOutputsNeverDestroyFiles is the high-severity case: -out
// or -plot naming a device node (made like /dev/null, in a temporary
// directory), a FIFO, a socket or a symbolic link used to be replaced by
// a regular file. Each is refused before training, naming the path and
// what it is, and is still there afterwards.
func TestOutputsNeverDestroyFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	os.WriteFile(target, []byte("keep"), 0o644)
	special := map[string]string{} // path -> the kind the message names
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		special[filepath.Join(dir, "null")] = "character device"
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err == nil {
		special[filepath.Join(dir, "fifo")] = "named pipe (FIFO)"
	}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		special[filepath.Join(dir, "sock")] = "socket"
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err == nil {
		special[filepath.Join(dir, "link")] = "symbolic link"
	}
	before := testutil.DirNames(t, dir)
	for path, kind := range special {
		was, _ := os.Lstat(path)
		for _, args := range [][]string{
			tinyArgs(path),
			tinyArgs(path, "-force"),
			tinyArgs(filepath.Join(dir, "m.ckpt"), "-plot", path, "-force"),
		} {
			r := train(context.Background(), nil, args...)
			if r.code != 2 || !strings.Contains(r.msg, path+": is a "+kind+", not a regular file") || !strings.Contains(r.msg, "never replaced") {
				t.Errorf("%q: exit %d, %q; want exit 2 naming %s as a %s", args, r.code, r.msg, path, kind)
			}
			if strings.Contains(r.stderr, "training ") {
				t.Errorf("%q: training started before the refusal", args)
			}
		}
		if now, err := os.Lstat(path); err != nil || !os.SameFile(was, now) || now.Mode() != was.Mode() {
			t.Errorf("the %s at %s was replaced", kind, path)
		}
	}
	if got, _ := os.ReadFile(target); string(got) != "keep" {
		t.Errorf("the link's target now holds %q", got)
	}
	if after := testutil.DirNames(t, dir); !slices.Equal(after, before) {
		t.Errorf("the directory held %q, now %q", before, after)
	}
}

// An existing file is replaced only with -force (or as the -resume file);
// a replaced file keeps its mode.
func TestExistingOutputNeedsForce(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(out)...); r.err != nil {
		t.Fatal(r.msg)
	}
	os.Chmod(out, 0o600)
	good := fileSum(t, out)
	for _, args := range [][]string{
		tinyArgs(out, "-steps", "2"),
		tinyArgs(filepath.Join(dir, "other.ckpt"), "-plot", out),
		tinyArgs(filepath.Join(dir, "x.ckpt"), "-keep-best", "-eval-every", "1"),
	} {
		if args[len(args)-1] == "1" { // the -keep-best case: a file in the way of x.best.ckpt
			os.WriteFile(filepath.Join(dir, "x.best.ckpt"), []byte("mine"), 0o644)
		}
		r := train(context.Background(), nil, args...)
		if r.code != 2 || !strings.Contains(r.msg, "the file exists and is not this run's output; pass -force to replace it") {
			t.Errorf("%q: exit %d, %q; want exit 2 asking for -force", args, r.code, r.msg)
		}
	}
	if fileSum(t, out) != good {
		t.Fatal("a refused run changed the existing checkpoint")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "x.best.ckpt")); string(got) != "mine" {
		t.Fatalf("the file in the way of -keep-best now holds %q", got)
	}
	if r := train(context.Background(), nil, tinyArgs(out, "-steps", "2", "-force")...); r.err != nil {
		t.Fatal(r.msg)
	}
	if c := load(t, out); c.Step != 2 {
		t.Fatalf("-force: the checkpoint is at step %d, want the new run's 2", c.Step)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Fatalf("-force replaced a 0600 checkpoint with a %v one", fi.Mode().Perm())
	}
}

// A file that appears at -out while training is not replaced either: the
// final save refuses (exit 1) and leaves it alone.
func TestOutputAppearingMidRunIsKept(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	stderr := &onFirstStep{do: func() { os.WriteFile(out, []byte("someone else's"), 0o644) }}
	r := train(context.Background(), stderr, tinyArgs(out, "-steps", "5")...)
	if r.code != 1 || !strings.Contains(r.msg, "-out "+out+": the file exists") {
		t.Fatalf("exit %d, %q; want exit 1 refusing to replace the new file", r.code, r.msg)
	}
	if got, _ := os.ReadFile(out); string(got) != "someone else's" {
		t.Fatalf("the file that appeared now holds %.20q", got)
	}
}

// onFirstStep is a stderr that runs do (once) when the first progress line
// arrives; with cancel set it cancels the run there, as Ctrl-C would.
type onFirstStep struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	do   func()
}

func (w *onFirstStep) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte("step ")) {
		w.once.Do(w.do)
	}
	return w.buf.Write(p)
}

// The refusals that used to come late or blame the wrong flag.
func TestRefusedBeforeTraining(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// Used to train, then fail at the end: rename ./..tmp-…: no such file.
		{"empty -out", tinyArgs(""), "-out is empty"},
		// Used to blame -out (which defaults to the -resume file).
		{"-resume a directory", []string{"-resume", dir}, "-resume " + dir + ": is a directory, not a regular file"},
		// Used to train at lr 3e-11 without a word.
		{"warmup longer than the run", []string{"-warmup", "99999999", "-steps", "2", "-out", filepath.Join(dir, "m.ckpt")}, `invalid value "99999999" for flag -warmup: longer than the run's -steps 2`},
		{"preset warmup longer than the run", []string{"-preset", "baby", "-steps", "50", "-out", filepath.Join(dir, "m.ckpt")}, `invalid value "100" for flag -warmup: longer than the run's -steps 50, so the learning rate would never get past 0.5 × -lr (the value comes from -preset baby: give -warmup too)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := train(context.Background(), nil, tc.args...)
			if r.code != 2 || !strings.Contains(r.msg, tc.want) || strings.Contains(r.stderr, "training ") {
				t.Fatalf("exit %d, %q (stderr %q); want exit 2 before training, saying %q", r.code, r.msg, r.stderr, tc.want)
			}
		})
	}
	if got := testutil.DirNames(t, dir); len(got) != 0 {
		t.Fatalf("refused runs left %q", got)
	}
}

// Ctrl-C before the first step saves nothing: a resumed run's file stays
// byte for byte, and a fresh run writes no file.
func TestEarlyInterruptSavesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(out)...); r.err != nil {
		t.Fatal(r.msg)
	}
	good := fileSum(t, out)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"-resume", out, "-steps", "10"}, tinyArgs(filepath.Join(dir, "fresh.ckpt"))} {
		r := train(ctx, nil, args...)
		if r.code != 130 || !strings.Contains(r.msg, "interrupted before the first step; nothing saved") {
			t.Errorf("%q: exit %d, %q; want 130 and nothing saved", args, r.code, r.msg)
		}
	}
	if fileSum(t, out) != good {
		t.Fatal("an interrupt before the first step rewrote the checkpoint")
	}
	if got := testutil.DirNames(t, dir); !slices.Equal(got, []string{"m.ckpt"}) {
		t.Fatalf("directory holds %q", got)
	}
}

// Divergence is reported in the numbering of the progress lines, and the
// message says what was saved: nothing when no step succeeded, otherwise
// the last good state, which is what the file then holds.
func TestDivergenceSaysWhatWasSaved(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	r := train(context.Background(), nil, tinyArgs(out, "-lr", "1e300", "-steps", "20")...)
	if r.code != 1 || !errors.Is(r.err, minigpt.ErrNonFinite) {
		t.Fatalf("exit %d, %q; want exit 1 and ErrNonFinite", r.code, r.msg)
	}
	// The last progress line is the last good step, k; the error names k+1.
	var last string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "step ") {
			last = l
		}
	}
	if last == "" {
		// No step succeeded.
		if !strings.Contains(r.msg, "in step 1 of 20; nothing saved") {
			t.Fatalf("message %q", r.msg)
		}
		return
	}
	var k int
	if _, err := fmt.Sscanf(last, "step %d/", &k); err != nil {
		t.Fatalf("progress line %q: %v", last, err)
	}
	want := "in step " + strconv.Itoa(k+1) + " of 20; saved the last good state, step " + strconv.Itoa(k) + ", to " + out
	if !strings.Contains(r.msg, want) {
		t.Fatalf("after %q the message is %q; want it to say %q", last, r.msg, want)
	}
	if c := load(t, out); c.Step != k {
		t.Fatalf("the saved state is at step %d, the message says %d", c.Step, k)
	}
	// Resuming it diverges in the same step, first of this run: nothing
	// is saved, and the file stays as it was.
	good := fileSum(t, out)
	r = train(context.Background(), nil, "-resume", out)
	want = "in step " + strconv.Itoa(k+1) + " of 20; nothing saved"
	if r.code != 1 || !strings.Contains(r.msg, want) {
		t.Fatalf("resuming the diverged run: exit %d, %q; want exit 1 saying %q", r.code, r.msg, want)
	}
	if fileSum(t, out) != good {
		t.Fatal("the diverging resumed run rewrote the checkpoint")
	}
}

// A full checkpoint records its text: resuming on another text with the
// same characters is refused unless -force, which then says so.
func TestResumeOnAnotherCorpus(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(out)...); r.err != nil {
		t.Fatal(r.msg)
	}
	other := filepath.Join(dir, "rotated.txt")
	os.WriteFile(other, []byte(minigpt.LanternBay[7:]+minigpt.LanternBay[:7]), 0o644)
	r := train(context.Background(), nil, "-resume", out, "-corpus", other, "-steps", "5")
	if r.code != 2 || !strings.Contains(r.msg, "was trained on another text than "+other) || !strings.Contains(r.msg, "-force") {
		t.Fatalf("exit %d, %q; want exit 2 refusing the other text", r.code, r.msg)
	}
	if c := load(t, out); c.Step != 3 {
		t.Fatal("the refused resume changed the checkpoint")
	}
	r = train(context.Background(), nil, "-resume", out, "-corpus", other, "-steps", "5", "-force")
	if r.err != nil || !strings.Contains(r.stderr, "-force: continuing") {
		t.Fatalf("-force: %v\n%s", r.err, r.stderr)
	}
	// Lantern Bay is checked by its fingerprint too, not only its vocabulary.
	r = train(context.Background(), nil, "-resume", out, "-steps", "6")
	if r.code != 2 || !strings.Contains(r.msg, "was not trained on the built-in text") {
		t.Fatalf("resuming the rotated run on Lantern Bay: exit %d, %q", r.code, r.msg)
	}
}

// A resumed run's -plot continues the curve: the checkpoint keeps the
// loss history, so the plot has every step, not only the resumed ones.
func TestResumedPlotContinuesTheCurve(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(out, "-steps", "6", "-eval-every", "2")...); r.err != nil {
		t.Fatal(r.msg)
	}
	plot := filepath.Join(dir, "loss.svg")
	if r := train(context.Background(), nil, "-resume", out, "-steps", "12", "-plot", plot); r.err != nil {
		t.Fatal(r.msg)
	}
	svg, _ := os.ReadFile(plot)
	lines := strings.Split(string(svg), "\n")
	var trainPts, valPts int
	for _, l := range lines {
		if strings.HasPrefix(l, `<polyline fill="none" stroke="#4a7fd0"`) {
			trainPts = strings.Count(l, ",")
		}
		if strings.HasPrefix(l, `<circle`) {
			valPts++
		}
	}
	if trainPts != 12 || valPts != 6 {
		t.Fatalf("the plot has %d training and %d validation points, want 12 (steps 1-12) and 6 (every 2 steps)", trainPts, valPts)
	}
}

// On -resume the .best file beside -out is the earlier part's, and is
// replaced; a file there that is not such a checkpoint is someone else's.
func TestResumeKeepBestForeignFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ckpt")
	if r := train(context.Background(), nil, tinyArgs(out, "-eval-every", "1", "-keep-best")...); r.err != nil {
		t.Fatal(r.msg)
	}
	best := filepath.Join(dir, "m.best.ckpt")
	if r := train(context.Background(), nil, "-resume", out, "-steps", "5", "-keep-best"); r.err != nil || !strings.Contains(r.stderr, "to beat") {
		t.Fatalf("resuming with the run's own .best file: %v\n%s", r.err, r.stderr)
	}
	os.WriteFile(best, []byte("my notes"), 0o644)
	r := train(context.Background(), nil, "-resume", out, "-steps", "7", "-keep-best")
	if r.code != 2 || !strings.Contains(r.msg, "is not this run's best checkpoint") || !strings.Contains(r.msg, "-force") {
		t.Fatalf("exit %d, %q; want exit 2 refusing to replace the foreign .best file", r.code, r.msg)
	}
	if got, _ := os.ReadFile(best); string(got) != "my notes" {
		t.Fatalf("the foreign .best file now holds %.20q", got)
	}
	if r := train(context.Background(), nil, "-resume", out, "-steps", "7", "-keep-best", "-force"); r.err != nil {
		t.Fatalf("-force: %v", r.msg)
	}
	if c := load(t, best); c.Step < 6 {
		t.Fatalf("with -force the .best file holds step %d", c.Step)
	}
}
