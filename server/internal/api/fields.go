package api

// This file owns decoding a request body: reading it within its cap, and
// each JSON field with an error that names it and its value.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
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

// ReadBody reads the whole body, at most limit bytes (413 above).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, BodyError(err)
	}
	return body, nil
}

// BodyError is the answer to a failed read of a body that
// http.MaxBytesReader caps: 413 above the cap, 400 otherwise.
func BodyError(err error) *Error {
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return TooLarge(mbe.Limit)
	}
	return NewError(http.StatusBadRequest, "invalid_request_error", "unreadable_body", "reading the request body: %v", err)
}

// TooLarge is the 413 of a body above limit bytes.
func TooLarge(limit int64) *Error {
	return NewError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"request body is larger than this server's limit of %d bytes", limit)
}

// Fields is a decoded JSON object whose values are decoded one at a time,
// so that every error names its field.
type Fields map[string]json.RawMessage

// DecodeObject decodes data, which must be one JSON object in valid UTF-8.
func DecodeObject(data []byte) (Fields, *Error) {
	if !utf8.Valid(data) {
		return nil, NewError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not valid UTF-8")
	}
	var f Fields
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
		return nil, NewError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not a JSON object: %v", err)
	}
	return f, nil
}

// ReadObject reads a body of at most limit bytes as a JSON object whose
// fields are all in known; an unknown field is a 400 that names it and
// says what is accepted (accepts: "this server accepts a, b").
func ReadObject(w http.ResponseWriter, r *http.Request, limit int64, known []string, accepts string) (Fields, *Error) {
	body, aerr := ReadBody(w, r, limit)
	if aerr != nil {
		return nil, aerr
	}
	f, aerr := DecodeObject(body)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := f.Only(known, accepts); aerr != nil {
		return nil, aerr
	}
	return f, nil
}

// Only refuses a field that is not in known with a 400 that names it.
func (f Fields) Only(known []string, accepts string) *Error {
	for name := range f {
		if !slices.Contains(known, name) {
			return BadParam(name, "unknown_parameter", "unknown parameter %q: %s", name, accepts)
		}
	}
	return nil
}

// Has reports whether field name is present and not null.
func (f Fields) Has(name string) bool {
	raw, ok := f[name]
	return ok && !IsNull(raw)
}

// IsNull reports whether raw is JSON's null.
func IsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Kind names the JSON type of raw for error messages: "a string", "an
// object", ...
func Kind(raw json.RawMessage) string {
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

// WrongType is the 400 of field name holding raw where want was due.
func WrongType(name, want string, raw json.RawMessage) *Error {
	v := string(raw)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return BadParam(name, "invalid_type", "%s must be %s, got %s (%s)", name, want, Kind(raw), v)
}

// Number sets *dst from field name, if present and not null, checking it
// lies in [lo, hi]; rule describes the range for the error message.
func (f Fields) Number(name string, dst *float64, lo, hi float64, rule string) *Error {
	raw, ok := f[name]
	if !ok || IsNull(raw) {
		return nil
	}
	var v float64
	if Kind(raw) != "a number" {
		return WrongType(name, "a number", raw)
	}
	if json.Unmarshal(raw, &v) != nil || !(v >= lo && v <= hi) {
		return BadParam(name, "invalid_value", "%s %s is out of range: it must be %s", name, raw, rule)
	}
	*dst = v
	return nil
}

// Integer sets *dst from field name, if present and not null: a JSON
// number with an integer value (1.0 is accepted, 1.5 is not) in [lo, hi].
func (f Fields) Integer(name string, dst *int, lo, hi int) *Error {
	raw, ok := f[name]
	if !ok || IsNull(raw) {
		return nil
	}
	if Kind(raw) != "a number" {
		return WrongType(name, "an integer", raw)
	}
	outOfRange := BadParam(name, "invalid_value", "%s %s is out of range: it must be in [%d, %d]", name, raw, lo, hi)
	// Digits are read exactly; a float64 would round 2^63-1 up to 2^63,
	// which converts to a negative int.
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return outOfRange
		}
		if f != math.Trunc(f) {
			return BadParam(name, "invalid_type", "%s must be an integer, got %s", name, raw)
		}
		if !(f >= -0x1p63 && f < 0x1p63) {
			return outOfRange
		}
		v = int64(f)
	}
	if v < int64(lo) || v > int64(hi) {
		return outOfRange
	}
	*dst = int(v)
	return nil
}

// Bool sets *dst from field name, if present and not null.
func (f Fields) Bool(name string, dst *bool) *Error {
	raw, ok := f[name]
	if !ok || IsNull(raw) {
		return nil
	}
	if json.Unmarshal(raw, dst) != nil {
		return WrongType(name, "true or false", raw)
	}
	return nil
}

// Str sets *dst from field name, if present and not null.
func (f Fields) Str(name string, dst *string) *Error {
	raw, ok := f[name]
	if !ok || IsNull(raw) {
		return nil
	}
	if json.Unmarshal(raw, dst) != nil {
		return WrongType(name, "a string", raw)
	}
	return nil
}

// MaxSeed bounds the seeds the server picks: they stay exact in
// JavaScript.
const MaxSeed = 1<<53 - 1

// Seed reads seed: an integer in [0, 2^64). Without one it returns a seed
// picked at random below 2^53, so that JavaScript clients can send it
// back exactly, and given false.
func (f Fields) Seed() (seed uint64, given bool, aerr *Error) {
	raw, ok := f["seed"]
	if !ok || IsNull(raw) {
		return RandomSeed(), false, nil
	}
	if Kind(raw) != "a number" {
		return 0, false, WrongType("seed", "an integer", raw)
	}
	s := string(bytes.TrimSpace(raw))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// Accept 5.0 or 1e3, as a JavaScript client may send.
		x, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || x != math.Trunc(x) || x < 0 || x >= 1<<64 {
			return 0, false, BadParam("seed", "invalid_value", "seed %s must be an integer in [0, 2^64)", s)
		}
		v = uint64(x)
	}
	return v, true, nil
}

// RandomSeed returns 53 random bits.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) & MaxSeed
}

// NewID returns prefix followed by 24 random hex digits.
func NewID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + fmt.Sprintf("%x", b[:])
}
