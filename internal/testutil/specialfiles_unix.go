//go:build unix

// specialfiles_unix.go owns SpecialFiles: one of each kind of file that is not a regular file, for the file-safety tests.

package testutil

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SpecialFiles makes, in a fresh temporary directory, one of each thing
// that is not a regular file (never on a real system path) and returns
// the directory, the paths by the kind an error must name, and the
// regular file the symbolic link points to. The kinds: a symbolic link,
// a dangling one (its key "symbolic link " with a trailing space, to keep
// the keys unique: trim it), a FIFO, a character device with /dev/null's
// numbers (as root only), a socket and a directory; a kind this system
// cannot make is left out.
func SpecialFiles(t testing.TB) (dir string, paths map[string]string, linked string) {
	t.Helper()
	dir = t.TempDir()
	paths = map[string]string{}
	linked = filepath.Join(dir, "linked.txt")
	if err := os.WriteFile(linked, []byte("linked"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(linked, filepath.Join(dir, "symlink")); err == nil {
		paths["symbolic link"] = filepath.Join(dir, "symlink")
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling")); err == nil {
		paths["symbolic link "] = filepath.Join(dir, "dangling")
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err == nil {
		paths["named pipe (FIFO)"] = filepath.Join(dir, "fifo")
	}
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		paths["character device"] = filepath.Join(dir, "null")
	} else {
		t.Logf("mknod: %v (not root?); skipping the device case", err)
	}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		paths["socket"] = filepath.Join(dir, "sock")
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths["directory"] = filepath.Join(dir, "subdir")
	return dir, paths, linked
}
