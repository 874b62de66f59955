package server

// This file owns the completion request: its fields in the server's
// terms, and their validation, complete before any work starts.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"example.org/minigpt/server/internal/api"
)

// completionRequest is a validated POST /v1/completions body.
type completionRequest struct {
	model        *servedModel
	prompts      []string // at least one, none empty
	promptIDs    [][]int  // prompts, encoded
	stream       bool
	includeUsage bool // stream_options.include_usage
	echo         bool
	seedGiven    bool  // the client chose the seed
	size         int64 // what it is charged in flight: its response's size bound, and its format's memory (size.go)
	chat         bool  // POST /v1/chat/completions: a chat completion's shape
	sampling
}

// object is the response's "object": OpenAI's name for its shape, whole
// or as a stream's chunk.
func (req *completionRequest) object() string {
	switch {
	case !req.chat:
		return "text_completion"
	case req.stream:
		return "chat.completion.chunk"
	}
	return "chat.completion"
}

// idPrefix is the prefix of the response's id, as OpenAI's.
func (req *completionRequest) idPrefix() string {
	if req.chat {
		return "chatcmpl-"
	}
	return "cmpl-"
}

// Field names, in one place, so that error messages and the parser agree.
var knownFields = []string{
	"model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream",
	"stream_options", "logprobs", "echo", "stop", "seed", "presence_penalty",
	"frequency_penalty", "logit_bias", "best_of", "suffix", "user",
	// Extensions that llama.cpp and vLLM accept.
	"top_k", "min_p", "repetition_penalty", "no_repeat_ngram_size",
	"num_beams", "length_penalty",
	// The playground's extensions.
	"trace", "trace_attention",
	// The output's format (guided.go).
	"guided_regex", "guided_choice", "guided_grammar", "guided_json", "grammar", "json_schema", "response_format",
}

// Limits on single fields that do not depend on the server's Limits.
const (
	maxStops             = 4    // as OpenAI
	maxStopChars         = 64   // a stop string longer than this is surely a mistake
	maxLogprobs          = 20   // as vLLM; OpenAI allows 5
	minTemperature       = 1e-6 // as cmd/generate; 0 is greedy
	maxTemperature       = 1e6
	maxRepetitionPenalty = 1e6
	maxBeams             = 64 // as the library's MaxBeams
)

// parseCompletion reads and validates a completion request. It never
// reads more than limits.MaxBodyBytes.
func (s *Server) parseCompletion(w http.ResponseWriter, r *http.Request) (*completionRequest, *api.Error) {
	f, aerr := api.ReadObject(w, r, s.limits.MaxBodyBytes, knownFields, "this server accepts "+strings.Join(knownFields, ", "))
	if aerr != nil {
		return nil, aerr
	}
	req := newRequest(16) // OpenAI's default max_tokens

	// Fields that change what the request means come first: an
	// unsupported one is refused rather than ignored.
	if raw, ok := f["suffix"]; ok && !api.IsNull(raw) {
		var sfx string
		if err := json.Unmarshal(raw, &sfx); err != nil || sfx != "" {
			return nil, api.BadParam("suffix", "unsupported_parameter", "suffix %s is not supported: a character model continues a prompt, it does not fill in a middle", raw)
		}
	}
	if req.model, aerr = s.requestModel(f); aerr != nil {
		return nil, aerr
	}
	if err := parsePrompt(f, req, s.limits.MaxPromptChars); err != nil {
		return nil, err
	}
	V := req.model.vocab.size()
	sp := &req.sampling
	for _, err := range []*api.Error{
		f.Integer("max_tokens", &sp.maxTokens, 0, s.limits.MaxTokens),
		f.Bool("echo", &req.echo),
		f.Integer("trace", &sp.trace, 0, V),
		s.parseKnobs(f, req),
	} {
		if err != nil {
			return nil, err
		}
	}
	if f.Has("logprobs") {
		if err := f.Integer("logprobs", &sp.logprobs, 0, min(maxLogprobs, V)); err != nil {
			return nil, err
		}
	}
	if f.Has("best_of") {
		var bestOf int
		if err := f.Integer("best_of", &bestOf, 1, s.limits.MaxChoices); err != nil {
			return nil, err
		}
		if bestOf != sp.n {
			return nil, api.BadParam("best_of", "unsupported_parameter", "best_of %d is not supported: only best_of equal to n (%d) is; ask for n samples and choose yourself", bestOf, sp.n)
		}
	}
	var attention bool
	if err := f.Bool("trace_attention", &attention); err != nil {
		return nil, err
	}
	if attention {
		if sp.trace == 0 {
			return nil, api.BadParam("trace_attention", "invalid_value", "trace_attention adds the attention weights to each step of the trace: give trace too")
		}
		c := req.model.config
		sp.attention = c.Layers * c.Heads * c.BlockSize
	}
	if sp.trace > 0 && sp.n*len(req.prompts) > 1 {
		return nil, api.BadParam("trace", "invalid_value", "trace %d needs a single choice (one prompt, n 1): it is for the playground", sp.trace)
	}
	if err := s.checkRequest(r.Context(), req); err != nil {
		return nil, err
	}
	return req, nil
}

