//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO given as -prompt-file or -model used to block generate in open,
// where neither SIGINT nor SIGTERM could reach it. It is refused at once.
func TestFIFOInputsDoNotBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-prompt-file", "-model"} {
		_, errOut, code := runWithin(t, 10*time.Second, context.Background(), flag, fifo, "-n", "5")
		if code != 2 || !strings.Contains(errOut, flag) || !strings.Contains(errOut, fifo) || !strings.Contains(errOut, "named pipe (FIFO), not a regular file") {
			t.Errorf("%s FIFO: exit %d, %q; want exit 2 naming the flag, the path and what it is", flag, code, errOut)
		}
	}
}

// -prompt-file - reads standard input; an interrupt while it waits there
// stops the command with status 130.
func TestPromptFromStandardInput(t *testing.T) {
	defer func(r io.Reader) { stdin = r }(stdin)
	stdin = strings.NewReader("\uFEFFthe lamp ")
	out, errOut, code := runWithin(t, 30*time.Second, context.Background(), "-prompt-file", "-", "-greedy", "-n", "10")
	if code != 0 || !strings.HasPrefix(out, "the lamp ") || len([]rune(out)) != 9+10+1 {
		t.Fatalf("exit %d, out %q, err %q: want the prompt from stdin and 10 characters", code, out, errOut)
	}

	stdin = strings.NewReader("")
	if _, errOut, code := runWithin(t, 10*time.Second, context.Background(), "-prompt-file", "-"); code != 2 || !strings.Contains(errOut, "-prompt-file -: is empty") {
		t.Errorf("empty stdin: exit %d, %q", code, errOut)
	}

	r, w, err := os.Pipe() // nobody writes: a terminal nobody types at
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	stdin = r
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel) // Ctrl-C
	if _, errOut, code := runWithin(t, 10*time.Second, ctx, "-prompt-file", "-"); code != 130 {
		t.Errorf("interrupted while reading stdin: exit %d, %q; want 130", code, errOut)
	}
}

// fullWriter fails every write, like /dev/full.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Every output path checks its writes: -compare used to exit 0 with its
// table lost. The device test makes a /dev/full node in a temporary
// directory (as root) and writes to it, as a shell redirection would.
func TestWriteErrorsFail(t *testing.T) {
	outputs := map[string]func(t *testing.T) io.Writer{
		"failing writer": func(*testing.T) io.Writer { return fullWriter{} },
		"full device": func(t *testing.T) io.Writer {
			dev := filepath.Join(t.TempDir(), "full")
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
				t.Skip("cannot make a /dev/full node here:", err)
			}
			f, err := os.OpenFile(dev, os.O_WRONLY, 0)
			if err != nil {
				t.Skip("cannot open the device node (nodev mount?):", err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		},
	}
	for name, stdout := range outputs {
		for _, args := range [][]string{{"-compare"}, {"-greedy", "-n", "20"}, {"-h"}} {
			t.Run(name+" "+strings.Join(args, " "), func(t *testing.T) {
				w := stdout(t)
				var errOut bytes.Buffer
				err := run(context.Background(), args, w, &errOut)
				code := exitCode(err, &errOut)
				if code != 1 || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(errOut.String(), "no space left on device") {
					t.Fatalf("exit %d, %v, stderr %q; want exit 1 reporting the write error", code, err, errOut.String())
				}
			})
		}
	}
	// Standard error too: a -loops report that cannot be written fails.
	var out bytes.Buffer
	err := run(context.Background(), []string{"-greedy", "-n", "20", "-loops"}, &out, fullWriter{})
	if exitCode(err, io.Discard) != 1 {
		t.Fatalf("unwritable stderr: %v, want exit 1", err)
	}
}

// The inconsistencies of the issue, each now refused up front with exit
// status 2 and nothing on standard output.
func TestRefusedUpFront(t *testing.T) {
	big := strings.Repeat("the lamp ", 12_000) + "Zebra" + strings.Repeat(" the lamp", 300) // ~110 KB
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"subnormal temperature", []string{"-temperature", "1e-320", "-n", "40"}, "-temperature 1e-320: must be 0 (greedy) or at least 1e-06"},
		{"tiny temperature", []string{"-temperature", "1e-9"}, "at least 1e-06"},
		{"empty prompt file name", []string{"-prompt-file", ""}, "-prompt-file is empty: give a file name, or - for standard input"},
		{"compare with loop window", []string{"-compare", "-loop-window", "5"}, "-loop-window has no effect there"},
		{"compare with loops", []string{"-compare", "-loops"}, "-loops has no effect there"},
		// A generation that cannot finish (issue 39): a beam search writes
		// nothing before its end, and every beam keeps its text.
		{"beams for ever", []string{"-beams", "2", "-n", "1000000000000"}, "-n 1000000000000: must be in [0, 1048576]"},
		{"n for ever", []string{"-n", "9223372036854775807"}, "-n 9223372036854775807: must be in [0, 1048576]"},
		{"samples for ever", []string{"-samples", "4", "-n", "1048577"}, "-n 1048577: must be in [0, 1048576]"},
		{"huge prompt, unknown character", []string{"-prompt", big}, `'Z' (U+005A) at character 108000 (counting from 0) is not in the model's vocabulary, in …"p the lamp the lamp Zebra the lamp the la"…`}, // 20 characters either side
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runWithin(t, 30*time.Second, context.Background(), tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %.300q; want exit 2 saying %q", code, out, errOut, tc.want)
			}
			if len(errOut) > 400 {
				t.Fatalf("the error is %d bytes long: %.200q…", len(errOut), errOut)
			}
		})
	}
	// The smallest temperature taken works, and gives the greedy text.
	greedy, _, _ := runWithin(t, 30*time.Second, context.Background(), "-greedy", "-n", "40")
	cold, errOut, code := runWithin(t, 30*time.Second, context.Background(), "-temperature", "1e-6", "-n", "40")
	if code != 0 || cold != greedy {
		t.Fatalf("-temperature 1e-6: exit %d (%s), text %q; want the greedy text %q", code, errOut, cold, greedy)
	}
}
