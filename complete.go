package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
)

// SampleSeed is the seed of sample i of a Complete call with seed seed:
// seed + i (wrapping). Sample i draws from SampleRand(seed, i), so it is
// the text a single-sample call gives with Rand = SampleRand(seed, i), or
// cmd/generate's text with -seed SampleSeed(seed, i): sample 0 is the
// single-sample run with the same seed.
func SampleSeed(seed uint64, i int) uint64 { return seed + uint64(i) }

// SampleRand returns the generator sample i of a Complete call with seed
// seed draws from: rand.New(rand.NewPCG(SampleSeed(seed, i), 0)), the
// generator cmd/generate makes from -seed.
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

// Completion is one sample (or beam) of a Complete call.
type Completion struct {
	// Index is the sample's index, in [0, n); beams are ranked best first.
	Index int
	// Seed is the sample's seed, SampleSeed(seed, Index); 0 for greedy
	// decoding and beam search, which draw nothing.
	Seed uint64
	// IDs are the generated tokens, the stop string excluded.
	IDs []int
	// Text is IDs decoded.
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
	// IDs are the released tokens; Text is IDs decoded.
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

// Complete generates n continuations of prompt (1 <= n <= MaxSamples)
// together, as one batch of n rows through the model: sample i draws from
// SampleRand(seed, i) and is bit-identical to GenerateText with that
// generator and the same options. With opts.NumBeams > 1 it runs beam
// search instead and returns the n best beams (n <= NumBeams; seed is
// unused). opts.Rand and opts.OnToken must be nil.
//
// stream, if not nil, receives each sample's text as it becomes final:
// with opts.Stop, characters that may begin a stop string are held back
// and released as soon as they cannot (beam search streams each beam
// whole at the end). An error from stream or OnStep stops every sample and
// is returned. Cancelling ctx stops between tokens; the completions so
// far are returned with ctx's error.
func (m *Model) Complete(ctx context.Context, vocab *Vocab, prompt string, n int, seed uint64, opts GenerateOptions, stream func(*Chunk) error) ([]Completion, error) {
	switch {
	case n < 1 || n > MaxSamples:
		return nil, fmt.Errorf("%w: sample count %d is outside [1, %d]", ErrBadOption, n, MaxSamples)
	case opts.Rand != nil:
		return nil, fmt.Errorf("%w: Complete derives each sample's generator from the seed (Rand is set)", ErrBadOption)
	case opts.OnToken != nil:
		return nil, fmt.Errorf("%w: Complete streams through its stream callback (OnToken is set)", ErrBadOption)
	case opts.beam() && n > opts.NumBeams:
		return nil, fmt.Errorf("%w: %d beams cannot return %d sequences", ErrBadOption, opts.NumBeams, n)
	}
	rands := make([]*rand.Rand, n)
	if opts.sampled() {
		for i := range rands {
			rands[i] = SampleRand(seed, i)
		}
	}
	res, err := m.complete(ctx, vocab, prompt, n, rands, opts, stream, false)
	if opts.sampled() {
		for i := range res {
			res[i].Seed = SampleSeed(seed, i)
		}
	}
	return res, err
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

// complete is Complete and GenerateText: n samples, sample i drawing from
// rands[i]. With idsOnly, streamed chunks carry no Text.
func (m *Model) complete(ctx context.Context, vocab *Vocab, prompt string, n int, rands []*rand.Rand, opts GenerateOptions, stream func(*Chunk) error, idsOnly bool) ([]Completion, error) {
	if vocab == nil {
		return nil, fmt.Errorf("%w: no vocabulary", ErrBadOption)
	}
	if vocab.Size() != m.cfg.VocabSize {
		return nil, fmt.Errorf("%w: vocabulary has %d characters, the model %d", ErrBadOption, vocab.Size(), m.cfg.VocabSize)
	}
	if prompt == "" {
		return nil, fmt.Errorf("%w: empty prompt", ErrBadOption)
	}
	ids, err := vocab.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("%w: prompt: %w", ErrBadOption, err)
	}
	if err := m.checkPrompt(ids, &opts); err != nil {
		return nil, err
	}
	if err := m.checkBatchMemory(max(n, opts.NumBeams)); err != nil {
		return nil, err
	}
	chars := vocab.Chars()
	if opts.beam() {
		res, err := m.beamSearch(ctx, ids, &opts, chars, n)
		for i := range res {
			res[i].Text = decodeChars(chars, res[i].IDs)
			if stream != nil && err == nil {
				err = stream(&Chunk{Sample: i, IDs: res[i].IDs, Text: res[i].Text, Finish: res[i].Finish})
			}
		}
		return res, err
	}
	st := newStopper(opts.Stop, chars, n, opts.Trace)
	st.noText = idsOnly
	call := generation{m: m, o: &opts, prompt: ids, rands: rands}
	err = call.run(ctx, func(b, id int, step *Step) error {
		return st.add(b, id, step, stream)
	})
	if err == nil {
		err = st.finish(stream)
	}
	res := make([]Completion, n)
	for b := range res {
		s := &st.samples[b]
		res[b] = Completion{Index: b, IDs: s.ids[:s.released], Text: decodeChars(chars, s.ids[:s.released]), Finish: s.finish}
		if opts.Trace {
			res[b].Steps = s.steps[:s.released]
		}
	}
	return res, err
}

func decodeChars(chars []rune, ids []int) string {
	rs := make([]rune, len(ids))
	for i, id := range ids {
		rs[i] = chars[id]
	}
	return string(rs)
}

// errFinished tells generation.run that a sample has ended.
var errFinished = errors.New("sample finished")

// generation is one generating call on B = len(rands) sequences that
// start with the same prompt.
type generation struct {
	m      *Model
	o      *GenerateOptions
	prompt []int
	rands  []*rand.Rand // (B) each sample's generator; nil unless sampling
}

// run generates up to MaxNewTokens tokens for every sample, all samples
// advancing together one position per step, and calls emit with each new
// token (and its trace when OnStep or Trace asks for one), samples in
// index order within a step. emit returning errFinished ends that sample;
// any other error ends the call.
func (g *generation) run(ctx context.Context, emit func(sample, id int, step *Step) error) error {
	m, o := g.m, g.o
	m.use.RLock()
	defer m.use.RUnlock()
	B, V := len(g.rands), m.cfg.VocabSize
	sc := getScratch(m.cfg, B)
	defer putScratch(sc)
	capacity := len(g.prompt) + min(o.MaxNewTokens, 1<<20)
	for b := range B {
		sc.seqs[b] = append(sc.seqs[b][:0], g.prompt...)
		sc.seqs[b] = slicesGrow(sc.seqs[b], capacity)
		sc.states[b].reset(g.prompt)
		sc.done[b] = false
	}
	var tr *Step
	if o.OnStep != nil || o.Trace {
		tr = &sc.step
	}
	active := B
	for range o.MaxNewTokens {
		if err := ctx.Err(); err != nil {
			return err
		}
		logits := sc.dec.next(m, sc.seqs, o.noCache)
		for b := range B {
			seq := sc.seqs[b]
			if sc.done[b] {
				// A finished sample keeps its row (every sequence must have
				// the same length); what it appends is never used.
				sc.seqs[b] = append(seq, 0)
				continue
			}
			row := logits[b*V : (b+1)*V]
			if !isFinite(row) {
				return fmt.Errorf("%w at position %d", ErrNonFinite, len(seq))
			}
			id, err := sc.s.choose(row, seq, &sc.states[b], o, g.rands[b], tr)
			if err != nil {
				return fmt.Errorf("%w at position %d", err, len(seq))
			}
			sc.seqs[b] = append(seq, id)
			sc.states[b].add(id)
			if tr != nil {
				tr.Sample, tr.Pos = b, len(seq)
				if o.OnStep != nil {
					if err := o.OnStep(tr); err != nil {
						return err
					}
				}
			}
			if err := emit(b, id, tr); errors.Is(err, errFinished) {
				sc.done[b] = true
				if active--; active == 0 {
					return nil
				}
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// slicesGrow returns s with room for n elements in all.
func slicesGrow(s []int, n int) []int {
	if cap(s) >= n {
		return s
	}
	return append(make([]int, 0, n), s...)
}
