package api

// This file owns writes to the client under deadlines.

import (
	"net/http"
	"time"
)

// ClientWriter writes to the client under deadlines: each write must be
// accepted within stall, and none may end after last. A client that
// stops reading makes a write fail (and its request end) instead of
// holding the server.
type ClientWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	last  time.Time
	err   error // the first failed write
}

// NewClientWriter returns a writer to w whose writes each end within
// stall, and all by last.
func NewClientWriter(w http.ResponseWriter, stall time.Duration, last time.Time) *ClientWriter {
	return &ClientWriter{w: w, rc: http.NewResponseController(w), stall: stall, last: last}
}

// arm sets the connection's write deadline for the next write. Without a
// connection (a test's ResponseRecorder) there is none to set.
func (c *ClientWriter) arm() {
	d := time.Now().Add(c.stall)
	if d.After(c.last) {
		d = c.last
	}
	c.rc.SetWriteDeadline(d)
}

// Write writes p under the deadlines; after a failed write every write
// fails with its error.
func (c *ClientWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.arm()
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Flush sends what the ResponseWriter buffers.
func (c *ClientWriter) Flush() error {
	if c.err != nil {
		return c.err
	}
	c.arm()
	if err := c.rc.Flush(); err != nil {
		c.err = err
	}
	return c.err
}

// Err is the first failed write's error, or nil.
func (c *ClientWriter) Err() error { return c.err }
