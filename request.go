package minigpt

// This file holds a Generate or Complete call's request: what it does
// with its rows' logits (sampling or beam search, then the stop strings),
// the completions it returns, and its run alone on a decoder of its own.
// Which rows run at a step, and their caches, are internal/decode's.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"example.org/minigpt/internal/decode"
)

// request is one Generate or Complete call while it generates: the
// decoder's request (its rows and steps), and the call's choices.
type request struct {
	decode.Request
	m      *Model
	o      *GenerateOptions
	vocab  *Vocab // for text; nil for token ids only
	states []rowState
	s      *sampler
	st     *stopper   // sampling and greedy decoding
	beam   *beamState // beam search
	tr     *Step      // the trace buffer, with Trace
	emit   func(*Completion) error
}

// rowState is what a row's sampling keeps besides its sequence.
type rowState struct {
	state seqState
	place place // in the constraint, if any (sampling and greedy decoding)
	rand  *rand.Rand
}

// generate is Generate and Complete after their checks: o.samples()
// samples continuing ids, ended at o.Stop (with vocab, to decode text;
// nil for token ids only), run alone: one request on a decoder of its
// own.
func (m *Model) generate(ctx context.Context, ids []int, o *GenerateOptions, vocab *Vocab) ([]Completion, error) {
	R := o.rows()
	if err := m.checkBatchMemory(R); err != nil {
		return nil, err
	}
	m.use.RLock()
	defer m.use.RUnlock()
	sc := getSerial(m.cfg, R)
	defer putSerial(sc)
	r := m.newRequest(o, ids, vocab, sc.rows, sc.states, &sc.s, &sc.step)
	r.emit = o.Stream
	r.Start(sc.slots)
	sc.pass.m = m
	decode.Run(ctx, &r.Request, sc.dec, &sc.pass)
	return r.results(), r.Err
}

// newRequest prepares a request for o on rows and their states (o.rows()
// of each, the states sized for the vocabulary), with s as its sampler
// and tr as its trace buffer.
func (m *Model) newRequest(o *GenerateOptions, ids []int, vocab *Vocab, rows []decode.Row, states []rowState, s *sampler, tr *Step) *request {
	T := m.cfg.BlockSize
	r := &request{m: m, o: o, vocab: vocab, states: states, s: s}
	r.Init(r, ids, rows, T, o.MaxNewTokens, o.noCache)
	if o.Trace && !o.beam() {
		r.tr = tr
		tr.Attention, tr.Context = nil, 0 // tr is pooled: no earlier call's weights
	}
	if o.beam() {
		r.beam = newBeamState(m.cfg, o, len(ids), o.NumBeams, o.samples(), stopBytes(o.Stop, vocab), vocab)
	} else {
		r.st = newStopper(o.Stop, vocab, len(rows), r.tr != nil, o.Stream != nil)
		r.st.c = o.Constraint
		for b := range r.st.samples {
			r.st.reset(b, min(o.MaxNewTokens, 1024))
		}
	}
	grow := len(ids) + min(o.MaxNewTokens, 1024) // more as tokens arrive
	attn := r.tr != nil && o.TraceAttention
	for b := range rows {
		rows[b].Seq = slices.Grow(rows[b].Seq[:0], grow)
		rows[b].Att = nil
		if attn {
			rows[b].Att = make([]float64, m.cfg.Layers*m.cfg.Heads*T)
		}
		rs := &states[b]
		rs.rand = nil
		if o.sampled() {
			rs.rand = sampleRand(o.Seed, b)
		}
		rs.state.reset(ids)
		rs.place.start(o.Constraint)
	}
	return r
}

// Choose chooses every running row's next token: a step of the beam
// search, or each sample's draw (sample).
func (r *request) Choose(d *decode.Request) (made int, err error) {
	if r.beam == nil {
		return r.sample(d)
	}
	grow, ended, err := r.beam.advance(d.Seqs(), d.Steps, d.Logits)
	if grow {
		d.Follow(r.beam.parents, r.beam.tokens)
	}
	if ended {
		for b := range d.Rows {
			d.Rows[b].Done = true
		}
	}
	return len(d.Rows), err
}

