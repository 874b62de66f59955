package minigpt

// This file holds a generation request while it runs (its samples or
// beams as rows, which rows each needs at a step, what it does with their
// logits) and the loop that runs a call's request alone on a decoder
// (decoder.go). A Batch runs many requests in one pass per step. Either
// way a request sees only its own rows, so its results do not depend on
// what else runs.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// request is one Generate or Complete call while it generates. A runner
// calls plan, runs the decoder's pass, then calls advance, once per step,
// until done.
type request struct {
	m      *Model
	o      *GenerateOptions
	prompt []int  // the prompt's window: its last BlockSize tokens
	full   []int  // the whole prompt
	vocab  *Vocab // for text; nil for token ids only
	rows   []reqRow
	s      *sampler
	st     *stopper   // sampling and greedy decoding
	beam   *beamState // beam search
	swap   *kvCache   // beam search's buffer for reordering the rows' caches
	views  [][]int    // beam search's view of the rows' sequences
	tr     *Step      // the trace buffer, with Trace
	emit   func(*Completion) error

	steps   int  // tokens generated so far (every running row has as many)
	active  int  // rows still generating
	planned bool // plan added rows to this step's pass
	made    int  // tokens the last advance produced
	prefill int  // prompt positions in rows[0]'s cache slot
	done    bool // no more steps
	err     error
}

// prefillChunk is the most prompt positions a request computes in one
// step, so that a long prompt does not stall a batch's other requests.
// Where the chunks fall moves no bit.
const prefillChunk = 64

// start readies r to run on slots (one per row): every row the prompt,
// sampled rows their generators, the stopper or the beam search.
func (r *request) start(slots []int) {
	n := len(r.rows)
	for b := range r.rows {
		row := &r.rows[b]
		row.slot, row.cached, row.done, row.pass = slots[b], 0, false, -1
		row.seq = append(row.seq[:0], r.full...)
		row.state.reset(r.full)
		row.place.start(r.o.Constraint)
	}
	r.steps, r.prefill, r.done, r.err = 0, 0, false, nil
	r.active = n
	if r.o.MaxNewTokens == 0 {
		r.finish()
	}
}

// plan adds the rows r needs this step to the decoder's pass: the next
// chunk of the prompt (computed once, in the first row's slot), then per
// running row either its one new position against its cache or, once
// its sequence outgrew the block (or without a cache), its whole window.
func (r *request) plan(d *decoder) {
	for b := range r.rows {
		r.rows[b].pass = -1
	}
	r.planned = !r.done
	if r.done {
		return
	}
	T := r.m.cfg.BlockSize
	if P := len(r.prompt); r.prefill < P {
		end := min(P, r.prefill+prefillChunk)
		if r.o.noCache {
			end = P
		}
		out0 := end // no logits until the prompt is complete
		if end == P {
			out0 = P - 1
		}
		s := rowSeq{cache: d.kv.slot(r.rows[0].slot), ids: r.prompt[r.prefill:end], t0: r.prefill, t1: end, out0: out0}
		if end == P {
			s.att = r.rows[0].att
		}
		i := d.add(s)
		r.prefill = end
		if end == P {
			r.rows[0].pass, r.rows[0].window = i, P
		}
		return
	}
	for b := range r.rows {
		row := &r.rows[b]
		if row.done {
			continue
		}
		n := len(row.seq)
		if !r.o.noCache && n <= T && row.cached == n-1 {
			row.pass = d.add(rowSeq{cache: d.kv.slot(row.slot), ids: row.seq[n-1:], t0: n - 1, t1: n, out0: n - 1, att: row.att})
			row.cached, row.window = n, n
			continue
		}
		w := row.seq[max(0, n-T):]
		row.pass = d.add(rowSeq{cache: d.kv.slot(row.slot), ids: w, t0: 0, t1: len(w), out0: len(w) - 1, att: row.att})
		row.window = len(w)
		row.cached = 0 // the next token slides the window again
		if n <= T && !r.o.noCache {
			row.cached = n
		}
	}
}

