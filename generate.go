package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// GenerateOptions configures generation. Every knob's zero value means
// "off" (or neutral: a zero Temperature is temperature 1), so setting one
// knob never silently changes another; greedy decoding is asked for with
// Greedy. The zero value is a sampled generation of zero tokens.
//
// A sampled token goes through one pipeline, in this order (stages that
// are off are skipped and change nothing):
//
//  1. LogitBias on the model's raw logits (−100 bans, +100 forces);
//  2. PresencePenalty and FrequencyPenalty (OpenAI's formula);
//  3. Temperature (the lessons' first step);
//  4. RepetitionPenalty (the sampling lesson's first exercise: after temperature);
//  5. NoRepeatNGramSize;
//  6. TopK;
//  7. TopP;
//  8. MinP (after top-p, as in Hugging Face);
//
// then one softmax over the survivors and one draw from Rand. With only
// the lessons' knobs set this is exactly their generate. Greedy skips
// every stage; beam search runs stages 1, 2, 4 and 5 on
// log-probabilities. Hugging Face runs its logits processors (repetition
// penalty, no-repeat n-gram, bias) before the temperature warper, so its
// repetition penalty acts on unscaled logits; llama.cpp's default chain
// is bias, penalties, top-k, top-p, min-p and only then temperature, so
// its filters see the distribution at temperature 1. The repository's
// docs/sampling.md explains each stage.
type GenerateOptions struct {
	// MaxNewTokens is the number of tokens to append (>= 0); generation
	// ends earlier only at a stop string or on cancellation.
	MaxNewTokens int
	// N is the number of samples to generate together, as one batch
	// (0 means 1; at most MaxSamples). With beam search it is the number
	// of best beams returned, at most NumBeams.
	N int
	// Seed seeds the sampling: sample i draws one Float64 per token from
	// SampleRand(Seed, i), so sample 0 is the text cmd/generate prints
	// with -seed Seed, and every sample is the text a one-sample call with
	// Seed SampleSeed(Seed, i) gives. Greedy decoding and beam search
	// draw nothing.
	Seed uint64
	// Greedy takes the argmax of the raw logits at every step (ties to the
	// lowest id), the lessons' greedy=True: it ignores every sampling knob
	// and draws no random number. MaxNewTokens and Stop still apply.
	Greedy bool
	// Temperature divides the logits before the filters; it must be
	// finite and >= 0. 0 means 1 (neutral), not greedy.
	Temperature float64
	// RepetitionPenalty, applied after temperature to every token already
	// in the sequence (prompt included): a positive logit is divided by
	// it, a negative one multiplied. It must be finite and >= 0; 0 and 1
	// mean off, values above 1 discourage repeats.
	RepetitionPenalty float64
	// PresencePenalty is subtracted once from the logit of every token
	// that occurs in the generated text (the prompt does not count), as in
	// OpenAI's API; it must be in [-2, 2]; 0 means off.
	PresencePenalty float64
	// FrequencyPenalty is subtracted from a token's logit once per
	// occurrence in the generated text: logit -= presence·[count > 0] +
	// frequency·count. It must be in [-2, 2]; 0 means off.
	FrequencyPenalty float64
	// LogitBias adds a bias in [-100, 100] to the raw logit of a token id
	// (CharBias builds it from characters). As in OpenAI's API, -100 bans
	// the token (its logit becomes -Inf) and +100 forces it: when any
	// token has bias +100, only the tokens with +100 stay.
	LogitBias map[int]float64
	// NoRepeatNGramSize (Hugging Face's no_repeat_ngram_size) bans every
	// token that would complete an n-gram already present in the sequence
	// (prompt included); it must be >= 0; 0 means off.
	NoRepeatNGramSize int
	// TopK keeps exactly the K largest logits (ties at the boundary go to
	// the lower id); 0 means off, and K >= vocabulary size keeps all.
	TopK int
	// TopP keeps the smallest set of most probable tokens whose mass
	// reaches TopP (the boundary token included, at least one token); it
	// must be in [0, 1], and 0 and 1 mean off.
	TopP float64
	// MinP keeps the tokens whose probability is at least MinP times the
	// most probable token's (after top-p, as in Hugging Face); it must be
	// in [0, 1]; 0 means off.
	MinP float64
	// NumBeams > 1 runs beam search instead of sampling (Hugging Face's
	// num_beams): deterministic, no random draws. As in Hugging Face, the
	// logits processors (LogitBias, the penalties, NoRepeatNGramSize) act
	// on each beam's log-probabilities and the sampling warpers
	// (Temperature, TopK, TopP, MinP) are ignored. 0 and 1 mean off; at
	// most 64.
	NumBeams int
	// LengthPenalty is beam search's exponent on the length (Hugging
	// Face's length_penalty): a finished hypothesis scores
	// sum(log p) / len^LengthPenalty, len counting generated tokens. It
	// matters only when hypotheses end at different lengths (at a stop
	// string). It must be finite; 0 means no length normalisation
	// (Hugging Face's default is 1).
	LengthPenalty float64
	// Stream, if not nil, receives each sample's tokens as they become
	// final, as Chunks (with text when the call is Complete): with stop
	// strings, once they cannot begin one. Beam search streams each beam
	// whole at the end, best first. An error from Stream stops every
	// sample and is returned.
	Stream func(*Chunk) error
	// OnStep, if not nil, is called for every generated token with its
	// trace: the chosen token's log-probabilities and, with TraceTopN > 0,
	// the TraceTopN most probable candidates with their probability after
	// each stage. The Step and its slices are reused: copy what you keep
	// (Step.Clone). Steps are reported as tokens are chosen, before any
	// stop-string hold-back. An error stops generation and is returned.
	// Not available with beam search.
	OnStep func(s *Step) error
	// TraceTopN is the number of candidates a Step lists, in [0, vocabulary
	// size]; it has an effect only with OnStep or Trace.
	TraceTopN int
	// TraceAttention adds to every Step the attention weights, in every
	// layer and head, of the position that chose its token (Step.Attention);
	// it has an effect only with OnStep or Trace, and costs nothing without.
	TraceAttention bool
	// Trace records every released token's Step in Completion.Steps and
	// in Chunk.Steps.
	Trace bool

	// noCache recomputes the whole context window for every token instead
	// of extending the KV cache. The result is identical to the bit; it is
	// unexported because only the package's tests and benchmarks (cached
	// against uncached) need it.
	noCache bool
}

