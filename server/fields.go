package server

// This file owns decoding a request body: reading it within its cap, and
// each JSON field with an error that names it and its value.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"
)

// readBody reads the whole body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errorWithStatus(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				"request body is larger than this server's limit of %d bytes", mbe.Limit)
		}
		return nil, errorWithStatus(http.StatusBadRequest, "invalid_request_error", "unreadable_body", "reading the request body: %v", err)
	}
	return body, nil
}

// fields is a decoded JSON object whose values are decoded one at a time,
// so that every error names its field.
type fields map[string]json.RawMessage

func decodeObject(data []byte) (fields, *apiError) {
	if !utf8.Valid(data) {
		return nil, errorWithStatus(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not valid UTF-8")
	}
	var f fields
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&f)
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the JSON object")
	}
	if err == nil && f == nil {
		err = errors.New("the body is null, want a JSON object")
	}
	if err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			err = fmt.Errorf("the body is a JSON %s, want an object", ute.Value)
		}
		return nil, errorWithStatus(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not a JSON object: %v", err)
	}
	return f, nil
}

// readObject reads a body of at most limit bytes as a JSON object whose
// fields are all in known; an unknown field is a 400 that names it and
// says what is accepted (accepts: "this server accepts a, b").
func readObject(w http.ResponseWriter, r *http.Request, limit int64, known []string, accepts string) (fields, *apiError) {
	body, aerr := readBody(w, r, limit)
	if aerr != nil {
		return nil, aerr
	}
	f, aerr := decodeObject(body)
	if aerr != nil {
		return nil, aerr
	}
	for name := range f {
		if !slices.Contains(known, name) {
			return nil, badParam(name, "unknown_parameter", "unknown parameter %q: %s", name, accepts)
		}
	}
	return f, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func wrongType(name, want string, raw json.RawMessage) *apiError {
	v := string(raw)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return badParam(name, "invalid_type", "%s must be %s, got %s (%s)", name, want, jsonKind(raw), v)
}

// number sets *dst from field name, if present and not null, checking it
// lies in [lo, hi]; rule describes the range for the error message.
func (f fields) number(name string, dst *float64, lo, hi float64, rule string) *apiError {
	raw, ok := f[name]
	if !ok || isNull(raw) {
		return nil
	}
	var v float64
	if jsonKind(raw) != "a number" {
		return wrongType(name, "a number", raw)
	}
	if json.Unmarshal(raw, &v) != nil {
		return badParam(name, "invalid_value", "%s %s is out of range: it must be %s", name, raw, rule)
	}
	if !(v >= lo && v <= hi) {
		return badParam(name, "invalid_value", "%s %s is out of range: it must be %s", name, raw, rule)
	}
	*dst = v
	return nil
}

// integer sets *dst from field name, if present and not null: a JSON
// number with an integer value (1.0 is accepted, 1.5 is not) in [lo, hi].
func (f fields) integer(name string, dst *int, lo, hi int) *apiError {
	raw, ok := f[name]
	if !ok || isNull(raw) {
		return nil
	}
	var v float64
	if jsonKind(raw) != "a number" {
		return wrongType(name, "an integer", raw)
	}
	if json.Unmarshal(raw, &v) != nil {
		return badParam(name, "invalid_value", "%s %s is out of range: it must be in [%d, %d]", name, raw, lo, hi)
	}
	if v != math.Trunc(v) {
		return badParam(name, "invalid_type", "%s must be an integer, got %s", name, raw)
	}
	if v < float64(lo) || v > float64(hi) {
		return badParam(name, "invalid_value", "%s %s is out of range: it must be in [%d, %d]", name, raw, lo, hi)
	}
	*dst = int(v)
	return nil
}

func (f fields) boolean(name string, dst *bool) *apiError {
	raw, ok := f[name]
	if !ok || isNull(raw) {
		return nil
	}
	if json.Unmarshal(raw, dst) != nil {
		return wrongType(name, "true or false", raw)
	}
	return nil
}

func (f fields) str(name string, dst *string) *apiError {
	raw, ok := f[name]
	if !ok || isNull(raw) {
		return nil
	}
	if json.Unmarshal(raw, dst) != nil {
		return wrongType(name, "a string", raw)
	}
	return nil
}

// prompt reads prompt (a string or an array of strings) and encodes each
// with the model's vocabulary.
func (f fields) prompt(req *completionRequest, maxChars int) *apiError {
	raw, ok := f["prompt"]
	if !ok || isNull(raw) {
		return badParam("prompt", "missing_parameter", "prompt is required: the text to continue")
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		req.prompts = []string{one}
	} else if err := json.Unmarshal(raw, &req.prompts); err != nil {
		if jsonKind(raw) == "an array" {
			return badParam("prompt", "invalid_type", "prompt must be a string or an array of strings: token-id prompts are not supported, send the text (this is a character model)")
		}
		return wrongType("prompt", "a string or an array of strings", raw)
	}
	if len(req.prompts) == 0 {
		return badParam("prompt", "invalid_value", "prompt is an empty array: give at least one string")
	}
	for i, p := range req.prompts {
		where := "prompt"
		if len(req.prompts) > 1 || jsonKind(raw) == "an array" {
			where = fmt.Sprintf("prompt[%d]", i)
		}
		n := utf8.RuneCountInString(p)
		switch {
		case n == 0:
			return badParam("prompt", "invalid_value", "%s is empty: a character model needs at least one character to continue", where)
		case n > maxChars:
			return badParam("prompt", "invalid_value", "%s has %d characters, above this server's limit of %d", where, n, maxChars)
		}
		ids, err := req.model.vocab.Encode(p)
		if err != nil {
			return badParam("prompt", "unknown_character", "%s: %v (model %s knows only %q)", where, err, req.model.name, string(req.model.vocab.Chars()))
		}
		req.promptIDs = append(req.promptIDs, ids)
	}
	return nil
}

// seed reads seed: an integer in [0, 2^64). Without one the server picks
// one below 2^53, so that JavaScript clients can send it back exactly.
func (f fields) seed(req *completionRequest) *apiError {
	raw, ok := f["seed"]
	if !ok || isNull(raw) {
		req.seed = randomSeed()
		return nil
	}
	if jsonKind(raw) != "a number" {
		return wrongType("seed", "an integer", raw)
	}
	s := string(bytes.TrimSpace(raw))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// Accept 5.0 or 1e3, as a JavaScript client may send.
		x, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || x != math.Trunc(x) || x < 0 || x >= 1<<64 {
			return badParam("seed", "invalid_value", "seed %s must be an integer in [0, 2^64)", s)
		}
		v = uint64(x)
	}
	req.seed, req.seedGiven = v, true
	return nil
}

