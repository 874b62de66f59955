package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
//  3. Temperature (the seed's first step);
//  4. RepetitionPenalty (the seed's exercise 1: after temperature);
//  5. NoRepeatNGramSize;
//  6. TopK;
//  7. TopP;
//  8. MinP (after top-p, as in Hugging Face);
//
// then one softmax over the survivors and one draw from Rand. With only
// the seed's knobs set this is exactly the seed's generate. Greedy skips
// every stage; beam search runs stages 1, 2, 4 and 5 on
// log-probabilities. Hugging Face runs its logits processors (repetition
// penalty, no-repeat n-gram, bias) before the temperature warper, so its
// repetition penalty acts on unscaled logits; llama.cpp's default chain
// is bias, penalties, top-k, top-p, min-p and only then temperature, so
// its filters see the distribution at temperature 1. See the README's
// "Generating text".
type GenerateOptions struct {
	// MaxNewTokens is the number of tokens to append (>= 0); generation
	// ends earlier only at a stop string or on cancellation.
	MaxNewTokens int
	// Greedy takes the argmax of the raw logits at every step (ties to the
	// lowest id), the seed's greedy=True: it ignores every sampling knob
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
	// Stop lists up to 4 non-empty strings: generation ends before the
	// first of them to appear in the generated text, which is left out of
	// the result; streamed text holds back any characters that may begin
	// one and releases them as soon as they cannot. Only the text calls
	// (GenerateText, Complete) accept it: a stop string is text.
	Stop []string
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
	// Rand is the only source of randomness: one Float64 per sampled
	// token. Required for Generate and GenerateText unless decoding is
	// greedy or beam search; Complete derives one per sample instead
	// (SampleRand) and refuses it.
	Rand *rand.Rand
	// OnToken, if not nil, is called with each new token id once it is
	// final (with Stop set, once it cannot begin a stop string); an error
	// stops generation and is returned. Complete refuses it (its stream
	// callback names the sample).
	OnToken func(id int) error
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
	// Trace records every released token's Step in Completion.Steps and
	// in Chunk.Steps (Complete only).
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
	// MaxSamples is the largest number of samples Complete generates
	// together.
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
	case len(o.Stop) > MaxStopStrings:
		return bad("%d stop strings, at most %d", len(o.Stop), MaxStopStrings)
	case o.NumBeams < 0 || o.NumBeams > MaxBeams:
		return bad("beam count %d is outside [0, %d] (0 and 1 mean off)", o.NumBeams, MaxBeams)
	case !finite(o.LengthPenalty):
		return bad("length penalty %v must be finite", o.LengthPenalty)
	case o.TraceTopN < 0:
		return bad("trace top-n %d is negative", o.TraceTopN)
	case o.beam() && o.OnStep != nil:
		return bad("beam search has no per-step trace (OnStep is set)")
	}
	for i, s := range o.Stop {
		if s == "" {
			return bad("stop string %d is empty", i)
		}
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

// Generate extends prompt (token ids) by opts.MaxNewTokens tokens and
// returns the whole sequence, whose first len(prompt) ids are the prompt.
// Each step runs the model on the last BlockSize tokens (positions counted
// from the window's start, as the seed's ids[-block_size:]) and chooses
// from the last position's logits: greedy argmax, beam search, or the
// pipeline described at GenerateOptions and one draw from opts.Rand.
// Cancelling ctx stops between tokens and returns the sequence so far with
// ctx's error.
//
// Generate is safe for concurrent use on one Model (its KV cache and
// buffers are per call, pooled), and a call gives the same bits whether
// or not others run at the same time.
func (m *Model) Generate(ctx context.Context, prompt []int, opts GenerateOptions) ([]int, error) {
	if len(opts.Stop) > 0 {
		return nil, fmt.Errorf("%w: stop strings need text: use GenerateText or Complete", ErrBadOption)
	}
	if err := m.checkPrompt(prompt, &opts); err != nil {
		return nil, err
	}
	if opts.sampled() && opts.Rand == nil {
		return nil, fmt.Errorf("%w: sampling needs a random generator (Rand is nil)", ErrBadOption)
	}
	if opts.beam() {
		if err := m.checkBatchMemory(opts.NumBeams); err != nil {
			return nil, err
		}
		res, err := m.beamSearch(ctx, prompt, &opts, nil, 1)
		if len(res) == 0 {
			return nil, err
		}
		if opts.OnToken != nil {
			// The best beam is known only at the end: it streams whole.
			for _, id := range res[0].IDs {
				if err := opts.OnToken(id); err != nil {
					return nil, err
				}
			}
		}
		return append(append([]int(nil), prompt...), res[0].IDs...), err
	}
	ids := make([]int, len(prompt), len(prompt)+min(opts.MaxNewTokens, 1<<20))
	copy(ids, prompt)
	call := generation{m: m, o: &opts, prompt: prompt, rands: []*rand.Rand{opts.Rand}}
	err := call.run(ctx, func(sample int, id int, _ *Step) error {
		ids = append(ids, id)
		if opts.OnToken != nil {
			return opts.OnToken(id)
		}
		return nil
	})
	return ids, err
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

// GenerateText is Generate on text: it encodes prompt with vocab (an
// unknown character is an error naming it and its position) and returns
// the prompt and its continuation. With opts.Stop, the continuation ends
// before the first stop string and OnToken holds back the tokens that may
// begin one.
func (m *Model) GenerateText(ctx context.Context, vocab *Vocab, prompt string, opts GenerateOptions) (string, error) {
	if opts.sampled() && opts.Rand == nil {
		if err := opts.Validate(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("%w: sampling needs a random generator (Rand is nil)", ErrBadOption)
	}
	r := opts.Rand
	onToken := opts.OnToken
	opts.Rand, opts.OnToken = nil, nil
	var stream func(*Chunk) error
	if onToken != nil {
		stream = func(c *Chunk) error {
			for _, id := range c.IDs {
				if err := onToken(id); err != nil {
					return err
				}
			}
			return nil
		}
	}
	res, err := m.complete(ctx, vocab, prompt, 1, []*rand.Rand{r}, opts, stream, true)
	if res == nil {
		return "", err
	}
	return prompt + res[0].Text, err
}

// GreedyDecode is the seed's greedy_decode (seed lesson 000, "Greedy
// decoding"; generate with greedy=True in seed lesson 003): it appends n
// tokens, each the argmax (lowest id on ties) of the last position's
// logits.
func (m *Model) GreedyDecode(ids []int, n int) ([]int, error) {
	return m.Generate(context.Background(), ids, GenerateOptions{MaxNewTokens: n, Greedy: true})
}

// LoopOnset returns the first index i (in characters) at which the
// w-character window text[i:i+w] appears again later in text, starting at
// or after i+w; or -1 if none does: the loop detector of seed lesson 003's
// exercise 3 ("loop onset").
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
