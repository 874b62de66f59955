package server

// This file owns the Host check that keeps web pages from reaching a
// server on loopback through DNS rebinding.

import (
	"net"
	"net/http"
	"slices"
	"strings"
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
				writeError(w, errorWithStatus(http.StatusForbidden, "invalid_request_error", "host_not_allowed",
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
