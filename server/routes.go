package server

// This file owns routing: the ServeMux patterns, and OpenAI-shaped bodies
// for the mux's own 404 and 405 answers.

import (
	"net/http"
	"strings"

	"example.org/minigpt/server/internal/api"
)

// routes returns the mux: GET patterns match HEAD too, and a path served
// under other methods gets the mux's 405 with Allow.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/completions", api.RequireJSON(http.HandlerFunc(s.serveCompletions)))
	mux.Handle("POST /v1/chat/completions", api.RequireJSON(http.HandlerFunc(s.serveChat)))
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /v1/models/{model}", s.serveModel)
	mux.HandleFunc("GET /health", s.serveHealth)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.Handle("POST /v1/score", api.RequireJSON(http.HandlerFunc(s.serveScore)))
	mux.Handle("POST /v1/tokenize", api.RequireJSON(http.HandlerFunc(s.serveTokenize)))
	mux.HandleFunc("GET /v1/tokenizers", s.serveTokenizers)
	s.jobs.Routes(mux)
	mux.HandleFunc("GET /{$}", servePlayground)
	mux.HandleFunc("GET /playground/{file}", servePlayground)
	return mux
}

// jsonMuxErrors serves requests with mux, and turns the mux's own 404 and
// 405 (plain text from http.Error) into OpenAI error objects, keeping the
// 405's Allow header. Handlers' own errors are left alone.
func jsonMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(&muxErrorWriter{ResponseWriter: w, r: r}, r)
	})
}

// muxErrorWriter rewrites a 404 or 405 and drops the mux's text body;
// anything else (the redirects to a cleaned path) passes through.
type muxErrorWriter struct {
	http.ResponseWriter
	r         *http.Request
	rewritten bool
}

func (m *muxErrorWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		m.rewritten = true
		api.WriteError(m.ResponseWriter, notFound(m.r))
	case http.StatusMethodNotAllowed:
		m.rewritten = true
		allow := m.Header().Get("Allow")
		api.WriteError(m.ResponseWriter, api.NewError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"method %s is not allowed on %s: use %s", m.r.Method, m.r.URL.Path, strings.ReplaceAll(allow, ", ", " or ")))
	default:
		m.ResponseWriter.WriteHeader(code)
	}
}

func (m *muxErrorWriter) Write(b []byte) (int, error) {
	if m.rewritten {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

// notFound is the 404 for a path no route serves.
func notFound(r *http.Request) *api.Error {
	return api.NewError(http.StatusNotFound, "invalid_request_error", "unknown_url",
		"unknown path %s %s: this server has POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /v1/models/{model}, POST /v1/score, POST /v1/tokenize, GET /v1/tokenizers, GET /health, GET /metrics and the playground at /", r.Method, r.URL.Path)
}

// routeLabel names r's route for the metrics and the log: its pattern
// without the method ("/v1/models/{model}"), or "other" for a path no
// route serves, so that clients cannot grow the label set.
func routeLabel(mux *http.ServeMux, r *http.Request) string {
	_, pattern := mux.Handler(r)
	if pattern == "" {
		return "other"
	}
	_, path, _ := strings.Cut(pattern, " ")
	return strings.TrimSuffix(path, "{$}")
}