// advance takes the logits of the step's pass: it chooses every running
// row's next token (or steps the beam search), streams what became final
// and ends the request when every row is done or the token budget is
// spent.
func (r *request) advance(d *decoder) {
	r.made = 0
	if r.done || !r.planned {
		return
	}
	r.planned = false
	if r.steps == 0 {
		if r.rows[0].pass < 0 {
			return // the prompt is still being filled
		}
		// The other rows start from the first one's prompt: its cache
		// and its logits (the same bits they would compute).
		P := len(r.prompt)
		r.rows[0].cached = P
		for b := 1; b < len(r.rows); b++ {
			d.kv.copySlot(r.rows[b].slot, r.rows[0].slot, P)
			r.rows[b].cached = P
		}
	}
	logits := func(b int) []float64 {
		if r.steps == 0 {
			b = 0
		}
		return d.logits(r.rows[b].pass)
	}
	var err error
	r.made = r.active
	if r.beam != nil {
		var grow, ended bool
		grow, ended, err = r.beam.advance(r.seqs(), r.steps, logits)
		if grow {
			r.followParents(d.kv)
		}
		if ended {
			r.active = 0
		}
	} else {
		err = r.sample(logits)
	}
	r.steps++
	if err != nil {
		r.err, r.done = err, true
		return
	}
	if r.active == 0 || r.steps >= r.o.MaxNewTokens {
		r.finish()
	}
}

// sample chooses every running row's next token: greedy argmax, or the
// pipeline and one draw from the row's generator.
func (r *request) sample(logits func(b int) []float64) error {
	V := r.m.cfg.VocabSize
	for b := range r.rows {
		row := &r.rows[b]
		if row.done {
			continue
		}
		l := logits(b)[:V]
		if !isFinite(l) {
			return fmt.Errorf("%w at position %d", ErrNonFinite, len(row.seq))
		}
		id, err := r.s.choose(l, row.seq, &row.state, &row.place, r.o.MaxNewTokens-r.steps, r.o, row.rand, r.tr)
		if errors.Is(err, errFormatEnded) {
			if err := r.st.end(b, r.emit); !errors.Is(err, errFinished) {
				return err
			}
			row.done = true
			r.active--
			r.made-- // it ended without a token
			continue
		}
		if err != nil {
			return fmt.Errorf("%w at position %d", err, len(row.seq))
		}
		mustEnd := false
		if row.place.c != nil {
			if mustEnd, err = row.place.advance(id); err != nil {
				return fmt.Errorf("%w at position %d", err, len(row.seq))
			}
		}
		if r.tr != nil && r.o.TraceAttention {
			src := row
			if r.steps == 0 {
				src = &r.rows[0] // the prompt's pass ran in the first row
			}
			r.tr.setAttention(src.att, src.window, r.m.cfg.BlockSize)
		}
		row.seq = append(row.seq, id)
		row.state.add(id)
		if r.tr != nil {
			r.tr.Pos = len(row.seq) - 1
		}
		err = r.st.add(b, id, r.tr, r.emit)
		if err == nil && mustEnd {
			err = r.st.end(b, r.emit)
		}
		if errors.Is(err, errFinished) {
			row.done = true
			r.active--
		} else if err != nil {
			return err
		}
	}
	return nil
}

// searchBeams makes r a beam search, bs, over its rows.
func (r *request) searchBeams(bs *beamState) {
	r.st, r.beam = nil, bs
	r.swap, r.views = newKVCache(r.m.cfg, len(r.rows)), make([][]int, len(r.rows))
}

// seqs returns the rows' sequences, for beam search.
func (r *request) seqs() [][]int {
	for b := range r.rows {
		r.views[b] = r.rows[b].seq
	}
	return r.views
}

// followParents makes each beam continue its parent after a step of the
// search: its sequence and its cache, through the swap buffers (a parent
// may have several children).
func (r *request) followParents(kv *kvCache) {
	bs := r.beam
	for b := range r.rows {
		pr, row := &r.rows[bs.parents[b]], &r.rows[b]
		row.spare = append(append(row.spare[:0], pr.seq...), bs.tokens[b])
		row.next = pr.cached
		for l := range kv.L {
			copy(r.swap.rows(l, b, 0, pr.cached), kv.rows(l, pr.slot, 0, pr.cached))
		}
	}
	for b := range r.rows {
		row := &r.rows[b]
		row.seq, row.spare = row.spare, row.seq
		row.cached = row.next
		for l := range kv.L {
			copy(kv.rows(l, row.slot, 0, row.cached), r.swap.rows(l, b, 0, row.cached))
		}
	}
}

