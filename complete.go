package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
// decode text; nil for token ids only).
func (m *Model) generate(ctx context.Context, ids []int, o *GenerateOptions, stop []string, chars []rune) ([]Completion, error) {
	n := o.samples()
	if err := m.checkBatchMemory(max(n, o.NumBeams)); err != nil {
		return nil, err
	}
	if o.beam() {
		res, err := m.beamSearch(ctx, ids, o, stop, chars, n)
		for i := range res {
			if chars != nil {
				res[i].Text = decodeChars(chars, res[i].IDs)
			}
			if o.Stream != nil && err == nil {
				err = o.Stream(&Chunk{Sample: i, IDs: res[i].IDs, Text: res[i].Text, Finish: res[i].Finish})
			}
		}
		return res, err
	}
	rands := make([]*rand.Rand, n)
	if o.sampled() {
		for i := range rands {
			rands[i] = SampleRand(o.Seed, i)
		}
	}
	st := newStopper(stop, chars, n, o.Trace)
	st.noText = chars == nil
	call := generation{m: m, o: o, prompt: ids, rands: rands}
	err := call.run(ctx, func(b, id int, step *Step) error {
		return st.add(b, id, step, o.Stream)
	})
	if err == nil {
		err = st.finish(o.Stream)
	}
	res := make([]Completion, n)
	for b := range res {
		s := &st.samples[b]
		res[b] = Completion{Index: b, IDs: s.ids[:s.released], Finish: s.finish}
		if chars != nil {
			res[b].Text = decodeChars(chars, s.ids[:s.released])
		}
		if o.sampled() {
			res[b].Seed = SampleSeed(o.Seed, b)
		}
		if o.Trace {
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