// newRequest is a request with every knob at its default, maxTokens
// tokens at most.
func newRequest(maxTokens int) *completionRequest {
	return &completionRequest{sampling: sampling{
		maxTokens: maxTokens, temperature: 1, topP: 1, repetitionPenalty: 1, n: 1, logprobs: -1,
	}}
}

// parseKnobs reads the fields a completion and a chat completion share:
// the sampler's knobs, n, the seed, stop, logit_bias, stream and its
// options, user, and the output's format.
func (s *Server) parseKnobs(f api.Fields, req *completionRequest) *api.Error {
	sp := &req.sampling
	for _, err := range []*api.Error{
		f.Number("temperature", &sp.temperature, 0, maxTemperature, "0 (greedy) or in [1e-6, 1e6]"),
		f.Number("top_p", &sp.topP, math.SmallestNonzeroFloat64, 1, "in (0, 1]; 1 means off"),
		f.Integer("n", &sp.n, 1, s.limits.MaxChoices),
		f.Bool("stream", &req.stream),
		f.Number("presence_penalty", &sp.presencePenalty, -2, 2, "in [-2, 2]"),
		f.Number("frequency_penalty", &sp.frequencyPenalty, -2, 2, "in [-2, 2]"),
		f.Number("min_p", &sp.minP, 0, 1, "in [0, 1]; 0 means off"),
		f.Number("repetition_penalty", &sp.repetitionPenalty, math.SmallestNonzeroFloat64, maxRepetitionPenalty, "in (0, 1e6]; 1 means off"),
		f.Integer("no_repeat_ngram_size", &sp.noRepeatNgram, 0, 1<<10),
		f.Integer("num_beams", &sp.numBeams, 0, maxBeams),
		f.Number("length_penalty", &sp.lengthPenalty, -10, 10, "in [-10, 10]; 0 means no length normalisation"),
		f.Str("user", new(string)),
	} {
		if err != nil {
			return err
		}
	}
	if sp.temperature > 0 && sp.temperature < minTemperature {
		// As cmd/generate: dividing the logits by less overflows them long
		// before it is anything but greedy in all but name.
		return api.BadParam("temperature", "invalid_value", "temperature %v is out of range: it must be 0 (greedy) or in [1e-6, 1e6]", sp.temperature)
	}
	if f.Has("top_k") {
		// vLLM and llama.cpp clients send -1 for "off"; so does 0 here.
		if err := f.Integer("top_k", &sp.topK, -1, 1<<31-1); err != nil {
			return err
		}
		sp.topK = max(sp.topK, 0)
	}
	var err *api.Error
	if req.seed, req.seedGiven, err = f.Seed(); err != nil {
		return err
	}
	if err := parseStop(f, sp); err != nil {
		return err
	}
	if err := parseLogitBias(f, sp, req.model.vocab.size()); err != nil {
		return err
	}
	if f.Has("stream_options") {
		if !req.stream {
			return api.BadParam("stream_options", "invalid_value", "stream_options is only allowed with stream: true")
		}
		so, err := api.DecodeObject(f["stream_options"])
		if err != nil {
			err.Param, err.Message = api.Ptr("stream_options"), "stream_options: "+err.Message
			return err
		}
		for k := range so {
			if k != "include_usage" {
				return api.BadParam("stream_options."+k, "unknown_parameter", "unknown parameter stream_options.%s: only include_usage is supported", k)
			}
		}
		if err := so.Bool("include_usage", &req.includeUsage); err != nil {
			err.Param = api.Ptr("stream_options.include_usage")
			return err
		}
	}
	sp.format, err = parseFormat(f)
	return err
}

