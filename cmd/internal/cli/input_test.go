//go:build unix

package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.org/minigpt"
)

// within fails the test if fn does not return within d: the cases here
// are about not blocking.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(regular, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{regular, ""},
		{fifo, fifo + ": is a named pipe (FIFO), not a regular file"},
		{dir, dir + ": is a directory, not a regular file"},
		{filepath.Join(dir, "missing"), filepath.Join(dir, "missing") + ": no such file or directory"},
		{"", "empty file name"},
	} {
		within(t, 10*time.Second, func() {
			f, err := OpenRegular(tc.path)
			if tc.want == "" {
				if err != nil {
					t.Errorf("OpenRegular(%q) = %v", tc.path, err)
					return
				}
				b, err := io.ReadAll(f)
				f.Close()
				if err != nil || string(b) != "hello" {
					t.Errorf("reading %q: %q, %v", tc.path, b, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("OpenRegular(%q) = %v, want %q", tc.path, err, tc.want)
			}
			if strings.Contains(tc.want, "not a regular file") && !errors.Is(err, minigpt.ErrNotRegularFile) {
				t.Errorf("OpenRegular(%q) = %v, does not wrap minigpt.ErrNotRegularFile", tc.path, err)
			}
			if f != nil {
				f.Close()
			}
		})
	}
}

func TestReadAllContext(t *testing.T) {
	b, err := ReadAllContext(context.Background(), strings.NewReader("abc"), 3)
	if err != nil || string(b) != "abc" {
		t.Fatalf("ReadAllContext = %q, %v", b, err)
	}
	if _, err := ReadAllContext(context.Background(), strings.NewReader("abcd"), 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	// A pipe nobody writes to: cancelling must end the wait.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	within(t, 10*time.Second, func() {
		if _, err := ReadAllContext(ctx, r, 100); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled read = %v, want context.Canceled", err)
		}
	})
}
