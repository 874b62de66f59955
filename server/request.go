package server

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
	"strings"
	"unicode/utf8"
)

// completionRequest is a validated POST /v1/completions body.
type completionRequest struct {
	model        *servedModel
	prompts      []string // at least one, none empty
	promptIDs    [][]int  // prompts, encoded
	stream       bool
	includeUsage bool // stream_options.include_usage
	echo         bool
	seedGiven    bool // the client chose the seed
	sampling
}

// sampling is every knob of one generation, in the server's terms; the
// adapter in engine.go maps it onto the library.
type sampling struct {
	maxTokens         int
	temperature       float64 // 0 means greedy
	topP              float64 // 1 means off
	topK              int     // 0 means off
	minP              float64 // 0 means off
	repetitionPenalty float64 // 1 means off
	presencePenalty   float64
	frequencyPenalty  float64
	logitBias         map[int]float64 // token id -> added to its logit
	noRepeatNgram     int             // 0 means off
	numBeams          int             // beam search with this many beams; 0 and 1 mean off
	lengthPenalty     float64         // beam search's length exponent
	stop              []string
	seed              uint64
	n                 int // samples per prompt
	logprobs          int // alternatives per token; -1 means no logprobs
	trace             int // candidates per step in the playground trace; 0 means off
}

// Field names, in one place, so that error messages and the parser agree.
var knownFields = []string{
	"model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream",
	"stream_options", "logprobs", "echo", "stop", "seed", "presence_penalty",
	"frequency_penalty", "logit_bias", "best_of", "suffix", "user",
	// Extensions that llama.cpp and vLLM accept.
	"top_k", "min_p", "repetition_penalty", "no_repeat_ngram_size",
	"num_beams", "length_penalty",
	// The playground's extension.
	"trace",
}

// Limits on single fields that do not depend on the server's Limits.
const (
	maxStops       = 4    // as OpenAI
	maxStopChars   = 64   // a stop string longer than this is surely a mistake
	maxLogprobs    = 20   // as vLLM; OpenAI allows 5
	minTemperature = 1e-6 // as cmd/generate; 0 is greedy
	maxTemperature = 1e6
	maxSeed        = 1<<53 - 1 // seeds the server picks stay exact in JavaScript
	maxBeams       = 64        // as the library's MaxBeams
)

