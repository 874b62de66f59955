// Package decode runs generation requests through a model one step at a
// time: a request's rows (its samples or beams), the positions each row
// computes in a step's forward pass, the KV cache that keeps their keys
// and values between steps, and the loop that runs one request alone.
//
// What a request does with a step's logits (sampling, beam search, stop
// strings, streaming) is its Chooser's, and the forward pass is a Pass:
// both belong to the caller. A request sees only its own rows, so its
// results do not depend on what else runs in the same pass.
package decode

import "context"

// Seq is one sequence's part of a forward pass: the rows of its
// positions [T0, T1), whose keys and values join those of positions
// [0, T0) in its cache slot, and whose logits are wanted from position
// Out0 on (Out0 == T1: none; the pass only fills the cache). Positions
// count from the start of the sequence's window, as the lessons'
// ids[-block_size:] does.
type Seq struct {
	// Cache is the sequence's slot of a KV cache: (L, BlockSize, 3C), the
	// queries, keys and values of its positions, layer by layer; nil in
	// training, where a batch's own rows are its cache.
	Cache  []float64
	IDs    []int // the tokens at positions [T0, T1)
	T0, T1 int
	Out0   int
	// Att, if not nil, receives the attention weights of the last
	// position, T1-1, in every layer and head: (L, NH, BlockSize), row
	// (l, h) holding its weights over positions [0, T1).
	Att []float64
}

// Pass is the model's forward pass over a step's sequences.
type Pass interface {
	// Forward computes seqs, rows positions in all, in one pass, writing
	// their keys and values into their cache slots, and returns their
	// logits: VocabSize for each wanted position, the sequences' end to
	// end. The logits stay valid until the next call.
	Forward(seqs []Seq, rows int) []float64
}

// Chooser is what a request does with its rows' logits.
type Chooser interface {
	// Choose chooses, at a step, every running row's next token from
	// r.Logits(b): it appends the token to the row's Seq, or ends the row
	// (Done) without one; a beam search moves the rows with r.Follow. It
	// returns the tokens the step made.
	Choose(r *Request) (made int, err error)
	// End ends r at its length limit or once every row is done.
	End(r *Request) error
	// Abort ends r early (a cancelled context, say): it keeps what it has
	// released and streams nothing more.
	Abort(r *Request)
}

// Row is one sample (or beam) of a request: a sequence and its cache
// slot.
type Row struct {
	Seq    []int     // prompt + generated tokens
	Done   bool      // the row generates no more
	Att    []float64 // with attention tracing: its pass's weights, (L, NH, BlockSize)
	Window int       // the length of the window of the row's last pass

	slot   int
	spare  []int // beam search's buffer for the next step's sequence
	next   int   // beam search: the cached positions of the row's parent
	cached int   // positions of the sequence's window in the cache
	pass   int   // the decoder index of the row's pass this step, or -1
}

// Request is one generation call while it generates. A runner calls
// Plan, runs the decoder's pass, then calls Advance, once per step, until
// Done.
type Request struct {
	Rows  []Row
	Steps int   // tokens generated so far (every running row has as many)
	Made  int   // tokens the last Advance produced
	Done  bool  // no more steps
	Err   error // why the request ended early, if it did

	c       Chooser
	prompt  []int // the prompt's window: its last blockSize tokens
	full    []int // the whole prompt
	block   int   // the block size
	maxNew  int
	noCache bool

	active  int  // rows still generating
	planned bool // Plan added rows to this step's pass
	prefill int  // prompt positions in Rows[0]'s cache slot
	d       *Decoder
	swap    *KVCache // beam search's buffer for reordering the rows' caches
	views   [][]int  // beam search's view of the rows' sequences
}

// PrefillChunk is the most prompt positions a request computes in one
// step, so that a long prompt does not stall a batch's other requests.
// Where the chunks fall moves no bit.
const PrefillChunk = 64

// Init readies r to continue prompt on rows (one per sample or beam) for
// at most maxNew tokens, each window the last blockSize tokens, with c
// choosing the tokens. With noCache every step computes its windows
// whole, without the cache (tests compare the two).
func (r *Request) Init(c Chooser, prompt []int, rows []Row, blockSize, maxNew int, noCache bool) {
	*r = Request{Rows: rows, c: c, full: prompt, prompt: prompt[max(0, len(prompt)-blockSize):], block: blockSize, maxNew: maxNew, noCache: noCache}
}

// Start readies r to run on slots (one per row): every row the prompt.
func (r *Request) Start(slots []int) {
	for b := range r.Rows {
		row := &r.Rows[b]
		row.slot, row.cached, row.Done, row.pass = slots[b], 0, false, -1
		row.Seq = append(row.Seq[:0], r.full...)
	}
	r.Steps, r.prefill, r.Done, r.Err = 0, 0, false, nil
	r.active = len(r.Rows)
	if r.maxNew == 0 {
		r.end()
	}
}

