package minigpt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// GenerateOptions configures Generate. The zero value is greedy decoding
// of zero tokens; every sampling knob's zero value means "off".
type GenerateOptions struct {
	// MaxNewTokens is the number of tokens to append (>= 0).
	MaxNewTokens int
	// Greedy takes the argmax at every step (ties to the lowest id) and
	// ignores every other knob; it draws no random number.
	Greedy bool
	// Temperature divides the logits before sampling; it must be finite
	// and >= 0, and 0 means greedy.
	Temperature float64
	// RepetitionPenalty, applied after temperature to every token already
	// in the sequence (prompt included): a positive logit is divided by
	// it, a negative one multiplied. It must be finite and >= 0; 0 and 1
	// mean off, values above 1 discourage repeats.
	RepetitionPenalty float64
	// TopK keeps exactly the K largest logits (ties at the boundary go to
	// the lower id); 0 means off, and K >= vocabulary size keeps all.
	TopK int
	// TopP keeps the smallest set of most probable tokens whose mass
	// reaches TopP (the boundary token included, at least one token); it
	// must be in [0, 1], and 0 and 1 mean off.
	TopP float64
	// Rand is the only source of randomness: one Float64 per sampled
	// token. Required unless decoding is greedy.
	Rand *rand.Rand
	// OnToken, if not nil, is called with each new token as soon as it is
	// chosen (for streaming); an error stops generation and is returned.
	OnToken func(id int) error
	// NoCache recomputes the whole context window for every token instead
	// of extending the KV cache. The result is identical to the bit; it
	// exists for tests and benchmarks.
	NoCache bool
}

var (
	// ErrBadOption is returned (wrapped) for an invalid GenerateOptions
	// field or prompt.
	ErrBadOption = errors.New("invalid generate option")
	// ErrNonFinite is returned (wrapped) when the model produces a NaN or
	// infinite logit, so that such a value never travels into a token.
	ErrNonFinite = errors.New("non-finite logits")
)

func (o *GenerateOptions) greedy() bool { return o.Greedy || o.Temperature == 0 }

// Validate reports the first invalid field, naming it and its value.
func (o *GenerateOptions) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, a...)...)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.MaxNewTokens < 0:
		return bad("new token count %d is negative", o.MaxNewTokens)
	case !finite(o.Temperature) || o.Temperature < 0:
		return bad("temperature %v must be finite and >= 0 (0 means greedy)", o.Temperature)
	case !finite(o.RepetitionPenalty) || o.RepetitionPenalty < 0:
		return bad("repetition penalty %v must be finite and >= 0 (0 and 1 mean off)", o.RepetitionPenalty)
	case o.TopK < 0:
		return bad("top-k %d is negative (0 means off)", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return bad("top-p %v is outside [0, 1] (0 and 1 mean off)", o.TopP)
	case !o.greedy() && o.Rand == nil:
		return bad("sampling needs a random generator (Rand is nil)")
	}
	return nil
}

// Generate extends prompt (token ids) by opts.MaxNewTokens tokens and
// returns the whole sequence, whose first len(prompt) ids are the prompt.
// Each step runs the model on the last BlockSize tokens (positions counted
// from the window's start, as the seed's ids[-block_size:]) and chooses
// from the last position's logits: greedy argmax, or temperature, then
// repetition penalty, then top-k, then top-p, then one draw from
// opts.Rand. Cancelling ctx stops between tokens and returns the sequence
// so far with ctx's error. A Model is not safe for concurrent use.
func (m *Model) Generate(ctx context.Context, prompt []int, opts GenerateOptions) ([]int, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("%w: empty prompt", ErrBadOption)
	}
	if err := m.checkTokens(prompt, "prompt"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	// Room for every token up front (so decoding allocates nothing), but
	// never an unbounded allocation on the caller's say-so.
	ids := make([]int, len(prompt), len(prompt)+min(opts.MaxNewTokens, 1<<20))
	copy(ids, prompt)
	g := m.generator()
	g.reset(m.Config.VocabSize)
	for _, id := range prompt {
		g.seen[id] = true
	}
	for range opts.MaxNewTokens {
		if err := ctx.Err(); err != nil {
			return ids, err
		}
		row := g.dec.nextLogits(ids, opts.NoCache)
		if !isFinite(row) {
			return ids, fmt.Errorf("%w at position %d", ErrNonFinite, len(ids))
		}
		id, err := g.s.choose(row, g.seen, &opts)
		if err != nil {
			return ids, fmt.Errorf("%w at position %d", err, len(ids))
		}
		ids = append(ids, id)
		g.seen[id] = true
		if opts.OnToken != nil {
			if err := opts.OnToken(id); err != nil {
				return ids, err
			}
		}
	}
	return ids, nil
}