// parseCompletion reads and validates a completion request. It never
// reads more than limits.MaxBodyBytes.
func (s *Server) parseCompletion(w http.ResponseWriter, r *http.Request) (*completionRequest, *apiError) {
	body, aerr := readBody(w, r, s.limits.MaxBodyBytes)
	if aerr != nil {
		return nil, aerr
	}
	f, aerr := decodeObject(body)
	if aerr != nil {
		return nil, aerr
	}
	for name := range f {
		if !slices.Contains(knownFields, name) {
			return nil, badParam(name, "unknown_parameter", "unknown parameter %q: this server accepts %s", name, strings.Join(knownFields, ", "))
		}
	}
	req := &completionRequest{sampling: sampling{
		maxTokens: 16, temperature: 1, topP: 1, repetitionPenalty: 1, n: 1, logprobs: -1,
	}}

	// Fields that change what the request means come first: an
	// unsupported one is refused rather than ignored.
	if raw, ok := f["suffix"]; ok && !isNull(raw) {
		var sfx string
		if err := json.Unmarshal(raw, &sfx); err != nil || sfx != "" {
			return nil, badParam("suffix", "unsupported_parameter", "suffix %s is not supported: a character model continues a prompt, it does not fill in a middle", raw)
		}
	}
	name := ""
	if err := f.str("model", &name); err != nil {
		return nil, err
	}
	if name == "" {
		req.model = s.models[0]
	} else if req.model = s.model(name); req.model == nil {
		e := errorWithStatus(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model %q does not exist: this server has %s", name, strings.Join(s.modelNames(), ", "))
		e.Param = strp("model")
		return nil, e
	}
	if err := f.prompt(req, s.limits.MaxPromptChars); err != nil {
		return nil, err
	}
	V := req.model.vocab.Size()
	sp := &req.sampling
	for _, err := range []*apiError{
		f.integer("max_tokens", &sp.maxTokens, 0, s.limits.MaxTokens),
		f.number("temperature", &sp.temperature, 0, maxTemperature, "0 (greedy) or in [1e-6, 1e6]"),
		f.number("top_p", &sp.topP, math.SmallestNonzeroFloat64, 1, "in (0, 1]; 1 means off"),
		f.integer("n", &sp.n, 1, s.limits.MaxChoices),
		f.boolean("stream", &req.stream),
		f.boolean("echo", &req.echo),
		f.number("presence_penalty", &sp.presencePenalty, -2, 2, "in [-2, 2]"),
		f.number("frequency_penalty", &sp.frequencyPenalty, -2, 2, "in [-2, 2]"),
		f.number("min_p", &sp.minP, 0, 1, "in [0, 1]; 0 means off"),
		f.number("repetition_penalty", &sp.repetitionPenalty, math.SmallestNonzeroFloat64, maxTemperature, "> 0; 1 means off"),
		f.integer("no_repeat_ngram_size", &sp.noRepeatNgram, 0, 1<<10),
		f.integer("num_beams", &sp.numBeams, 0, maxBeams),
		f.number("length_penalty", &sp.lengthPenalty, -10, 10, "in [-10, 10]; 0 means no length normalisation"),
		f.integer("trace", &sp.trace, 0, V),
		f.str("user", new(string)),
	} {
		if err != nil {
			return nil, err
		}
	}
	if sp.temperature > 0 && sp.temperature < minTemperature {
		// As cmd/generate: dividing the logits by less overflows them long
		// before it is anything but greedy in all but name.
		return nil, badParam("temperature", "invalid_value", "temperature %v is out of range: it must be 0 (greedy) or in [1e-6, 1e6]", sp.temperature)
	}
	if raw, ok := f["top_k"]; ok && !isNull(raw) {
		// vLLM and llama.cpp clients send -1 for "off"; so does 0 here.
		if err := f.integer("top_k", &sp.topK, -1, 1<<31-1); err != nil {
			return nil, err
		}
		sp.topK = max(sp.topK, 0)
	}
	if raw, ok := f["logprobs"]; ok && !isNull(raw) {
		if err := f.integer("logprobs", &sp.logprobs, 0, min(maxLogprobs, V)); err != nil {
			return nil, err
		}
	}
	if raw, ok := f["best_of"]; ok && !isNull(raw) {
		var bestOf int
		if err := f.integer("best_of", &bestOf, 1, s.limits.MaxChoices); err != nil {
			return nil, err
		}
		if bestOf != sp.n {
			return nil, badParam("best_of", "unsupported_parameter", "best_of %d is not supported: only best_of equal to n (%d) is; ask for n samples and choose yourself", bestOf, sp.n)
		}
	}
	if n := len(req.prompts) * sp.n; n > s.limits.MaxChoices {
		return nil, badParam("n", "too_many_choices", "%d prompts × n %d = %d choices, above this server's limit of %d", len(req.prompts), sp.n, n, s.limits.MaxChoices)
	}
	if err := f.seed(req); err != nil {
		return nil, err
	}
	if err := f.stop(sp); err != nil {
		return nil, err
	}
	if err := f.logitBias(sp, V); err != nil {
		return nil, err
	}
	if raw, ok := f["stream_options"]; ok && !isNull(raw) {
		if !req.stream {
			return nil, badParam("stream_options", "invalid_value", "stream_options is only allowed with stream: true")
		}
		so, err := decodeObject(raw)
		if err != nil {
			err.Param, err.Message = strp("stream_options"), "stream_options: "+err.Message
			return nil, err
		}
		for k := range so {
			if k != "include_usage" {
				return nil, badParam("stream_options."+k, "unknown_parameter", "unknown parameter stream_options.%s: only include_usage is supported", k)
			}
		}
		if err := so.boolean("include_usage", &req.includeUsage); err != nil {
			err.Param = strp("stream_options.include_usage")
			return nil, err
		}
	}
	if sp.trace > 0 && sp.n*len(req.prompts) > 1 {
		return nil, badParam("trace", "invalid_value", "trace %d needs a single choice (one prompt, n 1): it is for the playground", sp.trace)
	}
	return req, nil
}

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
