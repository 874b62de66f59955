package server

// This file owns authentication: the API key on /v1/ paths.

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

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
				writeError(w, errorWithStatus(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
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
