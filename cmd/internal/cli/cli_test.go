package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("wrapped: %w", Usagef("-n %d: must be >= 0", -1)), 2, "cmd: wrapped: -n -1: must be >= 0 (run 'cmd -h' for usage)\n"},
		{fmt.Errorf("%w at step 3", ErrInterrupted), 130, "cmd: interrupted at step 3\n"},
		{context.Canceled, 130, "cmd: interrupted\n"},
		{errors.New("disk full"), 1, "cmd: disk full\n"},
	} {
		var buf bytes.Buffer
		if code := ExitCode("cmd", tc.err, &buf); code != tc.code || buf.String() != tc.msg {
			t.Errorf("ExitCode(%v) = %d, %q; want %d, %q", tc.err, code, buf.String(), tc.code, tc.msg)
		}
	}
}

func TestParse(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.Int("n", 3, "how many")
		fs.Bool("v", false, "verbose")
		return fs
	}
	set, err := Parse(newFS(), []string{"-n", "4"}, "", nil)
	if err != nil || !set["n"] || set["v"] {
		t.Fatalf("Parse: %v, set %v", err, set)
	}
	var out bytes.Buffer
	if _, err := Parse(newFS(), []string{"-h"}, "Does things.", &out); !errors.Is(err, flag.ErrHelp) ||
		!strings.HasPrefix(out.String(), "Usage: cmd [flags]\n\nDoes things.\n\nFlags:\n") || !strings.Contains(out.String(), "(default 3)") {
		t.Errorf("-h: %v, %q", err, out.String())
	}
	for _, args := range [][]string{{"-bogus"}, {"-n", "x"}, {"extra"}} {
		var ue UsageError
		if _, err := Parse(newFS(), args, "", nil); !errors.As(err, &ue) {
			t.Errorf("%q: %v is not a UsageError", args, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := ReadFile(write("bom.txt", "\uFEFFhello"), 8); err != nil || got != "hello" {
		t.Errorf("BOM file: %q, %v", got, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{write("big.txt", "123456"), "6 bytes, larger than 5"},
		{dir, "not a regular file"},
		{fifo, "not a regular file"}, // must not block
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		_, err := ReadFile(tc.path, 5)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadFile(%s) = %v; want an error starting with the path and saying %q", tc.path, err, tc.want)
		}
	}
}

// TestReadFileRefusesFromTheSize: a file over the limit is refused from
// its size, without reading it: a sparse file of 1 GiB + 1 byte against a
// 1 GiB limit allocates almost nothing (reading it first took 10 s and
// 2 GB of memory).
func TestReadFileRefusesFromTheSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 30
	if err := f.Truncate(limit + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadFile(path, limit)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("ReadFile of %d bytes with limit %d: %v", limit+1, limit, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing the file allocated %d bytes: it was read", grew)
	}
}