// sample chooses every running row's next token: greedy argmax, or the
// pipeline and one draw from the row's generator.
func (r *request) sample(d *decode.Request) (made int, err error) {
	V := r.m.cfg.VocabSize
	for b := range d.Rows {
		if !d.Rows[b].Done {
			made++ // less each row that ends without a token
		}
	}
	for b := range d.Rows {
		row, rs := &d.Rows[b], &r.states[b]
		if row.Done {
			continue
		}
		l := d.Logits(b)[:V]
		if !isFinite(l) {
			return made, fmt.Errorf("%w at position %d", ErrNonFinite, len(row.Seq))
		}
		id, err := r.s.choose(l, row.Seq, &rs.state, &rs.place, r.o.MaxNewTokens-d.Steps, r.o, rs.rand, r.tr)
		if errors.Is(err, errFormatEnded) {
			if err := r.st.end(b, r.emit); !errors.Is(err, errFinished) {
				return made, err
			}
			row.Done = true
			made-- // it ended without a token
			continue
		}
		if err != nil {
			return made, fmt.Errorf("%w at position %d", err, len(row.Seq))
		}
		mustEnd := false
		if rs.place.c != nil {
			if mustEnd, err = rs.place.advance(id); err != nil {
				return made, fmt.Errorf("%w at position %d", err, len(row.Seq))
			}
		}
		if r.tr != nil && r.o.TraceAttention {
			src := d.PassRow(b) // at the first step, the prompt's pass in the first row
			r.tr.setAttention(src.Att, src.Window, r.m.cfg.BlockSize)
		}
		row.Seq = append(row.Seq, id)
		rs.state.add(id)
		if r.tr != nil {
			r.tr.Pos = len(row.Seq) - 1
		}
		err = r.st.add(b, id, r.tr, r.emit)
		if err == nil && mustEnd {
			err = r.st.end(b, r.emit)
		}
		if errors.Is(err, errFinished) {
			row.Done = true
		} else if err != nil {
			return made, err
		}
	}
	return made, nil
}

// End ends the request: samples still running end at the length
// limit, releasing their held-back tokens; beams become the best
// hypotheses.
func (r *request) End(d *decode.Request) error {
	if r.beam != nil {
		return r.beam.finish(d.Seqs(), r.vocab, r.emit)
	}
	return r.st.finish(r.emit)
}

// Abort ends the request early, keeping what it has released; a beam
// search keeps its best beams so far, as finished at their length.
func (r *request) Abort(d *decode.Request) {
	if r.beam != nil {
		_ = r.beam.finish(d.Seqs(), r.vocab, nil) // without emit it cannot fail
	}
}

// results returns r's completions: every sample's released tokens, or the
// best beams.
func (r *request) results() []Completion {
	if r.beam != nil {
		return r.beam.results(r.vocab)
	}
	res := make([]Completion, len(r.Rows))
	for b := range res {
		s := &r.st.samples[b]
		res[b] = Completion{Index: b, IDs: slices.Clip(s.ids[:s.released]), Finish: s.finish}
		res[b].Incomplete = r.st.incomplete(s.ids[:s.released])
		if r.vocab != nil {
			res[b].Text = r.st.text(b)
		}
		if r.st.trace && !r.st.streamed {
			res[b].Steps = s.steps[:s.released]
		}
	}
	return res
}

// serial is what a call needs to run its request alone: a decoder with a
// cache slot per row, its pass, the sampler, the rows' buffers and the
// trace buffer. It never lives in the Model, so that calls on one Model
// may run concurrently; it is pooled per (config, rows), so that a call
// allocates it only when no earlier call left one behind, and a token
// allocates nothing.
type serial struct {
	key    serialKey
	dec    *decode.Decoder
	pass   pass
	s      sampler
	rows   []decode.Row
	states []rowState
	slots  []int
	step   Step
}

type serialKey struct {
	cfg  Config
	rows int
}

var serialPools sync.Map // serialKey -> *sync.Pool of *serial

// getSerial returns the scratch of a call of R rows on models of config c.
func getSerial(c Config, R int) *serial {
	key := serialKey{c, R}
	p, ok := serialPools.Load(key)
	if !ok {
		p, _ = serialPools.LoadOrStore(key, &sync.Pool{})
	}
	sc, _ := p.(*sync.Pool).Get().(*serial)
	if sc == nil {
		sc = &serial{key: key, dec: c.newDecoder(R), s: newSampler(c.VocabSize), rows: make([]decode.Row, R), states: newRowStates(c, R), slots: make([]int, R)}
		for b := range sc.slots {
			sc.slots[b] = b
		}
	}
	return sc
}

func putSerial(sc *serial) {
	sc.pass.m = nil // the pool keeps no model alive
	p, _ := serialPools.Load(sc.key)
	p.(*sync.Pool).Put(sc)
}

// newDecoder returns a decoder with a cache of S slots for models of
// config c.
func (c Config) newDecoder(S int) *decode.Decoder {
	return decode.NewDecoder(c.newKVCache(S), c.VocabSize)
}

// newKVCache returns a cache of S slots for models of config c.
func (c Config) newKVCache(S int) *decode.KVCache {
	return decode.NewKVCache(c.Layers, c.BlockSize, c.EmbedDim, S)
}

// newRowStates returns R rows' sampling states for models of config c.
func newRowStates(c Config, R int) []rowState {
	rs := make([]rowState, R)
	for b := range rs {
		rs[b].state = seqState{seen: make([]bool, c.VocabSize), counts: make([]int32, c.VocabSize)}
	}
	return rs
}
