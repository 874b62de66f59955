package minigpt

// This file holds the strict JSON a safetensors header is read and
// written with: objects read key by key (so a duplicate name is seen),
// strings that never turn a bad escape into U+FFFD, lists of integers.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string, with characters outside
// ASCII as they are (UTF-8) rather than escaped.
func appendJSONString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// jsonObject decodes data as a JSON object, calling field for each key
// with its value in the order they come, and returns the offset in data
// just after the object. A key given twice is an error.
func jsonObject(data []byte, field func(key string, value json.RawMessage) error) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return 0, jsonError(err)
	} else if tok != json.Delim('{') {
		return 0, fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, jsonError(err)
		}
		key := tok.(string) // inside an object the decoder yields only string keys
		if seen[key] {
			return 0, fmt.Errorf("%q occurs twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, fmt.Errorf("the value of %q: %w", key, jsonError(err))
		}
		if err := field(key, v); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, jsonError(err)
	}
	return int(dec.InputOffset()), nil
}

// jsonError says that the JSON is invalid, where the decoder knows.
func jsonError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if isEOF(err) {
		return fmt.Errorf("invalid JSON: it ends early")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// jsonUints decodes a JSON array of non-negative integers.
func jsonUints(v json.RawMessage) ([]uint64, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || v[0] != '[' {
		return nil, fmt.Errorf("not a list of numbers")
	}
	out := make([]uint64, len(raw))
	for i, r := range raw {
		n, err := strconv.ParseUint(string(bytes.TrimSpace(r)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("entry %d, %s, is not an integer in [0, 2^64)", i, r)
		}
		out[i] = n
	}
	return out, nil
}

// jsonStringStrict decodes a JSON string, refusing what encoding/json
// would silently replace by U+FFFD (an unpaired surrogate escape such as
// "\ud800"), so that a vocabulary is never changed on the way in. The
// bytes are valid UTF-8 and valid JSON already.
func jsonStringStrict(raw json.RawMessage) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("not a string")
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(s) {
			return 0, false
		}
		n, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("a lone backslash")
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(i + 2)
			if !ok {
				return "", errors.New("a bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				var r2 rune
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, ok = hex4(i + 2)
				} else {
					ok = false
				}
				dec := utf16.DecodeRune(r, r2)
				if !ok || dec == utf8.RuneError {
					return "", fmt.Errorf("an unpaired surrogate \\u%04x", r)
				}
				r = dec
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", fmt.Errorf("an unknown escape \\%c", c)
		}
		i += 2
	}
	return string(out), nil
}

// isEOF reports whether err says the input ended too soon.
func isEOF(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }
