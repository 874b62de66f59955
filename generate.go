package minigpt

// This file holds generation's options and its two entry points, Generate
// on ids and Complete on text, with the checks every call makes.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// GenerateOptions configures generation. Every knob's zero value means
// "off" (or neutral: a zero Temperature is temperature 1), so setting one
// knob never silently changes another; greedy decoding is asked for with
// Greedy. The zero value is a sampled generation of zero tokens.
//
// A sampled token goes through one pipeline, in this order (stages that
// are off are skipped and change nothing):
//
//  0. Constraint: the tokens the format does not allow are removed;
//  1. LogitBias on the model's raw logits (−100 bans, +100 forces);
//  2. PresencePenalty and FrequencyPenalty (OpenAI's formula);
//  3. Temperature (the lessons' first step);
//  4. RepetitionPenalty (after temperature, as the sampling lesson's first exercise has it);
//  5. NoRepeatNGramSize;
//  6. TopK;
//  7. TopP;
//  8. MinP (after top-p, as in Hugging Face);
//
// then one softmax and one draw: with the lessons' knobs, their generate.
// Greedy runs stage 0 only, beam search 0, 1, 2, 4 and 5 on
// log-probabilities (docs/sampling.md compares other engines' orders).
type GenerateOptions struct {
	// MaxNewTokens is the number of tokens to append (>= 0); a sample ends
	// earlier only at a stop string or on cancellation.
	MaxNewTokens int
	// N is the number of samples generated together (0 means 1; at most
	// 128), or with beam search the best beams returned (at most NumBeams).
	N int
	// Seed seeds sample i's draws (one Float64 a token) with
	// rand.NewPCG(Seed+i, 0): it is a one-sample call with Seed+i.
	Seed uint64
	// Greedy takes the argmax of the raw logits (ties to the lowest id),
	// the lessons' greedy=True, ignoring every other knob but
	// MaxNewTokens and Stop.
	Greedy bool
	// Temperature divides the logits (finite, >= 0; 0 means 1, not
	// greedy). TopK keeps the K largest logits (ties to the lower id).
	// TopP keeps the smallest set of most probable tokens whose mass
	// reaches it (the token that crosses it included), MinP the tokens at
	// least MinP times as probable as the most probable (both in [0, 1]).
	Temperature float64
	TopK        int
	TopP, MinP  float64
	// RepetitionPenalty (finite, >= 0; 0 and 1 off) divides the positive
	// logits of every token already in the sequence, prompt included, and
	// multiplies the negative ones. PresencePenalty and FrequencyPenalty
	// (in [-2, 2]) are OpenAI's: logit -= presence·[count > 0] +
	// frequency·count, counting the generated tokens.
	RepetitionPenalty                 float64
	PresencePenalty, FrequencyPenalty float64
	// LogitBias adds a bias in [-100, 100] to a token id's raw logit
	// (Vocab.Encode gives a character's id): -100 bans the token, and when
	// any token has +100 only those stay, as in OpenAI's API.
	LogitBias map[int]float64
	// NoRepeatNGramSize (>= 0) bans every token that would complete an
	// n-gram already in the sequence, prompt included (Hugging Face's
	// no_repeat_ngram_size).
	NoRepeatNGramSize int
	// NumBeams > 1 (at most 64) runs Hugging Face's beam search, the
	// processors (stages 0, 1, 2, 4, 5) on each beam's log-probabilities;
	// a finished beam scores sum(log p) / len^LengthPenalty.
	NumBeams      int
	LengthPenalty float64
	// Stop lists up to 4 strings (Complete only): a sample's text ends
	// before the first to appear (for beams, the end-of-sequence token).
	Stop []string
	// Stream, if not nil, receives each sample's tokens once final as a
	// Completion of those alone (Finish set on the last; beams whole at the
	// end), valid during the call; its error stops the call.
	Stream func(*Completion) error
	// Trace gives every token its Step (TraceTopN candidates, attention
	// with TraceAttention) in the streamed parts, or without Stream in the
	// returned Completions. Beam search traces nothing.
	Trace          bool
	TraceTopN      int
	TraceAttention bool
	// Constraint holds every sample to a format: it ends ("stop") once
	// complete with nothing allowed after, and completes it by
	// MaxNewTokens (too few for the shortest match is refused) unless a
	// stop string or cancellation cuts it (Completion.Incomplete).
	Constraint *Constraint

	// noCache recomputes the whole window for every token instead of
	// extending the KV cache: the same bits, for tests and benchmarks.
	noCache bool
}

// Limits on the knobs, checked by Validate.
const (
	maxStopStrings = 4   // the most stop strings GenerateOptions.Stop holds
	maxBeams       = 64  // the largest NumBeams
	maxSamples     = 128 // the largest N
)

var (
	// ErrBadOption is returned (wrapped) for an invalid GenerateOptions
	// field or prompt, and when the options leave no token to choose
	// (every token banned by LogitBias or NoRepeatNGramSize).
	ErrBadOption = errors.New("invalid generate option")
	// ErrNonFinite is returned (wrapped) when the model produces a NaN or
	// infinite logit, so that such a value never travels into a token, and
	// by training when the loss or the gradient stops being finite.
	ErrNonFinite = errors.New("non-finite value")
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
// ErrBadOption that names it and its value), or nil: a Constraint whose
// shortest match needs more than MaxNewTokens too. What needs the model
// (LogitBias's ids, TraceTopN, the Constraint's vocabulary) the calls check.
func (o GenerateOptions) Validate() error {
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, a...)...)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.MaxNewTokens < 0:
		return invalid("new token count %d is negative", o.MaxNewTokens)
	case !finite(o.Temperature) || o.Temperature < 0:
		return invalid("temperature %v must be finite and >= 0 (0 means 1)", o.Temperature)
	case !finite(o.RepetitionPenalty) || o.RepetitionPenalty < 0:
		return invalid("repetition penalty %v must be finite and >= 0 (0 and 1 mean off)", o.RepetitionPenalty)
	case !(o.PresencePenalty >= -2 && o.PresencePenalty <= 2):
		return invalid("presence penalty %v is outside [-2, 2] (0 means off)", o.PresencePenalty)
	case !(o.FrequencyPenalty >= -2 && o.FrequencyPenalty <= 2):
		return invalid("frequency penalty %v is outside [-2, 2] (0 means off)", o.FrequencyPenalty)
	case o.NoRepeatNGramSize < 0:
		return invalid("no-repeat n-gram size %d is negative (0 means off)", o.NoRepeatNGramSize)
	case o.TopK < 0:
		return invalid("top-k %d is negative (0 means off)", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return invalid("top-p %v is outside [0, 1] (0 and 1 mean off)", o.TopP)
	case !(o.MinP >= 0 && o.MinP <= 1):
		return invalid("min-p %v is outside [0, 1] (0 means off)", o.MinP)
	case o.NumBeams < 0 || o.NumBeams > maxBeams:
		return invalid("beam count %d is outside [0, %d] (0 and 1 mean off)", o.NumBeams, maxBeams)
	case !finite(o.LengthPenalty):
		return invalid("length penalty %v must be finite", o.LengthPenalty)
	case o.TraceTopN < 0:
		return invalid("trace top-n %d is negative", o.TraceTopN)
	case o.N < 0 || o.N > maxSamples:
		return invalid("sample count %d is outside [0, %d] (0 means 1)", o.N, maxSamples)
	case o.beam() && o.N > o.NumBeams:
		return invalid("%d beams cannot return %d sequences (N)", o.NumBeams, o.N)
	case len(o.Stop) > maxStopStrings:
		return invalid("%d stop strings, at most %d", len(o.Stop), maxStopStrings)
	case o.Constraint != nil && o.Constraint.m == nil:
		return invalid("constraint not made by NewConstraint")
	case o.Constraint != nil && o.Constraint.need > o.MaxNewTokens:
		c := o.Constraint
		return invalid("the %s constraint needs at least %d tokens, more than MaxNewTokens %d", c.kind, c.need, o.MaxNewTokens)
	}
	for i, s := range o.Stop {
		if s == "" {
			return invalid("stop string %d is empty", i)
		}
	}
	for id, b := range o.LogitBias {
		if !(b >= -100 && b <= 100) {
			return invalid("logit bias %v for token %d is outside [-100, 100]", b, id)
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
	return o.checkConstraint(V, nil)
}

// checkConstraint reports whether o's Constraint, if any (Validate has
// checked it stands within MaxNewTokens), was made for a vocabulary of V
// tokens (vocab, when the call has one).
func (o *GenerateOptions) checkConstraint(V int, vocab *Vocab) error {
	c := o.Constraint
	if c != nil && (c.vocab.Size() != V || (vocab != nil && vocab != c.vocab && !vocab.equal(c.vocab))) {
		return fmt.Errorf("%w: the constraint was made for another vocabulary (%s; the model has %d tokens)", ErrBadOption, c.vocab, V)
	}
	return nil
}

// Why a sample ended: Completion.Finish, in OpenAI's words.
const (
	finishLength = "length" // MaxNewTokens generated
	finishStop   = "stop"   // a stop string appeared, or the constraint's format is complete
)

// Completion is one sample (or beam) of a Generate or Complete call, or
// the part of one that a GenerateOptions.Stream call delivers.
type Completion struct {
	// Index is the sample's index, in [0, N); beams are ranked best first.
	Index int
	// IDs are the generated tokens, the stop string excluded.
	IDs []int
	// Text is IDs decoded (Complete only).
	Text string
	// Finish is "length" (MaxNewTokens), "stop" (a stop string, or a
	// complete format), or "" in a streamed part before the last.
	Finish string
	// Incomplete, with a Constraint, reports that the text ended before
	// its format was complete: cut by a stop string or by cancellation.
	Incomplete bool
	// Score is beam search's length-penalised score (0 when sampling).
	Score float64
	// Steps holds each token's trace when GenerateOptions.Trace is set.
	Steps []Step
}

// Generate continues prompt (token ids) with opts.N samples (or the N
// best beams) generated together, one Completion each, without text (see
// Complete; opts.Stop must be empty). Each step runs the model on a
// sample's last BlockSize tokens (positions counted from the window's
// start, as the lessons' ids[-block_size:]) and chooses from the last
// position's logits. Cancelling ctx stops between tokens, returning the
// completions so far with ctx's error. A call gives the same bits
// whether or not others run at the same time.
func (m *Model) Generate(ctx context.Context, prompt []int, opts GenerateOptions) ([]Completion, error) {
	if err := checkCall(m, ctx); err != nil {
		return nil, err
	}
	if len(opts.Stop) > 0 {
		return nil, fmt.Errorf("%w: stop strings need text: use Complete", ErrBadOption)
	}
	if err := m.checkPrompt(prompt, &opts); err != nil {
		return nil, err
	}
	return m.generate(ctx, prompt, &opts, nil)
}

// Complete is Generate on text: it encodes prompt with vocab (an unknown
// character is an error naming it and its position), ends samples at
// opts.Stop, and returns each sample's text beside its ids. Sample i is
// the text a one-sample call with Seed opts.Seed+i gives.
func (m *Model) Complete(ctx context.Context, vocab *Vocab, prompt string, opts GenerateOptions) ([]Completion, error) {
	if err := checkCall(m, ctx); err != nil {
		return nil, err
	}
	ids, err := m.checkComplete(vocab, prompt, &opts)
	if err != nil {
		return nil, err
	}
	return m.generate(ctx, ids, &opts, vocab)
}

// checkCall refuses a nil model and a nil context, which would otherwise
// panic deep inside a call.
func checkCall(m *Model, ctx context.Context) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil model", ErrBadOption)
	case ctx == nil:
		return fmt.Errorf("%w: nil context (use context.Background())", ErrBadOption)
	}
	return nil
}

