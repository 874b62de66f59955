package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runFullDisk runs export with args in a child process (this test binary
// again) whose files may not grow past limit bytes, as on a disk that
// fills up: a write beyond it fails with EFBIG (Go ignores SIGXFSZ). It
// returns the exit status and standard error. The child gets args after
// "--", where the testing package leaves them to flag.Args.
func runFullDisk(t *testing.T, limit int, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestFullDiskChild$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "MINIGPT_FULL_DISK_LIMIT="+strconv.Itoa(limit))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// TestFullDiskChild is the child of runFullDisk; alone, it does nothing.
func TestFullDiskChild(t *testing.T) {
	limit, err := strconv.ParseUint(os.Getenv("MINIGPT_FULL_DISK_LIMIT"), 10, 64)
	if err != nil {
		t.Skip("the child process of runFullDisk")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	os.Exit(exitCode(run(context.Background(), flag.Args(), os.Stdout, os.Stderr), os.Stderr))
}

// A file that does not fit on the disk: status 1, no temporary file
// left. With -logits the safetensors file is written first; when the
// disk fills up there, the logits are not written either.
func TestFullDiskExits1(t *testing.T) {
	dir := t.TempDir()
	code, stderr := runFullDisk(t, 64<<10, "-out", filepath.Join(dir, "m.safetensors"), "-logits", filepath.Join(dir, "l.json"))
	if code != 1 || !strings.Contains(stderr, "file too large") {
		t.Fatalf("exit %d, %q; want 1 and the write's error", code, stderr)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("the directory holds %q", got)
	}
}