// GenerateText is Generate on text: it encodes prompt with vocab (an
// unknown character is an error naming it and its position) and decodes
// the result.
func (m *Model) GenerateText(ctx context.Context, vocab *Vocab, prompt string, opts GenerateOptions) (string, error) {
	if vocab == nil {
		return "", fmt.Errorf("%w: no vocabulary", ErrBadOption)
	}
	if vocab.Size() != m.Config.VocabSize {
		return "", fmt.Errorf("%w: vocabulary has %d characters, the model %d", ErrBadOption, vocab.Size(), m.Config.VocabSize)
	}
	if prompt == "" {
		return "", fmt.Errorf("%w: empty prompt", ErrBadOption)
	}
	ids, err := vocab.Encode(prompt)
	if err != nil {
		return "", fmt.Errorf("%w: prompt: %w", ErrBadOption, err)
	}
	out, err := m.Generate(ctx, ids, opts)
	text, _ := vocab.Decode(out) // every id came from the model's vocabulary
	return text, err
}

// GreedyDecode is the seed's greedy_decode: it appends n tokens, each the
// argmax (lowest id on ties) of the last position's logits.
func (m *Model) GreedyDecode(ids []int, n int) ([]int, error) {
	return m.Generate(context.Background(), ids, GenerateOptions{MaxNewTokens: n, Greedy: true})
}

// generatorState is the per-model scratch of Generate, allocated once.
type generatorState struct {
	dec  decoder
	s    sampler
	seen []bool // (V) tokens already in the sequence
}

func (m *Model) generator() *generatorState {
	if m.gen == nil {
		m.gen = &generatorState{dec: decoder{m: m, a: newActivations(m.Config, 1, m.Config.BlockSize)}}
	}
	return m.gen
}

func (g *generatorState) reset(V int) {
	g.dec.n = 0
	if len(g.seen) != V {
		g.seen = make([]bool, V)
		g.s = sampler{row: make([]float64, V), order: make([]int, V), probs: make([]float64, V)}
	}
	clear(g.seen)
}

// decoder runs the model for one sequence with a KV cache: a's rows
// [0, n) hold every activation (keys and values included) of the tokens
// window[0:n] at positions 0..n-1.
type decoder struct {
	m      *Model
	a      *activations // B = 1, T = BlockSize
	n      int          // valid rows
	start  int          // index in the sequence of the cached window's first token
	window []int        // the cached tokens (aliases the caller's sequence)
}

// nextLogits returns the logits of the token after ids (the last
// position of the window ids[max(0, len-BlockSize):]).
func (d *decoder) nextLogits(ids []int, noCache bool) []float64 {
	bs := d.m.Config.BlockSize
	start := max(0, len(ids)-bs)
	window := ids[start:]
	t1 := len(window)
	switch {
	case !noCache && d.n > 0 && start == d.start && d.n == t1-1:
		// The window only grew: compute the new row from the cached ones.
		d.m.forward(d.a, window, d.n, t1, d.n)
		d.n = t1
	case len(ids) >= bs:
		// The window is full (or slid, so every position moved and every
		// cached key and value is stale): rebuild it. The next token slides
		// it again, so only the last row's output is needed, and the cache
		// is left marked empty.
		d.m.forward(d.a, window, 0, t1, t1-1)
		d.n = 0
	default:
		// First call: fill the cache with the prompt.
		d.m.forward(d.a, window, 0, t1, 0)
		d.n = t1
	}
	d.start, d.window = start, window
	V := d.m.Config.VocabSize
	return d.a.logits[(t1-1)*V : t1*V]
}

