package server

// This file owns request logging and the per-request metrics.

import (
	"log/slog"
	"net/http"
	"time"
)

// logRequests counts every request in m by route and status (and times
// completions), and logs one line per request to log if it is not nil.
// A request whose client left before anything was sent counts as 499, as
// nginx reports it.
func logRequests(log *slog.Logger, m *metrics, mux *http.ServeMux) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			route := routeLabel(mux, r)
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK
				if r.Context().Err() != nil {
					rec.status = 499
				}
			}
			elapsed := time.Since(start)
			m.request(route, rec.status, elapsed)
			if log != nil {
				log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", elapsed.Round(time.Microsecond))
			}
		})
	}
}

// statusRecorder remembers the status a handler sent, and still lets the
// handler flush and set deadlines.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client (streaming needs it).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError flushes and reports the error of a client that is gone;
// http.ResponseController prefers it to Flush.
func (r *statusRecorder) FlushError() error {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
