package server

// This file owns a request's output format: the fields that hold the
// generated text to a regular expression, a list of choices, a grammar or
// a JSON schema (vLLM's guided_*, llama.cpp's grammar and json_schema,
// OpenAI's response_format), read into at most one format per request.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// formatFields are the fields that set the output's format, in the order
// a request that gives two is told about them. Both routes accept them.
var formatFields = []string{
	"guided_regex", "guided_choice", "guided_grammar", "guided_json", // vLLM's
	"grammar", "json_schema", // llama.cpp's
	"response_format", // OpenAI's, with "regex" as an extension
}

// format is a request's output format: what the client sent, and the
// constraint the engine compiled from it for the request's model, which
// every prompt and sample of the request shares.
type format struct {
	field string   // the request field that set it: "guided_regex", "response_format", ...
	param string   // the field its source is in, which a 400 about it names
	kind  string   // the library's kind: regex, choice, grammar, json-schema, json-object
	src   []string // the source: one text, or the choices; none for json-object
	c     *minigpt.Constraint
}

// parseFormat reads the format fields of f, at most one of which may set
// a format; compileFormat compiles it once every other field is checked.
// It returns nil when none does (no field, or response_format {"type":
// "text"}).
func parseFormat(f api.Fields) (*format, *api.Error) {
	var got *format
	for _, name := range formatFields {
		if !f.Has(name) {
			continue
		}
		fm, err := readFormat(name, f[name])
		if err != nil {
			return nil, err
		}
		if fm == nil {
			continue
		}
		if got != nil {
			return nil, api.BadParam(name, "conflicting_formats", "%s and %s both set the output's format: a request may hold its output to one format, give one of them", got.field, name)
		}
		got = fm
	}
	if got == nil {
		return nil, nil
	}
	if n := got.size(); n > maxFormatBytes {
		return nil, api.BadParam(got.param, "format_too_large", "%s has %d bytes, above the constraint engine's cap of %d", got.param, n, maxFormatBytes)
	}
	return got, nil
}

// compileFormat compiles req's format, if it has one, for its model. A
// request compiles before it is admitted, and a pathological pattern
// within the engine's caps costs up to a second or so of a processor, so
// at most s.compiling compiles run at once, leaving the other processors
// to the batches; a request that waits longer than QueueTimeout for its
// turn gets 429.
func (s *Server) compileFormat(ctx context.Context, req *completionRequest) *api.Error {
	fm := req.format
	if fm == nil {
		return nil
	}
	wait := time.NewTimer(s.limits.QueueTimeout)
	defer wait.Stop()
	select {
	case s.compiling <- struct{}{}:
	case <-wait.C:
		return api.Busy("server_busy", 1, "every constraint compiler was busy for %v: retry later", s.limits.QueueTimeout)
	case <-ctx.Done():
		return api.Busy("server_busy", 1, "the request ended while waiting for a constraint compiler")
	}
	defer func() { <-s.compiling }()
	return req.model.engine.constrain(fm, req.model.name)
}

// size is the bytes of fm's source.
func (fm *format) size() int {
	n := 0
	for _, s := range fm.src {
		n += len(s)
	}
	return n
}

// readFormat reads one format field; nil for response_format's "text".
func readFormat(name string, raw json.RawMessage) (*format, *api.Error) {
	text := func(kind, param string, raw json.RawMessage) (*format, *api.Error) {
		var s string
		if api.Kind(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
			return nil, api.WrongType(param, "a string", raw)
		}
		return &format{field: name, param: param, kind: kind, src: []string{s}}, nil
	}
	switch name {
	case "guided_regex":
		return text("regex", name, raw)
	case "guided_grammar", "grammar":
		return text("grammar", name, raw)
	case "guided_choice":
		var choices []string
		if api.Kind(raw) != "an array" || json.Unmarshal(raw, &choices) != nil {
			return nil, api.WrongType(name, "an array of strings", raw)
		}
		if len(choices) == 0 {
			return nil, api.BadParam(name, "invalid_value", "guided_choice is an empty array: give at least one choice")
		}
		return &format{field: name, param: name, kind: "choice", src: choices}, nil
	case "guided_json":
		// vLLM takes the schema as an object or as a string holding one.
		if api.Kind(raw) == "a string" {
			return text("json-schema", name, raw)
		}
		return schemaObject(name, name, raw, "a JSON Schema (an object, or a string holding one)")
	case "json_schema":
		return schemaObject(name, name, raw, "a JSON Schema object")
	}
	return responseFormat(raw)
}