// Plan adds the rows r needs this step to d's pass: the next chunk of
// the prompt (computed once, in the first row's slot), then per running
// row either its one new position against its cache or, once its
// sequence outgrew the block (or without a cache), its whole window.
func (r *Request) Plan(d *Decoder) {
	for b := range r.Rows {
		r.Rows[b].pass = -1
	}
	r.planned = !r.Done
	if r.Done {
		return
	}
	T := r.block
	if P := len(r.prompt); r.prefill < P {
		end := min(P, r.prefill+PrefillChunk)
		if r.noCache {
			end = P
		}
		out0 := end // no logits until the prompt is complete
		if end == P {
			out0 = P - 1
		}
		s := Seq{Cache: d.KV.Slot(r.Rows[0].slot), IDs: r.prompt[r.prefill:end], T0: r.prefill, T1: end, Out0: out0}
		if end == P {
			s.Att = r.Rows[0].Att
		}
		i := d.Add(s)
		r.prefill = end
		if end == P {
			r.Rows[0].pass, r.Rows[0].Window = i, P
		}
		return
	}
	for b := range r.Rows {
		row := &r.Rows[b]
		if row.Done {
			continue
		}
		n := len(row.Seq)
		if !r.noCache && n <= T && row.cached == n-1 {
			row.pass = d.Add(Seq{Cache: d.KV.Slot(row.slot), IDs: row.Seq[n-1:], T0: n - 1, T1: n, Out0: n - 1, Att: row.Att})
			row.cached, row.Window = n, n
			continue
		}
		w := row.Seq[max(0, n-T):]
		row.pass = d.Add(Seq{Cache: d.KV.Slot(row.slot), IDs: w, T0: 0, T1: len(w), Out0: len(w) - 1, Att: row.Att})
		row.Window = len(w)
		row.cached = 0 // the next token slides the window again
		if n <= T && !r.noCache {
			row.cached = n
		}
	}
}

// Advance hands the logits of d's pass to the Chooser, which chooses
// every running row's next token (or steps the beam search), and ends
// the request when every row is done or the token budget is spent.
func (r *Request) Advance(d *Decoder) {
	r.Made = 0
	if r.Done || !r.planned {
		return
	}
	r.planned = false
	if r.Steps == 0 {
		if r.Rows[0].pass < 0 {
			return // the prompt is still being filled
		}
		// The other rows start from the first one's prompt: its cache
		// and its logits (the same bits they would compute).
		P := len(r.prompt)
		r.Rows[0].cached = P
		for b := 1; b < len(r.Rows); b++ {
			d.KV.CopySlot(r.Rows[b].slot, r.Rows[0].slot, P)
			r.Rows[b].cached = P
		}
	}
	r.d = d
	made, err := r.c.Choose(r)
	r.d = nil
	r.Made = made
	r.active = 0
	for b := range r.Rows {
		if !r.Rows[b].Done {
			r.active++
		}
	}
	r.Steps++
	if err != nil {
		r.Err, r.Done = err, true
		return
	}
	if r.active == 0 || r.Steps >= r.maxNew {
		r.end()
	}
}

// PassRow returns the row whose pass gave row b's logits this step: the
// first row's, which computed the prompt, at the first step.
func (r *Request) PassRow(b int) *Row {
	if r.Steps == 0 {
		b = 0
	}
	return &r.Rows[b]
}

// Logits returns row b's logits at this step; only Choose may call it.
func (r *Request) Logits(b int) []float64 { return r.d.Logits(r.PassRow(b).pass) }

// Seqs returns the rows' sequences, for beam search.
func (r *Request) Seqs() [][]int {
	if r.views == nil {
		r.views = make([][]int, len(r.Rows))
	}
	for b := range r.Rows {
		r.views[b] = r.Rows[b].Seq
	}
	return r.views
}

// Follow makes each row b continue row parents[b] with token tokens[b],
// after a step of beam search: its sequence and its cache, through the
// swap buffers (a parent may have several children). Only Choose may
// call it.
func (r *Request) Follow(parents, tokens []int) {
	kv := r.d.KV
	if r.swap == nil {
		r.swap = &KVCache{buf: make([]float64, len(r.Rows)*kv.L*kv.T*kv.C3), S: len(r.Rows), T: kv.T, C3: kv.C3, L: kv.L}
	}
	for b := range r.Rows {
		pr, row := &r.Rows[parents[b]], &r.Rows[b]
		row.spare = append(append(row.spare[:0], pr.Seq...), tokens[b])
		row.next = pr.cached
		for l := range kv.L {
			copy(r.swap.Rows(l, b, 0, pr.cached), kv.Rows(l, pr.slot, 0, pr.cached))
		}
	}
	for b := range r.Rows {
		row := &r.Rows[b]
		row.Seq, row.spare = row.spare, row.Seq
		row.cached = row.next
		for l := range kv.L {
			copy(kv.Rows(l, row.slot, 0, row.cached), r.swap.Rows(l, b, 0, row.cached))
		}
	}
}

