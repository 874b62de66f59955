//go:build unix

package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.org/minigpt/internal/testutil"
)

// TestSaveFileRefusesNonRegular is the /dev/null case: a device, named
// pipe, socket, symbolic link or directory at the target is refused,
// naming the path and what it is, and is still there afterwards.
func TestSaveFileRefusesNonRegular(t *testing.T) {
	dir, paths, linked := testutil.SpecialFiles(t)
	before := testutil.DirNames(t, dir)
	for kind, path := range paths {
		kind = strings.TrimSpace(kind)
		t.Run(kind+" "+filepath.Base(path), func(t *testing.T) {
			was, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, replace := range []bool{true, false} {
				called := false
				err := Save(path, replace, func(w io.Writer) error { called = true; _, err := io.WriteString(w, "x"); return err })
				for name, err := range map[string]error{"Save": err, "CheckOutput": CheckOutput(path, replace)} {
					if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is a "+kind) {
						t.Errorf("%s(%s, replace %v) = %v, want ErrNotRegular naming the path and %q", name, path, replace, err, kind)
					}
				}
				if called {
					t.Error("Save wrote before refusing")
				}
			}
			now, err := os.Lstat(path)
			if err != nil || now.Mode() != was.Mode() || !os.SameFile(now, was) {
				t.Fatalf("after the refusals %s is %v (%v), was %v", path, now.Mode(), err, was.Mode())
			}
		})
	}
	if got := mustRead(t, linked); got != "linked" {
		t.Fatalf("the symbolic link's target now holds %q", got)
	}
	if after := testutil.DirNames(t, dir); !slices.Equal(after, before) {
		t.Fatalf("directory held %q, now %q", before, after)
	}
}

// An existing file keeps its permission bits; a new one gets 0644 minus
// the umask, as os.Create would.
func TestSaveFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []fs.FileMode{0o600, 0o640, 0o444, 0o755} {
		path := filepath.Join(dir, "kept-"+perm.String())
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		if err := Save(path, true, writeString("new")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != perm {
			t.Errorf("a %v file replaced: mode %v (%v), want %v", perm, fi.Mode().Perm(), err, perm)
		}
	}
	for _, umask := range []int{0o022, 0o077, 0o002} {
		old := syscall.Umask(umask)
		path := filepath.Join(dir, "new-"+fs.FileMode(umask).String())
		err := Save(path, false, writeString("new"))
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o644 &^ umask)
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("new file under umask %03o: mode %v (%v), want %v", umask, fi.Mode().Perm(), err, want)
		}
	}
}

// TestSaveFileKilled kills a process with SIGKILL in the middle of a save
// and checks that it leaves the old file intact and at most one stale
// temporary file, which the next save removes.
func TestSaveFileKilled(t *testing.T) {
	if path := os.Getenv("MINIGPT_SAVE_AND_HANG"); path != "" {
		// The child: start a save and never finish it.
		Save(path, true, func(w io.Writer) error {
			io.WriteString(w, strings.Repeat("partial ", 1000))
			os.Stdout.WriteString("writing\n")
			select {}
		})
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	if err := os.WriteFile(path, []byte("good"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second kill must not add a second stale file
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveFileKilled$")
		cmd.Env = append(os.Environ(), "MINIGPT_SAVE_AND_HANG="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("writing\n"))
		done := make(chan error, 1)
		go func() { _, err := io.ReadFull(out, buf); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("child: %v", err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the child never started writing")
		}
		cmd.Process.Kill() // SIGKILL: no cleanup runs
		cmd.Wait()
		if got := mustRead(t, path); got != "good" {
			t.Fatalf("after the kill the file holds %q", got)
		}
		if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{".run.ckpt.tmp-minigpt", "run.ckpt"}) {
			t.Fatalf("after the kill the directory holds %q, want run.ckpt and one stale temporary file", names)
		}
	}
	if err := Save(path, true, writeString("better")); err != nil {
		t.Fatal(err)
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"run.ckpt"}) {
		t.Fatalf("after the next save the directory holds %q, want only run.ckpt", names)
	}
}

// TestSaveOnReadOnlyFileSystemSaysSo: on a read-only file system the
// error says the directory cannot be written because it is read-only,
// not that a stale temporary file (which does not exist) could not be
// removed. It needs a read-only mount, which it looks for in
// /proc/mounts; it writes nothing there (it cannot).
func TestSaveOnReadOnlyFileSystemSaysSo(t *testing.T) {
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Skip("no /proc/mounts")
	}
	dir := ""
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !slices.Contains(strings.Split(f[3], ","), "ro") {
			continue
		}
		if fi, err := os.Stat(f[1]); err == nil && fi.IsDir() {
			dir = f[1]
			break
		}
	}
	if dir == "" {
		t.Skip("no read-only mount on this machine")
	}
	path := filepath.Join(dir, "minigpt-test-output.ckpt")
	for name, err := range map[string]error{
		"Save":        Save(path, false, writeString("x")),
		"CheckOutput": CheckOutput(path, false),
	} {
		if err == nil {
			t.Fatalf("%s on the read-only %s succeeded", name, dir)
		}
		if msg := err.Error(); strings.Contains(msg, "stale") || !strings.Contains(msg, "read-only") {
			t.Errorf("%s on the read-only %s: %q, want it to say read-only and not speak of a stale file", name, dir, msg)
		}
	}
}