// stop reads stop: a string or up to four strings.
func (f fields) stop(sp *sampling) *apiError {
	raw, ok := f["stop"]
	if !ok || isNull(raw) {
		return nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		sp.stop = []string{one}
	} else if err := json.Unmarshal(raw, &sp.stop); err != nil {
		return wrongType("stop", "a string or an array of strings", raw)
	}
	if len(sp.stop) > maxStops {
		return badParam("stop", "invalid_value", "stop has %d strings, at most %d are allowed", len(sp.stop), maxStops)
	}
	for i, s := range sp.stop {
		if n := utf8.RuneCountInString(s); n == 0 || n > maxStopChars {
			return badParam("stop", "invalid_value", "stop[%d] %q must have 1 to %d characters", i, s, maxStopChars)
		}
	}
	return nil
}

// logitBias reads logit_bias: {"token id": bias}, ids in the model's
// vocabulary (GET /v1/models/{model} lists it), biases in [-100, 100].
func (f fields) logitBias(sp *sampling, V int) *apiError {
	raw, ok := f["logit_bias"]
	if !ok || isNull(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || jsonKind(raw) != "an object" {
		return wrongType("logit_bias", `an object {"token id": bias}`, raw)
	}
	if len(m) == 0 {
		return nil
	}
	sp.logitBias = make(map[int]float64, len(m))
	for k, v := range m {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= V || strconv.Itoa(id) != k {
			return badParam("logit_bias", "invalid_value", "logit_bias key %q is not a token id of this model: ids are 0 to %d (GET /v1/models/{model} lists the characters)", k, V-1)
		}
		var b float64
		if jsonKind(v) != "a number" || json.Unmarshal(v, &b) != nil {
			return badParam("logit_bias", "invalid_type", "logit_bias[%q] must be a number, got %s", k, v)
		}
		if !(b >= -100 && b <= 100) {
			return badParam("logit_bias", "invalid_value", "logit_bias[%q] %s is out of range: it must be in [-100, 100]", k, v)
		}
		sp.logitBias[id] = b
	}
	return nil
}
