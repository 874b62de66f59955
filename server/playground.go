package server

// This file owns the playground: the embedded page and its assets.

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"

	"example.org/minigpt/server/internal/api"
)

// playgroundFiles is the playground: plain HTML, CSS and JavaScript with
// no build step and no external resource, so it works air-gapped.
//
//go:embed playground
var playgroundFiles embed.FS

var playgroundFS, _ = fs.Sub(playgroundFiles, "playground")

// contentSecurityPolicy lets the page load only its own script and style
// and talk only to this server: no inline script, no other origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// servePlayground serves GET / (the page) and GET /playground/{file}.
func servePlayground(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(playgroundFS, name)
	if err != nil {
		api.WriteError(w, api.NewError(http.StatusNotFound, "invalid_request_error", "unknown_url", "no playground file %q", name))
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	switch {
	case strings.HasSuffix(name, ".html"):
		h.Set("Content-Type", "text/html; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		h.Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Write(b)
}