// end ends r at its length limit or with every row done.
func (r *Request) end() {
	r.Done = true
	r.Err = r.c.End(r)
}

// Stop ends r early with err (a cancelled context, say), keeping what it
// has released. Nothing is streamed after a stop.
func (r *Request) Stop(err error) {
	if r.Done {
		return
	}
	r.Done, r.Err = true, err
	r.c.Abort(r)
}

// Run runs r to its end alone, one pass of d through p per step;
// cancelling ctx stops it between tokens.
func Run(ctx context.Context, r *Request, d *Decoder, p Pass) {
	for !r.Done {
		if err := ctx.Err(); err != nil {
			r.Stop(err)
			return
		}
		d.Begin()
		r.Plan(d)
		d.Run(p)
		r.Advance(d)
	}
}

// Decoder runs the rows its sequences ask for through one forward pass
// per step, each sequence with its own slot of the KV cache. Rows never
// mix, so a sequence's logits are the bits a pass over it alone gives.
type Decoder struct {
	KV     *KVCache
	V      int   // the vocabulary size: logits per position
	seqs   []Seq // this step's pass
	out    []int // each sequence's first row of logits
	rows   int   // rows in this step's pass
	nout   int   // rows of logits
	logits []float64
}

// NewDecoder returns a decoder of passes over kv's slots, of a model of
// V tokens.
func NewDecoder(kv *KVCache, V int) *Decoder { return &Decoder{KV: kv, V: V} }

// Begin starts a step's pass.
func (d *Decoder) Begin() { d.seqs, d.out, d.rows, d.nout = d.seqs[:0], d.out[:0], 0, 0 }

// Add adds one sequence's rows to the step's pass and returns its index.
func (d *Decoder) Add(s Seq) int {
	d.seqs = append(d.seqs, s)
	d.out = append(d.out, d.nout)
	d.rows += s.T1 - s.T0
	d.nout += s.T1 - s.Out0
	return len(d.seqs) - 1
}

// Len returns the number of sequences in the step's pass.
func (d *Decoder) Len() int { return len(d.seqs) }

// Rows returns the rows (positions) in the step's pass.
func (d *Decoder) Rows() int { return d.rows }

// Run runs the step's pass through p.
func (d *Decoder) Run(p Pass) {
	if len(d.seqs) == 0 {
		return
	}
	d.logits = p.Forward(d.seqs, d.rows)
}

// Logits returns the logits of the last position of the step's sequence
// i (which must have asked for them), valid until the next step.
func (d *Decoder) Logits(i int) []float64 { return d.LogitsAt(i, d.seqs[i].T1-1) }

// LogitsAt returns the logits of sequence i at position t, in [Out0, T1).
func (d *Decoder) LogitsAt(i, t int) []float64 {
	r := d.out[i] + t - d.seqs[i].Out0
	return d.logits[r*d.V : (r+1)*d.V]
}

// KVCache holds the queries, keys and values of every position of S
// sequence slots: (S, L, T, 3C), a slot's layers one after the other, so
// that a slot is one slice (Seq.Cache). A slot's rows are the qkv rows of
// its positions, so attention reads its keys and values from here,
// whether a pass computed them or an earlier one did.
type KVCache struct {
	buf   []float64
	S, T  int
	C3, L int
}

// NewKVCache returns a cache of S slots for a model of L layers, block
// size T and embedding width C.
func NewKVCache(L, T, C, S int) *KVCache {
	return &KVCache{buf: make([]float64, S*L*T*3*C), S: S, T: T, C3: 3 * C, L: L}
}

// Slot returns slot's (L, T, 3C) rows.
func (kv *KVCache) Slot(slot int) []float64 {
	n := kv.L * kv.T * kv.C3
	return kv.buf[slot*n : (slot+1)*n : (slot+1)*n]
}

// Rows returns slot's rows [t0, t1) at layer l.
func (kv *KVCache) Rows(l, slot, t0, t1 int) []float64 {
	base := (slot*kv.L + l) * kv.T * kv.C3
	return kv.buf[base+t0*kv.C3 : base+t1*kv.C3]
}

// CopySlot makes slot dst's first n positions a copy of slot src's, in
// every layer.
func (kv *KVCache) CopySlot(dst, src, n int) {
	for l := range kv.L {
		copy(kv.Rows(l, dst, 0, n), kv.Rows(l, src, 0, n))
	}
}
