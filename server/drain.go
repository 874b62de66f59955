package server

// This file owns draining: the 503 every API request gets once shutdown
// has begun.

import (
	"net/http"
	"sync/atomic"
)

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
					writeError(w, shuttingDown())
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
