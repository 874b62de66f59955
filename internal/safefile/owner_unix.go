//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of old, the file it replaces, so
// that a save run as root does not take a user's file away from them.
// Without the privilege to change owners this fails, and the new file is
// then the saver's like any file it creates: a best effort by design.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	f.Chown(int(st.Uid), int(st.Gid)) // best effort, see above
}
