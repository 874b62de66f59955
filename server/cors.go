package server

// This file owns CORS: the headers on /v1/ responses and the answer to
// preflight requests.

import "net/http"

// allowCORS sends Access-Control-Allow-Origin: origin on every /v1/
// response (errors included, so that a page can read them) and answers a
// preflight (OPTIONS with Access-Control-Request-Method) to a /v1/ path
// the mux serves with 204 and the methods it serves there. An empty
// origin sends nothing: browsers on other origins cannot call the API,
// and OPTIONS gets the mux's 405.
func allowCORS(origin string, mux *http.ServeMux) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if origin == "" {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isAPI(r) {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "Minigpt-Seed, Retry-After")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				if allow := allowedMethods(mux, r); allow != "" {
					h.Set("Access-Control-Allow-Methods", allow)
					h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
					h.Set("Access-Control-Max-Age", "600")
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// allowedMethods returns the methods the mux serves at r's path, as its
// 405 for an OPTIONS request lists them in Allow ("" for a path it does
// not serve).
func allowedMethods(mux *http.ServeMux, r *http.Request) string {
	h, pattern := mux.Handler(r)
	if pattern != "" {
		return "" // a route answers OPTIONS itself: none does today
	}
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if rec.code != http.StatusMethodNotAllowed {
		return ""
	}
	return rec.header.Get("Allow")
}

// headerRecorder keeps a response's header and status, and drops its body.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
