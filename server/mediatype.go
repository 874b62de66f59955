package server

// This file owns the Content-Type check on POST bodies.

import (
	"mime"
	"net/http"
)

// requireJSON refuses a request whose Content-Type is not
// application/json (parameters such as charset allowed) with 415. A web
// page can send a form or text/plain to any server without asking; JSON
// needs a CORS preflight, which the server answers only for CORSOrigin.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, errorWithStatus(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
				"Content-Type %q is not supported: send the body as JSON with Content-Type: application/json", ct))
			return
		}
		next.ServeHTTP(w, r)
	})
}