// checkRequest makes the checks that need every field: the choices, the
// rows, the combinations the library cannot honour, a first token to
// choose, the response's size, and last, as the costliest, it compiles
// the output's format.
func (s *Server) checkRequest(ctx context.Context, req *completionRequest) *api.Error {
	sp := &req.sampling
	if n := len(req.prompts) * sp.n; n > s.limits.MaxChoices {
		return api.BadParam("n", "too_many_choices", "%d prompts × n %d = %d choices, above this server's limit of %d", len(req.prompts), sp.n, n, s.limits.MaxChoices)
	}
	if need := rowsOf(sp); need > s.limits.Slots {
		// A request's samples (or beams) decode together, one batch row
		// each: one that needs more rows than there are could never run.
		per := "sample"
		if sp.numBeams > 1 {
			per = "beam"
		}
		return api.BadParam(rowsParam(sp), "invalid_value", "%s %d needs one row of the model's batch per %s, more than the %d rows it has", rowsParam(sp), need, per, s.limits.Slots)
	}
	// What the library would refuse, or refuse only once it runs, is
	// refused here, before the status line: a stream and a plain request
	// get the same 400.
	if err := unsupported(sp); err != nil {
		return err
	}
	if err := req.model.engine.check(sp, req.promptIDs); err != nil {
		return err
	}
	if err := s.checkSize(req); err != nil {
		return err
	}
	if err := s.compileFormat(ctx, req); err != nil {
		return err
	}
	return req.model.engine.checkFormat(sp)
}

// parsePrompt reads prompt (a string or an array of strings) and encodes each
// with the model's vocabulary.
func parsePrompt(f api.Fields, req *completionRequest, maxChars int) *api.Error {
	raw, ok := f["prompt"]
	if !ok || api.IsNull(raw) {
		return api.BadParam("prompt", "missing_parameter", "prompt is required: the text to continue")
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		req.prompts = []string{one}
	} else if err := json.Unmarshal(raw, &req.prompts); err != nil {
		if api.Kind(raw) == "an array" {
			return api.BadParam("prompt", "invalid_type", "prompt must be a string or an array of strings: token-id prompts are not supported, send the text (this is a character model)")
		}
		return api.WrongType("prompt", "a string or an array of strings", raw)
	}
	if len(req.prompts) == 0 {
		return api.BadParam("prompt", "invalid_value", "prompt is an empty array: give at least one string")
	}
	for i, p := range req.prompts {
		where := "prompt"
		if len(req.prompts) > 1 || api.Kind(raw) == "an array" {
			where = fmt.Sprintf("prompt[%d]", i)
		}
		n := utf8.RuneCountInString(p)
		switch {
		case n == 0:
			return api.BadParam("prompt", "invalid_value", "%s is empty: a character model needs at least one character to continue", where)
		case n > maxChars:
			return api.BadParam("prompt", "invalid_value", "%s has %d characters, above this server's limit of %d", where, n, maxChars)
		}
		ids, err := req.model.engine.encode(p)
		if err != nil {
			// Only a character vocabulary refuses text: BPE encodes any.
			return api.BadParam("prompt", "unknown_character", "%s: %v (model %s knows only %q)", where, err, req.model.name, req.model.vocab.chars)
		}
		req.promptIDs = append(req.promptIDs, ids)
	}
	return nil
}

// parseStop reads stop: a string or up to four strings.
func parseStop(f api.Fields, sp *sampling) *api.Error {
	raw, ok := f["stop"]
	if !ok || api.IsNull(raw) {
		return nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		sp.stop = []string{one}
	} else if err := json.Unmarshal(raw, &sp.stop); err != nil {
		return api.WrongType("stop", "a string or an array of strings", raw)
	}
	if len(sp.stop) > maxStops {
		return api.BadParam("stop", "invalid_value", "stop has %d strings, at most %d are allowed", len(sp.stop), maxStops)
	}
	for i, s := range sp.stop {
		if n := utf8.RuneCountInString(s); n == 0 || n > maxStopChars {
			return api.BadParam("stop", "invalid_value", "stop[%d] %q must have 1 to %d characters", i, s, maxStopChars)
		}
	}
	return nil
}

// parseLogitBias reads logit_bias: {"token id": bias}, ids in the model's
// vocabulary (GET /v1/models/{model} lists it), biases in [-100, 100].
func parseLogitBias(f api.Fields, sp *sampling, V int) *api.Error {
	raw, ok := f["logit_bias"]
	if !ok || api.IsNull(raw) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || api.Kind(raw) != "an object" {
		return api.WrongType("logit_bias", `an object {"token id": bias}`, raw)
	}
	if len(m) == 0 {
		return nil
	}
	sp.logitBias = make(map[int]float64, len(m))
	for k, v := range m {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= V || strconv.Itoa(id) != k {
			return api.BadParam("logit_bias", "invalid_value", "logit_bias key %q is not a token id of this model: ids are 0 to %d (GET /v1/models/{model} lists the tokens)", k, V-1)
		}
		var b float64
		if api.Kind(v) != "a number" || json.Unmarshal(v, &b) != nil {
			return api.BadParam("logit_bias", "invalid_type", "logit_bias[%q] must be a number, got %s", k, v)
		}
		if !(b >= -100 && b <= 100) {
			return api.BadParam("logit_bias", "invalid_value", "logit_bias[%q] %s is out of range: it must be in [-100, 100]", k, v)
		}
		sp.logitBias[id] = b
	}
	return nil
}