// Limits on the knobs, checked by Validate.
const (
	// MaxStopStrings is the most stop strings GenerateOptions.Stop holds.
	MaxStopStrings = 4
	// MaxBeams is the largest NumBeams.
	MaxBeams = 64
	// MaxSamples is the largest N.
	MaxSamples = 128
)

var (
	// ErrBadOption is returned (wrapped) for an invalid GenerateOptions
	// field or prompt.
	ErrBadOption = errors.New("invalid generate option")
	// ErrNonFinite is returned (wrapped) when the model produces a NaN or
	// infinite logit, so that such a value never travels into a token.
	ErrNonFinite = errors.New("non-finite logits")
	// ErrAllBanned is returned (wrapped) when the filters leave no token to
	// choose (every token banned by LogitBias or NoRepeatNGramSize).
	ErrAllBanned = errors.New("every token is banned")
)

func (o *GenerateOptions) beam() bool { return o.NumBeams > 1 }

// samples is the number of samples (or beams returned): N, 0 meaning 1.
func (o *GenerateOptions) samples() int { return max(o.N, 1) }

// temperature is the divisor of the logits: a zero Temperature is 1.
func (o *GenerateOptions) temperature() float64 {
	if o.Temperature == 0 {
		return 1
	}
	return o.Temperature
}

