package server

// This file owns the doors every request passes before the mux routes it,
// in the order New chains them: the Host check against DNS rebinding,
// CORS, the 503 while draining, and the API key. (The Content-Type door
// of POST bodies is api.RequireJSON, which the fine-tuning routes share.)

import (
	"crypto/subtle"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"example.org/minigpt/server/internal/api"
)

// checkHost refuses with 403 a request that arrived on a loopback address
// with a Host header naming anything but localhost, a *.localhost name, a
// loopback IP address or one of allowed (lower case, without port). A web
// page can make a browser connect to 127.0.0.1 through a name it controls
// (DNS rebinding), but the browser then sends that name as Host. Requests
// on other addresses, and those served without a connection (a test's
// ServeHTTP), pass.
func checkHost(allowed []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if onLoopback(r) && !loopbackHost(r.Host, allowed) {
				api.WriteError(w, api.NewError(http.StatusForbidden, "invalid_request_error", "host_not_allowed",
					"Host %q is not a loopback name: this server listens on loopback and answers only requests for localhost or a loopback address (a proxy's name can be allowed with -allowed-hosts / Config.AllowedHosts)", r.Host))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// onLoopback reports whether r arrived on a loopback TCP address.
func onLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// loopbackHost reports whether a Host header value (with or without a
// port) names loopback or one of allowed. An empty Host (HTTP/1.0) is
// accepted: a browser always sends one.
func loopbackHost(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return slices.Contains(allowed, host)
}

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

// refuseWhileDraining answers every /v1/ request with 503 and Retry-After
// once draining is set, on any connection (an idle keep-alive one
// included), and asks every client to close its connection so that it
// moves on.
func refuseWhileDraining(draining *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if draining.Load() {
				w.Header().Set("Connection", "close")
				if isAPI(r) {
					api.WriteError(w, api.ShuttingDown())
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// requireAPIKey refuses a /v1/ request without "Authorization: Bearer
// <key>" with 401; an empty key lets every request through. The scheme
// matches in any case, as RFC 7235 says of auth-schemes.
func requireAPIKey(key string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if key == "" {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isAPI(r) && !bearerMatches(r.Header.Get("Authorization"), key) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="minigpt"`)
				api.WriteError(w, api.NewError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
					"missing or wrong API key: send the header Authorization: Bearer <key>"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearerMatches reports whether an Authorization value is the Bearer
// scheme (any case, then one or more spaces) with key as its credentials,
// compared in constant time.
func bearerMatches(header, key string) bool {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	cred = strings.TrimLeft(cred, " ")
	return subtle.ConstantTimeCompare([]byte(cred), []byte(key)) == 1
}

// isAPI reports whether r is for the API, which the key, CORS and
// draining apply to. The decoded path is tested, so that an escaped
// spelling of /v1/ is not a way round them.
func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }
