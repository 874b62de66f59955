// Package api holds what every route of the server shares, the
// completions' and the fine-tuning API's alike: OpenAI's error object and
// how it is sent, reading a JSON body field by field with errors that name
// the field, the Content-Type door, and writes to a client under
// deadlines.
package api

// This file owns the API's error objects and how they and other JSON
// answers are sent.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
)

// Error is an error in OpenAI's shape, with the HTTP status it is sent
// with. Every failure the server reports (bad JSON, a bad value, a full
// queue, an unknown path) goes out as one, so any OpenAI client raises
// its own error class for it.
type Error struct {
	// Status is the HTTP status it is sent with.
	Status int `json:"-"`
	// Type is OpenAI's error category: invalid_request_error,
	// authentication_error, permission_error, not_found_error,
	// rate_limit_error, server_error or service_unavailable.
	Type string `json:"type"`
	// Message says what was wrong and where, for a person.
	Message string `json:"message"`
	// Param names the request field at fault, or is null.
	Param *string `json:"param"`
	// Code is a short machine-readable reason, or null.
	Code *string `json:"code"`
	// RetryAfter is the Retry-After header in seconds, for 429 and 503;
	// 0 sends none.
	RetryAfter int `json:"-"`
}

func (e *Error) Error() string { return e.Message }

// Ptr returns &s, or nil for "": the null of Param and Code.
func Ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// BadParam is a 400 naming the parameter: the message should name its
// value too.
func BadParam(param, code, format string, a ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error",
		Message: fmt.Sprintf(format, a...), Param: Ptr(param), Code: Ptr(code)}
}

// NewError is an error with the given status, type and code.
func NewError(status int, typ, code, format string, a ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, a...), Code: Ptr(code)}
}

// Busy is a 429 with Retry-After: retry seconds.
func Busy(code string, retry int, format string, a ...any) *Error {
	e := NewError(http.StatusTooManyRequests, "rate_limit_error", code, format, a...)
	e.RetryAfter = retry
	return e
}

// ShuttingDown is the 503 of a draining server.
func ShuttingDown() *Error {
	e := NewError(http.StatusServiceUnavailable, "service_unavailable", "shutting_down", "the server is shutting down and takes no new requests")
	e.RetryAfter = 1
	return e
}

// WriteError sends e as {"error": {...}} with its status.
func WriteError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(struct {
		Error *Error `json:"error"`
	}{e})
}

// WriteJSON sends v as a 200 JSON answer.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// RequireJSON refuses a request whose Content-Type is not
// application/json (parameters such as charset allowed) with 415. A web
// page can send a form or text/plain to any server without asking; JSON
// needs a CORS preflight, which the server answers only for its CORS
// origin.
func RequireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			WriteError(w, NewError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
				"Content-Type %q is not supported: send the body as JSON with Content-Type: application/json", ct))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// QuoteChar names a character for messages: 'Q' (U+0051).
func QuoteChar(r rune) string { return fmt.Sprintf("%q (%U)", r, r) }
