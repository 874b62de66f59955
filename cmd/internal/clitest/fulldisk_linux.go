package clitest

// This file holds the full-disk runs: a command in a child process whose
// files may not grow past a limit.

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"example.org/minigpt/cmd/internal/cli"
)

// fullDiskEnv passes the limit to the child.
const fullDiskEnv = "MINIGPT_FULL_DISK_LIMIT"

// RunFullDisk runs the command with args in a child process (this test
// binary again, running only its TestFullDiskChild, which must call
// FullDiskChild) whose files may not grow past limit bytes, as on a disk
// that fills up: a write beyond it fails with EFBIG (Go ignores
// SIGXFSZ). It returns the exit status and standard error. The child
// gets args after "--", where the testing package leaves them to
// flag.Args.
func RunFullDisk(t *testing.T, limit int, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestFullDiskChild$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+strconv.Itoa(limit))
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errOut.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, errOut.String()
}

// FullDiskChild is the child of RunFullDisk: it sets the limit, runs the
// command named name and exits with its status. Outside RunFullDisk's
// child it skips the test.
func FullDiskChild(t *testing.T, name string, run Run) {
	limit, err := strconv.ParseUint(os.Getenv(fullDiskEnv), 10, 64)
	if err != nil {
		t.Skip("the child process of RunFullDisk")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	os.Exit(cli.ExitCode(name, run(context.Background(), flag.Args(), os.Stdout, os.Stderr), os.Stderr))
}
