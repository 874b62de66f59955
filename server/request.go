package server

// This file owns the completion request: its fields in the server's
// terms, and their validation, complete before any work starts.

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
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
	size         int64 // the response's size bound (size.go)
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
	attention         int // with trace_attention: layers × heads × block size, the most weights a step holds; 0 means off
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
	f, aerr := readObject(w, r, s.limits.MaxBodyBytes, knownFields, "this server accepts "+strings.Join(knownFields, ", "))
	if aerr != nil {
		return nil, aerr
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
	if req.model, aerr = s.requestModel(f); aerr != nil {
		return nil, aerr
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
	var attention bool
	if err := f.boolean("trace_attention", &attention); err != nil {
		return nil, err
	}
	if attention {
		if sp.trace == 0 {
			return nil, badParam("trace_attention", "invalid_value", "trace_attention adds the attention weights to each step of the trace: give trace too")
		}
		c := req.model.model.Config()
		sp.attention = c.Layers * c.Heads * c.BlockSize
	}
	if sp.trace > 0 && sp.n*len(req.prompts) > 1 {
		return nil, badParam("trace", "invalid_value", "trace %d needs a single choice (one prompt, n 1): it is for the playground", sp.trace)
	}
	if need := rowsOf(sp); need > s.limits.Slots {
		// A request's samples (or beams) decode together, one batch row
		// each: one that needs more rows than there are could never run.
		per := "sample"
		if sp.numBeams > 1 {
			per = "beam"
		}
		return nil, badParam(rowsParam(sp), "invalid_value", "%s %d needs one row of the model's batch per %s, more than the %d rows it has", rowsParam(sp), need, per, s.limits.Slots)
	}
	// What the library would refuse, or refuse only once it runs, is
	// refused here, before the status line: a stream and a plain request
	// get the same 400.
	if err := req.model.engine.unsupported(sp); err != nil {
		return nil, err
	}
	if err := req.model.engine.check(sp, req.promptIDs); err != nil {
		return nil, err
	}
	if err := s.checkSize(req); err != nil {
		return nil, err
	}
	return req, nil
}
