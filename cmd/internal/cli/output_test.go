package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// failAfter accepts n bytes, then fails like a full disk.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.buf.Len()+len(p) > f.n {
		k := f.n - f.buf.Len()
		f.buf.Write(p[:k])
		return k, errFull
	}
	return f.buf.Write(p)
}

func TestCheckedWriter(t *testing.T) {
	dst := &failAfter{n: 5}
	w := NewCheckedWriter(dst)
	fmt.Fprint(w, "abc")
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
	fmt.Fprint(w, "defg") // fails midway
	fmt.Fprint(w, "h")    // must not be written
	if !errors.Is(w.Err(), errFull) || dst.buf.String() != "abcde" {
		t.Fatalf("Err %v, wrote %q; want the first error and nothing after it", w.Err(), dst.buf.String())
	}
}

// shortWriter reports success on fewer bytes than given.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestCheckedWriterShortWrite(t *testing.T) {
	w := NewCheckedWriter(shortWriter{})
	io.WriteString(w, "abcd")
	if !errors.Is(w.Err(), io.ErrShortWrite) {
		t.Fatalf("Err = %v, want io.ErrShortWrite", w.Err())
	}
}