// checkComplete checks Complete's arguments and returns the prompt's ids.
func (m *Model) checkComplete(vocab *Vocab, prompt string, opts *GenerateOptions) ([]int, error) {
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
	if err := m.checkPrompt(ids, opts); err != nil {
		return nil, err
	}
	// The size was checked with the prompt; here whether the constraint
	// was made for this vocabulary.
	if err := opts.checkConstraint(m.cfg.VocabSize, vocab); err != nil {
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

// checkBatchMemory refuses a batch of B sequences whose activations would
// exceed the bound Config.Validate puts on one sequence's: B rows are
// computed together, so they cost B times one sequence's memory.
func (m *Model) checkBatchMemory(B int) error {
	if f := m.cfg.activationFloats(B, m.cfg.BlockSize); B > 1 && f > maxSequenceFloats {
		return fmt.Errorf("%w: %d sequences together need %.0f activations, above the limit of %d", ErrBadOption, B, f, maxSequenceFloats)
	}
	return nil
}

// rows is the number of rows (cache slots) a request with options o
// needs: one per sample, or per beam.
func (o *GenerateOptions) rows() int {
	if o.beam() {
		return o.NumBeams
	}
	return o.samples()
}

// sampleRand returns the generator sample i of a call with Seed seed draws
// from.
func sampleRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed+uint64(i), 0))
}
