package minigpt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"unicode/utf8"
)

// SampleSeed is the seed of sample i of a call with GenerateOptions.Seed
// seed: seed + i (wrapping). Sample i draws from SampleRand(seed, i), so
// it is the text a one-sample call gives with Seed SampleSeed(seed, i),
// or cmd/generate's text with -seed SampleSeed(seed, i): sample 0 is the
// one-sample run with the same seed.
func SampleSeed(seed uint64, i int) uint64 { return seed + uint64(i) }

// SampleRand returns the generator sample i of a call with
// GenerateOptions.Seed seed draws from: rand.New(rand.NewPCG(SampleSeed(seed,
// i), 0)).
func SampleRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(SampleSeed(seed, i), 0))
}

// FinishReason says why a sample ended (the strings are OpenAI's).
type FinishReason string

// The finish reasons.
const (
	FinishLength FinishReason = "length" // MaxNewTokens generated
	FinishStop   FinishReason = "stop"   // a stop string appeared
)

// Completion is one sample (or beam) of a Generate or Complete call.
type Completion struct {
	// Index is the sample's index, in [0, n); beams are ranked best first.
	Index int
	// Seed is the sample's seed, SampleSeed(seed, Index); 0 for greedy
	// decoding and beam search, which draw nothing.
	Seed uint64
	// IDs are the generated tokens, the stop string excluded.
	IDs []int
	// Text is IDs decoded (Complete only).
	Text string
	// Finish says why the sample ended.
	Finish FinishReason
	// Score is beam search's length-penalised score (0 when sampling).
	Score float64
	// Steps holds each token's trace when GenerateOptions.Trace is set.
	Steps []Step
}

// Chunk is streamed text of one sample: the tokens that became final
// since the sample's previous chunk (with stop strings, the held-back
// tokens are released once they cannot begin one). A Chunk and its slices
// are valid only during the callback.
type Chunk struct {
	// Sample is the sample's index.
	Sample int
	// IDs are the released tokens; Text is IDs decoded (Complete only).
	IDs  []int
	Text string
	// Steps are the released tokens' traces when GenerateOptions.Trace is
	// set (one per id).
	Steps []Step
	// Finish is set on a sample's last chunk (which may hold no tokens).
	Finish FinishReason
}

// CharBias turns a logit bias by character into GenerateOptions.LogitBias
// (by token id); a character outside vocab is an error naming it.
func CharBias(vocab *Vocab, bias map[rune]float64) (map[int]float64, error) {
	if vocab == nil {
		return nil, fmt.Errorf("%w: no vocabulary", ErrBadOption)
	}
	out := make(map[int]float64, len(bias))
	for r, b := range bias {
		ids, err := vocab.Encode(string(r))
		if err != nil {
			return nil, fmt.Errorf("%w: logit bias: %w", ErrBadOption, err)
		}
		out[ids[0]] = b
	}
	return out, nil
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

// generate is Generate and Complete after their checks: o.samples()
// samples continuing ids, ended at stop (with chars, the vocabulary, to
// decode text; nil for token ids only), run alone: one request on a
// decoder of its own.
func (m *Model) generate(ctx context.Context, ids []int, o *GenerateOptions, stop []string, chars []rune) ([]Completion, error) {
	R := rowsOf(o)
	if err := m.checkBatchMemory(R); err != nil {
		return nil, err
	}
	m.use.RLock()
	defer m.use.RUnlock()
	sc := getSerial(m.cfg, R)
	defer putSerial(sc)
	r := m.newRequest(o, ids, stop, chars, sc.rows, &sc.s, &sc.step)
	r.emit, r.onStep = o.Stream, o.OnStep
	r.start(sc.slots)
	m.runAlone(ctx, r, sc.dec)
	return r.results(chars), r.err
}

// runAlone runs r to its end, one pass of d per step; cancelling ctx
// stops it between tokens.
func (m *Model) runAlone(ctx context.Context, r *request, d *decoder) {
	for !r.done {
		if err := ctx.Err(); err != nil {
			r.stop(err)
			return
		}
		d.begin()
		r.plan(d)
		d.run(m)
		r.advance(d)
	}
}

// rowsOf is the number of rows (cache slots) a request with options o
// needs: one per sample, or per beam.
func rowsOf(o *GenerateOptions) int {
	if o.beam() {
		return o.NumBeams
	}
	return o.samples()
}

// newRequest prepares a request for o on rows (rowsOf(o) of them, their
// state buffers sized for the vocabulary), with s as its sampler and tr
// as its trace buffer.
func (m *Model) newRequest(o *GenerateOptions, ids []int, stop []string, chars []rune, rows []reqRow, s *sampler, tr *Step) *request {
	T := m.cfg.BlockSize
	r := &request{m: m, o: o, full: ids, prompt: ids[max(0, len(ids)-T):], chars: chars, rows: rows, s: s}
	if o.OnStep != nil || o.Trace {
		r.tr = tr
		tr.Attention, tr.Context = nil, 0 // tr is pooled: no earlier call's weights
	}
	grow := len(ids) + min(o.MaxNewTokens, 1024) // more as tokens arrive
	attn := r.tr != nil && o.TraceAttention && !o.beam()
	for b := range rows {
		rows[b].seq = slices.Grow(rows[b].seq[:0], grow)
		rows[b].att = nil
		if attn {
			rows[b].att = make([]float64, m.cfg.Layers*m.cfg.Heads*T)
		}
		rows[b].rand = nil
		if o.sampled() {
			rows[b].rand = SampleRand(o.Seed, b)
		}
	}
	if o.beam() {
		var stops [][]int
		if len(stop) > 0 {
			stops = newStopper(stop, chars, 0, false).stops
		}
		r.beam = newBeamState(m.cfg, o.NumBeams, o.samples(), stops)
		return r
	}
	r.st = newStopper(stop, chars, len(rows), o.Trace)
	r.st.noText = chars == nil
	for b := range r.st.samples {
		r.st.samples[b].ids = make([]int, 0, min(o.MaxNewTokens, 1024))
	}
	return r
}

func decodeChars(chars []rune, ids []int) string {
	if len(ids) == 1 && chars[ids[0]] < utf8.RuneSelf {
		// The usual chunk, one ASCII character: a one-byte string is
		// the runtime's own, not allocated.
		b := [1]byte{byte(chars[ids[0]])}
		return string(b[:])
	}
	rs := make([]rune, len(ids))
	for i, id := range ids {
		rs[i] = chars[id]
	}
	return string(rs)
}