// sampled reports whether tokens are drawn at random.
func (o *GenerateOptions) sampled() bool { return !o.Greedy && !o.beam() }

// Validate reports the first invalid field (an error wrapping
// ErrBadOption that names it and its value), or nil. Checks that need the
// model (token ids in LogitBias, TraceTopN against the vocabulary) are
// made by the generating calls.
func (o GenerateOptions) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, a...)...)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.MaxNewTokens < 0:
		return bad("new token count %d is negative", o.MaxNewTokens)
	case !finite(o.Temperature) || o.Temperature < 0:
		return bad("temperature %v must be finite and >= 0 (0 means 1)", o.Temperature)
	case !finite(o.RepetitionPenalty) || o.RepetitionPenalty < 0:
		return bad("repetition penalty %v must be finite and >= 0 (0 and 1 mean off)", o.RepetitionPenalty)
	case !(o.PresencePenalty >= -2 && o.PresencePenalty <= 2):
		return bad("presence penalty %v is outside [-2, 2] (0 means off)", o.PresencePenalty)
	case !(o.FrequencyPenalty >= -2 && o.FrequencyPenalty <= 2):
		return bad("frequency penalty %v is outside [-2, 2] (0 means off)", o.FrequencyPenalty)
	case o.NoRepeatNGramSize < 0:
		return bad("no-repeat n-gram size %d is negative (0 means off)", o.NoRepeatNGramSize)
	case o.TopK < 0:
		return bad("top-k %d is negative (0 means off)", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return bad("top-p %v is outside [0, 1] (0 and 1 mean off)", o.TopP)
	case !(o.MinP >= 0 && o.MinP <= 1):
		return bad("min-p %v is outside [0, 1] (0 means off)", o.MinP)
	case o.NumBeams < 0 || o.NumBeams > MaxBeams:
		return bad("beam count %d is outside [0, %d] (0 and 1 mean off)", o.NumBeams, MaxBeams)
	case !finite(o.LengthPenalty):
		return bad("length penalty %v must be finite", o.LengthPenalty)
	case o.TraceTopN < 0:
		return bad("trace top-n %d is negative", o.TraceTopN)
	case o.N < 0 || o.N > MaxSamples:
		return bad("sample count %d is outside [0, %d] (0 means 1)", o.N, MaxSamples)
	case o.beam() && o.N > o.NumBeams:
		return bad("%d beams cannot return %d sequences (N)", o.NumBeams, o.N)
	case o.beam() && o.OnStep != nil:
		return bad("beam search has no per-step trace (OnStep is set)")
	}
	for id, b := range o.LogitBias {
		if !(b >= -100 && b <= 100) {
			return bad("logit bias %v for token %d is outside [-100, 100]", b, id)
		}
	}
	return nil
}

// validateFor adds the checks that need the model's vocabulary size.
func (o *GenerateOptions) validateFor(V int) error {
	if err := o.Validate(); err != nil {
		return err
	}
	for id := range o.LogitBias {
		if id < 0 || id >= V {
			return fmt.Errorf("%w: logit bias for token id %d, outside the vocabulary [0, %d)", ErrBadOption, id, V)
		}
	}
	if o.TraceTopN > V {
		return fmt.Errorf("%w: trace top-n %d exceeds the vocabulary size %d", ErrBadOption, o.TraceTopN, V)
	}
	return nil
}

// CompleteOptions are the options of Complete: every GenerateOptions
// field, and the stop strings, which only text can have.
type CompleteOptions struct {
	GenerateOptions
	// Stop lists up to 4 non-empty strings: a sample ends before the
	// first of them to appear in its generated text, which is left out of
	// the result; streamed text holds back any characters that may begin
	// one and releases them as soon as they cannot. With beam search a
	// stop string plays the part of Hugging Face's end-of-sequence token.
	Stop []string
}