// finish ends r: samples still running end at the length limit,
// releasing their held-back tokens; beams become the best hypotheses.
func (r *request) finish() {
	r.done = true
	if r.beam != nil {
		r.err = r.beam.finish(r.seqs(), r.vocab, r.emit)
		return
	}
	r.err = r.st.finish(r.emit)
}

// stop ends r early with err (a cancelled context, say), keeping what it
// has released; a beam search keeps its best beams so far, as finished
// at their length. Nothing is streamed after a stop.
func (r *request) stop(err error) {
	if r.done {
		return
	}
	r.done, r.err = true, err
	if r.beam != nil {
		_ = r.beam.finish(r.seqs(), r.vocab, nil) // without emit it cannot fail
	}
}

// results returns r's completions: every sample's released tokens, or the
// best beams.
func (r *request) results() []Completion {
	if r.beam != nil {
		return r.beam.results(r.vocab)
	}
	res := make([]Completion, len(r.rows))
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
	r := m.newRequest(o, ids, vocab, sc.rows, &sc.s, &sc.step)
	r.emit = o.Stream
	r.start(sc.slots)
	m.runAlone(ctx, r, sc.dec)
	return r.results(), r.err
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

// newRequest prepares a request for o on rows (o.rows() of them, their
// state buffers sized for the vocabulary), with s as its sampler and tr
// as its trace buffer.
func (m *Model) newRequest(o *GenerateOptions, ids []int, vocab *Vocab, rows []reqRow, s *sampler, tr *Step) *request {
	T := m.cfg.BlockSize
	r := &request{m: m, o: o, full: ids, prompt: ids[max(0, len(ids)-T):], vocab: vocab, rows: rows, s: s}
	if o.Trace && !o.beam() {
		r.tr = tr
		tr.Attention, tr.Context = nil, 0 // tr is pooled: no earlier call's weights
	}
	grow := len(ids) + min(o.MaxNewTokens, 1024) // more as tokens arrive
	attn := r.tr != nil && o.TraceAttention
	for b := range rows {
		rows[b].seq = slices.Grow(rows[b].seq[:0], grow)
		rows[b].att = nil
		if attn {
			rows[b].att = make([]float64, m.cfg.Layers*m.cfg.Heads*T)
		}
		rows[b].rand = nil
		if o.sampled() {
			rows[b].rand = sampleRand(o.Seed, b)
		}
	}
	stops := newStopper(o.Stop, vocab, len(rows), r.tr != nil, o.Stream != nil)
	stops.c = o.Constraint
	if o.beam() {
		r.searchBeams(newBeamState(m.cfg, o, len(ids), o.NumBeams, o.samples(), stops.stops, vocab))
		return r
	}
	r.st = stops
	for b := range r.st.samples {
		r.st.reset(b, min(o.MaxNewTokens, 1024))
	}
	return r
}

// reqRow is one sample (or beam): a sequence and its cache slot.
type reqRow struct {
	slot   int
	seq    []int // prompt + generated tokens
	spare  []int // beam search's buffer for the next step's sequence
	next   int   // beam search: the cached positions of the row's parent
	cached int   // positions of the sequence's window in the cache
	state  seqState
	place  place // in the constraint, if any (sampling and greedy decoding)
	rand   *rand.Rand
	done   bool
	pass   int       // the decoder index of the row's pass this step, or -1
	att    []float64 // with TraceAttention: the pass's attention weights, (L, NH, T)
	window int       // the length of the window of the row's last pass
}

// serial is what a call needs to run its request alone: a decoder with a
// cache slot per row, the sampler, the rows' buffers and the trace
// buffer. It never lives in the Model, so that calls on one Model may run
// concurrently; it is pooled per (config, rows), so that a call allocates
// it only when no earlier call left one behind, and a token allocates
// nothing.
type serial struct {
	key   serialKey
	dec   *decoder
	s     sampler
	rows  []reqRow
	slots []int
	step  Step
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
		V := c.VocabSize
		sc = &serial{key: key, dec: newDecoder(c, R), s: newSampler(V), rows: make([]reqRow, R), slots: make([]int, R)}
		for b := range sc.rows {
			sc.rows[b].state = seqState{seen: make([]bool, V), counts: make([]int32, V)}
			sc.slots[b] = b
		}
	}
	return sc
}

func putSerial(sc *serial) {
	p, _ := serialPools.Load(sc.key)
	p.(*sync.Pool).Put(sc)
}
