package server

import (
	"encoding/json"
	"net/http"
)

// eventWriter writes Server-Sent Events: each event is one "data:" line
// holding a JSON value and a blank line, flushed at once so the client
// sees every token as it is generated.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	err     error // the first write error: the client has gone
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	return &eventWriter{w: w, rc: http.NewResponseController(w)}
}

func (e *eventWriter) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a reverse proxy must not buffer the stream
	e.w.WriteHeader(http.StatusOK)
}

// data sends v as one event. JSON never holds a raw newline, so the
// value fits on one data line.
func (e *eventWriter) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw(b)
}

// done sends OpenAI's end-of-stream marker.
func (e *eventWriter) done() error { return e.raw([]byte("[DONE]")) }

func (e *eventWriter) raw(b []byte) error {
	if e.err != nil {
		return e.err
	}
	e.start()
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := e.w.Write(buf); err != nil {
		e.err = err
		return err
	}
	if err := e.rc.Flush(); err != nil {
		e.err = err
	}
	return e.err
}