// sampler turns one row of logits into a token id; its buffers are
// allocated once per vocabulary size.
type sampler struct {
	row   []float64 // (V) filtered logits
	order []int     // (V) ids by descending value
	probs []float64 // (V)
}

// choose applies the pipeline to logits (which it does not modify).
func (s *sampler) choose(logits []float64, seen []bool, o *GenerateOptions) (int, error) {
	if o.greedy() {
		return argmax(logits), nil
	}
	row := s.filter(logits, seen, o)
	for _, v := range row {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			// A tiny temperature or penalty can push a logit past the
			// largest float; the softmax would then be NaN.
			return 0, fmt.Errorf("%w: temperature %v with repetition penalty %v overflows the logits", ErrNonFinite, o.Temperature, o.RepetitionPenalty)
		}
	}
	softmax(s.probs[:len(row)], row)
	return sampleIndex(s.probs[:len(row)], o.Rand.Float64()), nil
}

// filter runs temperature, repetition penalty, top-k and top-p, in that
// order, and returns the filtered logits (-Inf for dropped tokens).
func (s *sampler) filter(logits []float64, seen []bool, o *GenerateOptions) []float64 {
	row := s.row[:len(logits)]
	applyTemperature(row, logits, o.Temperature)
	if o.RepetitionPenalty != 0 && o.RepetitionPenalty != 1 {
		applyRepetitionPenalty(row, seen, o.RepetitionPenalty)
	}
	if o.TopK > 0 && o.TopK < len(row) {
		applyTopK(row, o.TopK, s.order)
	}
	if o.TopP > 0 && o.TopP < 1 {
		applyTopP(row, o.TopP, s.order, s.probs)
	}
	return row
}

// argmax returns the index of the largest value, the lowest on ties.
func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// applyTemperature: row = logits / temperature.
func applyTemperature(row, logits []float64, temperature float64) {
	for i, v := range logits {
		row[i] = v / temperature
	}
}

// applyRepetitionPenalty divides the positive logits of seen tokens by
// penalty and multiplies their negative logits by it (exercise 1).
func applyRepetitionPenalty(row []float64, seen []bool, penalty float64) {
	for id, was := range seen {
		if !was {
			continue
		}
		if row[id] > 0 {
			row[id] /= penalty
		} else {
			row[id] *= penalty
		}
	}
}

// sortByValue fills order with the ids of row by descending value, lower
// id first among equals, so that every cut is deterministic.
func sortByValue(order []int, row []float64) {
	order = order[:len(row)]
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(row[b], row[a]); c != 0 {
			return c
		}
		return a - b
	})
}

// applyTopK keeps exactly the k largest logits (ties at the boundary to
// the lower id) and sets the rest to -Inf.
func applyTopK(row []float64, k int, order []int) {
	sortByValue(order, row)
	for _, id := range order[k:len(row)] {
		row[id] = math.Inf(-1)
	}
}

// applyTopP keeps the smallest prefix of tokens, by descending
// probability, whose cumulative probability reaches p (the seed's
// searchsorted(csum, p) + 1: the token that crosses p is kept), and sets
// the rest to -Inf.
func applyTopP(row []float64, p float64, order []int, probs []float64) {
	sortByValue(order, row)
	probs = probs[:len(row)]
	softmax(probs, row)
	cum := 0.0
	keep := len(row)
	for i, id := range order[:len(row)] {
		cum += probs[id]
		if cum >= p {
			keep = i + 1
			break
		}
	}
	for _, id := range order[keep:len(row)] {
		row[id] = math.Inf(-1)
	}
}

// sampleIndex picks an index from probs with one uniform number u in
// [0, 1), like NumPy's Generator.choice: the first index whose normalised
// cumulative probability exceeds u. Zero-probability entries are never
// chosen.
func sampleIndex(probs []float64, u float64) int {
	total := 0.0
	for _, p := range probs {
		total += p
	}
	cum, last := 0.0, 0
	for i, p := range probs {
		if p == 0 {
			continue
		}
		cum += p
		last = i
		if cum/total > u {
			return i
		}
	}
	return last // u within rounding of 1
}

// LoopOnset returns the first index i (in characters) at which the
// w-character window text[i:i+w] appears again later in text, starting at
// or after i+w; or -1 if none does (exercise 3's loop detector).
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