// schemaObject reads a JSON Schema given as an object. Its source is the
// object's text as sent, so that a 400's positions count its characters
// from its opening brace.
func schemaObject(field, param string, raw json.RawMessage, want string) (*format, *api.Error) {
	if api.Kind(raw) != "an object" || !json.Valid(raw) {
		return nil, api.WrongType(param, want, raw)
	}
	return &format{field: field, param: param, kind: "json-schema", src: []string{strings.TrimSpace(string(raw))}}, nil
}

// responseFormat reads OpenAI's response_format: {"type": "text"} (no
// format), {"type": "json_object"}, {"type": "json_schema",
// "json_schema": {"name", "schema", "strict", "description"}}, and the
// extension {"type": "regex", "regex": "..."}.
func responseFormat(raw json.RawMessage) (*format, *api.Error) {
	const field = "response_format"
	rf, err := api.DecodeObject(raw)
	if err != nil || api.Kind(raw) != "an object" {
		return nil, api.WrongType(field, `an object such as {"type": "json_object"}`, raw)
	}
	var typ string
	if err := rf.Str("type", &typ); err != nil {
		err.Param, err.Message = api.Ptr(field+".type"), field+"."+err.Message
		return nil, err
	}
	types := `"text", "json_object", "json_schema" or "regex"`
	keys := map[string][]string{"text": {"type"}, "json_object": {"type"}, "json_schema": {"type", "json_schema"}, "regex": {"type", "regex"}}
	allowed, known := keys[typ]
	switch {
	case typ == "":
		return nil, api.BadParam(field+".type", "missing_parameter", "response_format.type is required: %s", types)
	case !known:
		return nil, api.BadParam(field+".type", "invalid_value", "response_format.type %q is not supported: it must be %s", typ, types)
	}
	for k := range rf {
		if !slices.Contains(allowed, k) {
			return nil, api.BadParam(field+"."+k, "unknown_parameter", "unknown parameter response_format.%s: a response_format of type %q has %s", k, typ, strings.Join(allowed, " and "))
		}
	}
	switch typ {
	case "text":
		return nil, nil
	case "json_object":
		return &format{field: field, param: field, kind: "json-object"}, nil
	case "regex":
		if !rf.Has("regex") {
			return nil, api.BadParam(field+".regex", "missing_parameter", `response_format.regex is required with {"type": "regex"}: the pattern the whole text must match`)
		}
		var s string
		if api.Kind(rf["regex"]) != "a string" || json.Unmarshal(rf["regex"], &s) != nil {
			return nil, api.WrongType(field+".regex", "a string", rf["regex"])
		}
		return &format{field: field, param: field + ".regex", kind: "regex", src: []string{s}}, nil
	}
	return jsonSchemaFormat(rf["json_schema"])
}

// jsonSchemaFormat reads response_format.json_schema: OpenAI's {"name",
// "schema", "strict", "description"}. The output always follows the
// schema exactly, whatever strict says.
func jsonSchemaFormat(raw json.RawMessage) (*format, *api.Error) {
	const at = "response_format.json_schema"
	if raw == nil || api.IsNull(raw) {
		return nil, api.BadParam(at, "missing_parameter", `%s is required with {"type": "json_schema"}: {"name": ..., "schema": {...}}`, at)
	}
	js, err := api.DecodeObject(raw)
	if err != nil || api.Kind(raw) != "an object" {
		return nil, api.WrongType(at, `an object {"name": ..., "schema": {...}}`, raw)
	}
	for k := range js {
		if !slices.Contains([]string{"name", "schema", "strict", "description"}, k) {
			return nil, api.BadParam(at+"."+k, "unknown_parameter", "unknown parameter %s.%s: it has name, schema, strict and description", at, k)
		}
	}
	var name, description string
	var strict bool
	for _, err := range []*api.Error{js.Str("name", &name), js.Str("description", &description), js.Bool("strict", &strict)} {
		if err != nil {
			err.Param = api.Ptr(at + "." + *err.Param)
			err.Message = at + "." + err.Message
			return nil, err
		}
	}
	switch {
	case name == "":
		return nil, api.BadParam(at+".name", "missing_parameter", "%s.name is required: the format's name", at)
	case utf8.RuneCountInString(name) > 64:
		return nil, api.BadParam(at+".name", "invalid_value", "%s.name has %d characters, at most 64 are allowed", at, utf8.RuneCountInString(name))
	case !js.Has("schema"):
		return nil, api.BadParam(at+".schema", "missing_parameter", "%s.schema is required: the JSON Schema the text must follow", at)
	}
	return schemaObject("response_format", at+".schema", js["schema"], "a JSON Schema object")
}
