// Package safefile writes files atomically, never replacing anything but a
// regular file the caller allowed it to replace, and opens inputs without
// blocking on a FIFO: the file safety every command of the module relies on.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// ErrNotRegular is wrapped by Save and CheckOutput errors for a
// path that exists and is not a regular file: a directory, a symbolic
// link, a device, a named pipe or a socket. Such a path is never
// replaced, because renaming a file over /dev/null or over a symbolic
// link destroys something the user did not ask us to touch. OpenRegular
// (and so minigpt's LoadCheckpoint) wraps it for an input that is not a regular
// file, which is never read.
var ErrNotRegular = errors.New("not a regular file")

// notRegularError says what a path is instead of a regular file.
type notRegularError struct{ kind string }

func (e notRegularError) Error() string {
	return "is a " + e.kind + ", not a regular file"
}

func (e notRegularError) Is(target error) bool { return target == ErrNotRegular }

// fileKind names the type of a file mode for messages.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	default:
		return "irregular file"
	}
}

// tempName is the temporary file Save writes before renaming it to
// path: hidden, in the same directory (a rename across file systems is
// not atomic), and fixed rather than random, so that a save killed midway
// (kill -9, power loss) leaves at most one stale file per target, which
// the next save of that target removes.
func tempName(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".tmp-minigpt")
}

// statTarget reports what is at path: nil info if nothing, an error
// naming the path if it is not a regular file or cannot be examined.
func statTarget(op, path string) (fs.FileInfo, error) {
	if path == "" {
		return nil, &fs.PathError{Op: op, Path: path, Err: errors.New("empty file name")}
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err // already a *PathError naming path
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: op, Path: path, Err: notRegularError{fileKind(fi.Mode())}}
	}
	return fi, nil
}

// CheckOutput reports, without changing anything the user owns, whether
// Save(path, replace, …) could write path: the name is not empty,
// nothing but a regular file is there (and, unless replace, nothing at
// all), and a file can be created in its directory. Commands call it
// before long work so that the work is never lost at the final save.
//
// An existing file refused for lack of replace gives an error wrapping
// fs.ErrExist; a path that is not a regular file, one wrapping
// ErrNotRegular. Each names the path.
func CheckOutput(path string, replace bool) error {
	fi, err := statTarget("output", path)
	if err != nil {
		return err
	}
	if fi != nil && !replace {
		return &fs.PathError{Op: "output", Path: path, Err: fs.ErrExist}
	}
	// Probe the directory with the very temporary file a save would
	// create (removing a stale one of ours, as a save would).
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// createTemp creates path's temporary file for writing, exclusively,
// after removing a stale one left by a save that was killed. The mode is
// 0644 minus the umask, as for a new file made by os.Create.
func createTemp(path string) (*os.File, error) {
	tmp := tempName(path)
	// Only our own fixed name is ever removed, and only when it is there:
	// on a read-only file system Remove fails even for a missing file,
	// and the error must then say that the directory cannot be written,
	// not speak of a stale file. Remove does not follow a symbolic link,
	// and O_EXCL below refuses whatever could not be removed (a
	// non-empty directory, say).
	if _, err := os.Lstat(tmp); err == nil {
		if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &fs.PathError{Op: "save", Path: path, Err: fmt.Errorf("cannot remove the stale temporary file %s: %w", tmp, cause(err))}
		}
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, syscall.EROFS) {
			return nil, &fs.PathError{Op: "save", Path: path, Err: fmt.Errorf("cannot create a file in %s: it is on a read-only file system: %w", dirOf(path), cause(err))}
		}
		return nil, &fs.PathError{Op: "save", Path: path, Err: fmt.Errorf("cannot create a file in %s: %w", dirOf(path), cause(err))}
	}
	return f, nil
}

// cause is the error inside a *fs.PathError (the path is already named
// by the error that wraps it), or err itself.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func dirOf(path string) string {
	if dir := filepath.Dir(path); dir != "." {
		return dir
	}
	return "the current directory"
}

// Save writes a file atomically: write fills a temporary file in
// path's directory (named .NAME.tmp-minigpt), which is synced to disk and
// then renamed to path, and the directory is synced so that the rename
// survives a crash. At every moment path holds either its old content
// (or nothing) or the complete new content.
//
// Save never replaces anything but a regular file: a directory,
// symbolic link, device, named pipe or socket at path is refused before
// anything is written (ErrNotRegular). With replace false an existing
// file is refused too (fs.ErrExist), also if it appears while write runs.
// A replaced file keeps its permission bits (and, where the process may
// set them, its owner and group); a new one gets 0644 minus the umask.
//
// If write or anything after it fails, the temporary file is removed and
// path is untouched. If the process is killed midway, the temporary file
// stays behind until the next save of the same path removes it. Two
// processes saving the same path at the same time are not supported: one
// of them fails.
func Save(path string, replace bool, write func(io.Writer) error) error {
	old, err := statTarget("save", path)
	if err != nil {
		return err
	}
	if old != nil && !replace {
		return &fs.PathError{Op: "save", Path: path, Err: fs.ErrExist}
	}
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := fillSynced(f, old, write); err != nil {
		f.Close() // already failed; this error adds nothing
		os.Remove(tmp)
		return fmt.Errorf("save %s: %w", path, err)
	}
	// The temporary name must still be our file: another process saving
	// the same path would have replaced it.
	mine, err := f.Stat()
	if err == nil {
		var now fs.FileInfo
		if now, err = os.Lstat(tmp); err == nil && !os.SameFile(mine, now) {
			err = fmt.Errorf("%s was replaced while writing (another save of the same file?)", tmp)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = publish(tmp, path, replace)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err := fsyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("save %s: written, but syncing its directory: %w", path, err)
	}
	return nil
}

// fillSynced runs write on f, gives f the mode (and owner) of the file it
// will replace, if any, and flushes it to stable storage.
func fillSynced(f *os.File, old fs.FileInfo, write func(io.Writer) error) error {
	if err := write(f); err != nil {
		return err
	}
	if old != nil {
		if err := f.Chmod(old.Mode().Perm()); err != nil {
			return err
		}
		keepOwner(f, old)
	}
	return f.Sync()
}

// publish moves the finished temporary file to path. Without replace it
// links rather than renames, because link, unlike rename, fails if path
// exists: a file that appeared while we wrote is not destroyed.
func publish(tmp, path string, replace bool) error {
	if replace {
		// Refuse a non-regular file that appeared while we wrote.
		if _, err := statTarget("save", path); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return fs.ErrExist
	}
	// The file system has no hard links (FAT, some network mounts): check
	// and rename, with a short window in which a new file could be lost.
	if fi, _ := statTarget("save", path); fi != nil {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

// fsyncDir makes a rename in dir durable. Windows cannot sync a directory
// (and does not need to).
func fsyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// OpenRegular opens path for reading if it is a regular file, and refuses
// anything else at once, with a *fs.PathError that wraps
// ErrNotRegular and says what the path is ("is a named pipe (FIFO),
// not a regular file"): a FIFO would block until a writer comes, /dev/zero
// never ends. It is the reading counterpart of Save; minigpt's
// LoadCheckpoint and the commands open every file they read with it.
//
// The open itself is non-blocking, because opening a named pipe otherwise
// waits for a writer, and a signal cannot interrupt that wait; a path
// swapped for a FIFO after some earlier check cannot block either.
func OpenRegular(path string) (*os.File, error) {
	if path == "" {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("empty file name")}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// open(2) refuses a socket itself (ENXIO); say what it is, as
		// for the rest.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, &fs.PathError{Op: "open", Path: path, Err: notRegularError{fileKind(fi.Mode())}}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: notRegularError{fileKind(fi.Mode())}}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