// Validate is GenerateOptions.Validate with the stop strings' checks.
func (o CompleteOptions) Validate() error {
	if err := o.GenerateOptions.Validate(); err != nil {
		return err
	}
	if len(o.Stop) > MaxStopStrings {
		return fmt.Errorf("%w: %d stop strings, at most %d", ErrBadOption, len(o.Stop), MaxStopStrings)
	}
	for i, s := range o.Stop {
		if s == "" {
			return fmt.Errorf("%w: stop string %d is empty", ErrBadOption, i)
		}
	}
	return nil
}

// Generate continues prompt (token ids) with opts.N samples (or the N
// best beams) generated together, and returns one Completion per sample
// (their Text empty: the model has no vocabulary; see Complete). Each
// step runs the model on the last BlockSize tokens of a sample (positions
// counted from the window's start, as the lessons' ids[-block_size:]) and
// chooses from the last position's logits: greedy argmax, beam search,
// or the pipeline described at GenerateOptions and one draw from the
// sample's generator. Cancelling ctx stops between tokens; the
// completions so far are returned with ctx's error.
//
// Generate is safe for concurrent use on one Model, and a call gives the
// same bits whether or not others run at the same time.
func (m *Model) Generate(ctx context.Context, prompt []int, opts GenerateOptions) ([]Completion, error) {
	if err := m.checkPrompt(prompt, &opts); err != nil {
		return nil, err
	}
	return m.generate(ctx, prompt, &opts, nil, nil)
}

// Complete is Generate on text: it encodes prompt with vocab (an unknown
// character is an error naming it and its position), ends samples at
// opts.Stop, and returns each sample's text beside its ids. Sample i is
// the text a one-sample call with Seed SampleSeed(opts.Seed, i) gives.
func (m *Model) Complete(ctx context.Context, vocab *Vocab, prompt string, opts CompleteOptions) ([]Completion, error) {
	ids, err := m.checkComplete(vocab, prompt, &opts)
	if err != nil {
		return nil, err
	}
	return m.generate(ctx, ids, &opts.GenerateOptions, opts.Stop, vocab.Chars())
}

// checkComplete checks Complete's arguments and returns the prompt's ids.
func (m *Model) checkComplete(vocab *Vocab, prompt string, opts *CompleteOptions) ([]int, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	switch {
	case vocab == nil:
		return nil, fmt.Errorf("%w: no vocabulary", ErrBadOption)
	case vocab.Size() != m.cfg.VocabSize:
		return nil, fmt.Errorf("%w: vocabulary has %d characters, the model %d", ErrBadOption, vocab.Size(), m.cfg.VocabSize)
	case prompt == "":
		return nil, fmt.Errorf("%w: empty prompt", ErrBadOption)
	}
	ids, err := vocab.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("%w: prompt: %w", ErrBadOption, err)
	}
	if err := m.checkPrompt(ids, &opts.GenerateOptions); err != nil {
		return nil, err
	}
	return ids, nil
}

func (m *Model) checkPrompt(prompt []int, o *GenerateOptions) error {
	if err := o.validateFor(m.cfg.VocabSize); err != nil {
		return err
	}
	if len(prompt) == 0 {
		return fmt.Errorf("%w: empty prompt", ErrBadOption)
	}
	if err := m.checkTokens(prompt, "prompt"); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	return nil
}

// LoopOnset returns the first index i (in characters) at which the
// w-character window text[i:i+w] appears again later in text, starting at
// or after i+w; or -1 if none does: the loop detector of the sampling
// lesson's third exercise ("loop onset").
func LoopOnset(text string, w int) int {
	if w <= 0 {
		return -1
	}
	// Byte offsets of every character, so windows are whole runes.
	offs := make([]int, 0, len(text)+1)
	for i := range text {
		offs = append(offs, i)
	}
	n := len(offs)
	offs = append(offs, len(text))
	for i := 0; i+2*w <= n; i++ {
		window := text[offs[i]:offs[i+w]]
		if strings.Contains(text[offs[i+w]:], window) {
			return i
		}
	}
	return -1
}
