package server

// This file owns the API's error objects and how they are sent.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error in OpenAI's shape, with the HTTP status it is sent
// with. Every failure the server reports (bad JSON, a bad value, a full
// queue, an unknown path) goes out as one, so any OpenAI client raises
// its own error class for it.
type apiError struct {
	status int
	// Type is OpenAI's error category: invalid_request_error,
	// authentication_error, not_found_error, rate_limit_error,
	// server_error or service_unavailable.
	Type string `json:"type"`
	// Message says what was wrong and where, for a person.
	Message string `json:"message"`
	// Param names the request field at fault, or is null.
	Param *string `json:"param"`
	// Code is a short machine-readable reason, or null.
	Code *string `json:"code"`

	retryAfter int // seconds, for 429 and 503; 0 sends no header
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badParam is a 400 naming the parameter: the message should name its
// value too.
func badParam(param, code, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error",
		Message: fmt.Sprintf(format, a...), Param: strp(param), Code: strp(code)}
}

func errorWithStatus(status int, typ, code, format string, a ...any) *apiError {
	return &apiError{status: status, Type: typ, Message: fmt.Sprintf(format, a...), Code: strp(code)}
}

// writeError sends e as {"error": {...}} with its status.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}
