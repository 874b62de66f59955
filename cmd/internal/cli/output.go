package cli

import "io"

// CheckedWriter passes writes to w and keeps the first error, so that a
// command can write its output in many small pieces and check once at
// the end: "generate -compare > /dev/full" must fail, not exit 0. After
// an error every further write fails with it, without writing.
type CheckedWriter struct {
	w   io.Writer
	err error
}

// NewCheckedWriter returns a CheckedWriter writing to w.
func NewCheckedWriter(w io.Writer) *CheckedWriter { return &CheckedWriter{w: w} }

// Write writes p to the underlying writer unless an earlier write failed.
func (c *CheckedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}

// Err returns the first write error, or nil.
func (c *CheckedWriter) Err() error { return c.err }
