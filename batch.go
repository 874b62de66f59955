package minigpt

// This file holds Batch: continuous batching of many callers' requests
// on one model, with the bits each would get alone.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"example.org/minigpt/internal/decode"
)

// Batch generates for many callers at once on one model. Its requests run
// in lanes, one per processor: a lane is a decoding loop that advances
// every request it runs by one token (or a chunk of its prompt) per step,
// and requests join and leave between steps. A request needs one row per
// sample (or beam); once its rows are free, in order of arrival, it joins
// the lane with the fewest rows in use.
//
// Every request's completions are the bits Model.Generate or
// Model.Complete gives for the same options alone, whatever else is in
// the batch: rows never mix in a pass.
//
// Complete is safe for concurrent use and blocks until its request ends;
// its options' Stream runs on the caller's goroutine, so a slow callback
// slows only its own request. Cancelling a call's context stops its
// callbacks and returns ctx's error with the completions so far.
type Batch struct {
	m     *Model
	rows  int
	kv    *decode.KVCache // every row's cache slot
	lanes []*lane

	mu      sync.Mutex
	waiting []*batchCall
	free    []int // free rows (cache slots)
	closed  bool
	stats   BatchStats
	ended   int64 // requests that ended
}

// lane is one decoding loop of a Batch: the requests it runs, and the
// activations and sampler of its passes (the cache is the batch's). Its
// goroutine runs only while it has requests: an idle Batch holds none,
// and one no longer referenced is collected without Close.
type lane struct {
	b       *Batch
	running []*batchCall  // b.mu
	rows    int           // the rows its requests hold (b.mu)
	active  bool          // its goroutine runs (b.mu)
	done    chan struct{} // closed when that goroutine ends (b.mu)
	kick    chan struct{} // capacity 1: there is work

	dec   *decode.Decoder
	pass  pass
	s     sampler
	run   []*batchCall // the loop's copy of running
	group []*batchCall // the requests of a pass
}

// maxBatchRows is the largest number of rows a Batch may have.
const maxBatchRows = 1 << 12

// maxLanes caps a Batch's lanes, which are GOMAXPROCS when it is made.
const maxLanes = 8

// maxPassRows is the most positions a lane puts in one pass before it
// runs it (a request's own rows are never split): a pass that small stays
// in its core's cache.
const maxPassRows = 128

// NewBatch returns a Batch of the given number of rows (cache slots) on
// m, with GOMAXPROCS lanes (at most 8, and at most rows).
func NewBatch(m *Model, rows int) (*Batch, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil model", ErrBadOption)
	}
	if rows < 1 || rows > maxBatchRows {
		return nil, fmt.Errorf("%w: %d batch rows, want 1 to %d", ErrBadOption, rows, maxBatchRows)
	}
	if err := m.checkBatchMemory(rows); err != nil {
		return nil, err
	}
	b := &Batch{m: m, rows: rows, kv: m.cfg.newKVCache(rows)}
	for r := rows - 1; r >= 0; r-- {
		b.free = append(b.free, r)
	}
	b.stats.RowsHist = make([]int64, rows+1)
	for range min(runtime.GOMAXPROCS(0), rows, maxLanes) {
		b.lanes = append(b.lanes, &lane{b: b, kick: make(chan struct{}, 1),
			dec: decode.NewDecoder(b.kv, m.cfg.VocabSize), pass: pass{m: m}, s: newSampler(m.cfg.VocabSize)})
	}
	return b, nil
}

// BatchStats is a snapshot of a Batch's counters.
type BatchStats struct {
	Steps    int64   // steps run, every lane's: each advances its lane's requests once
	Tokens   int64   // tokens generated (every sample's or beam's)
	RowsHist []int64 // RowsHist[n]: steps that ran with n of the batch's rows in use
	RowsUsed int     // rows in use now
}

// Stats returns a snapshot of b's counters.
func (b *Batch) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.RowsHist = append([]int64(nil), b.stats.RowsHist...)
	s.RowsUsed = b.rows - len(b.free)
	return s
}

// ErrClosed is returned by a closed Batch's Complete.
var ErrClosed = errors.New("batch closed")

// Close makes later calls get ErrClosed and waits for the running and
// waiting requests to end (cancel their contexts to end them sooner).
func (b *Batch) Close() {
	for {
		b.mu.Lock()
		b.closed = true
		var done chan struct{}
		for _, l := range b.lanes {
			if l.active {
				done = l.done
			}
		}
		b.mu.Unlock()
		if done == nil {
			return // a request waits only while another holds rows, in a lane
		}
		<-done
	}
}

// Complete is Model.Complete run in the batch.
func (b *Batch) Complete(ctx context.Context, vocab *Vocab, prompt string, opts GenerateOptions) ([]Completion, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil batch", ErrBadOption)
	}
	if err := checkCall(b.m, ctx); err != nil {
		return nil, err
	}
	ids, err := b.m.checkComplete(vocab, prompt, &opts)
	if err != nil {
		return nil, err
	}
	return b.generate(ctx, ids, &opts, vocab)
}

// batchCall is a request in a Batch and what passes between its lane and
// the caller: the chunks and steps to deliver, and the end.
type batchCall struct {
	r      *request
	need   int
	rows   []decode.Row
	slots  []int
	step   Step
	signal chan struct{} // capacity 1: events, or the end
	lane   *lane         // once admitted (b.mu)

	mu        sync.Mutex
	events    []batchEvent
	cancelled error // set by the caller: the loop drops the request
	ended     bool  // set by the loop: the request is done and its rows free
}

// batchEvent is a streamed part for the caller to deliver.
type batchEvent struct {
	chunk Completion
}

// maxBacklog is how many undelivered events pause a request: its lane
// does not advance it until its caller catches up. Tests lower it.
var maxBacklog = 4096

func (b *Batch) generate(ctx context.Context, ids []int, o *GenerateOptions, vocab *Vocab) ([]Completion, error) {
	R := o.rows()
	if R > b.rows {
		return nil, fmt.Errorf("%w: the request needs %d rows, the batch has %d", ErrBadOption, R, b.rows)
	}
	c := &batchCall{need: R, rows: make([]decode.Row, R), signal: make(chan struct{}, 1)}
	c.r = b.m.newRequest(o, ids, vocab, c.rows, newRowStates(b.m.cfg, R), &b.lanes[0].s, &c.step) // admission gives it its lane's
	c.r.emit = c.enqueueChunk
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	b.waiting = append(b.waiting, c)
	b.admit()
	b.mu.Unlock()
	var events []batchEvent
	over := false // cancelled, or a callback failed: no more callbacks, as alone
	// failed is the callback's error or the cancellation, whichever came
	// first, the call's even if the loop had ended the request: its last
	// events go undelivered.
	var failed error
	halt := func(err error) {
		c.cancel(err)
		if !over {
			over, failed = true, err
		}
		b.wake(c)
	}
	for {
		select {
		case <-c.signal:
		case <-ctx.Done():
			halt(ctx.Err())
			<-c.signal // the lane's acknowledgement: the rows are free
		}
		c.mu.Lock()
		events, c.events = c.events, events[:0]
		ended := c.ended
		c.mu.Unlock()
		if len(events) > maxBacklog {
			b.wake(c) // the request was paused: it may go on
		}
		for i := range events {
			if !over && ctx.Err() != nil {
				halt(ctx.Err()) // by an earlier callback, say
			}
			if over {
				break
			}
			if err := c.deliver(&events[i], o); err != nil {
				halt(err)
			}
		}
		if ended {
			break
		}
	}
	c.mu.Lock()
	err := c.cancelled
	c.mu.Unlock()
	if failed != nil {
		err = failed
	}
	if err == nil {
		err = c.r.Err
	}
	return c.r.results(), err
}

// deliver runs the caller's callback for one event.
func (c *batchCall) deliver(e *batchEvent, o *GenerateOptions) error {
	if o.Stream != nil {
		return o.Stream(&e.chunk)
	}
	return nil
}

// cancel ends the request with err (the first one counts): the loop drops
// it at its next step.
func (c *batchCall) cancel(err error) {
	c.mu.Lock()
	if c.cancelled == nil && !c.ended {
		c.cancelled = err
	}
	c.mu.Unlock()
}

// enqueueChunk is the request's emit: the chunk's IDs are a view of the
// stopper's tokens, which are final and never written again; its Steps
// are copied, as the stopper reuses their buffers once delivered.
func (c *batchCall) enqueueChunk(ch *Completion) error {
	e := batchEvent{chunk: *ch}
	if ch.Steps != nil {
		e.chunk.Steps = make([]Step, len(ch.Steps))
		for i := range ch.Steps {
			e.chunk.Steps[i] = ch.Steps[i].Clone()
		}
	}
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	c.notify()
	return nil
}

func (c *batchCall) notify() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// backlog reports whether the caller has fallen behind.
func (c *batchCall) backlog() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events) > maxBacklog
}

// wake tells c's lane that c changed (cancelled, or caught up with its
// events); a request still waiting is ended by admission if cancelled.
func (b *Batch) wake(c *batchCall) {
	b.mu.Lock()
	l := c.lane
	if l == nil {
		b.admit()
	}
	b.mu.Unlock()
	if l != nil {
		l.signal()
	}
}

func (l *lane) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// admit starts waiting requests, in order, while their rows are free,
// each in the lane with the fewest rows in use, and ends the cancelled
// ones. b.mu is held.
func (b *Batch) admit() {
	kept := b.waiting[:0]
	for _, c := range b.waiting {
		c.mu.Lock()
		cancelled := c.cancelled != nil
		c.mu.Unlock()
		switch {
		case cancelled:
			b.end(c)
			continue
		case len(kept) > 0 || len(b.free) < c.need:
			kept = append(kept, c) // behind the first that waits, in order
			continue
		}
		c.slots = append(c.slots[:0], b.free[len(b.free)-c.need:]...)
		b.free = b.free[:len(b.free)-c.need]
		l := b.lanes[0]
		for _, x := range b.lanes[1:] {
			if x.rows < l.rows {
				l = x
			}
		}
		c.lane, c.r.s = l, &l.s
		c.r.Start(c.slots)
		l.running = append(l.running, c)
		l.rows += c.need
		if l.active {
			l.signal()
		} else {
			l.active, l.done = true, make(chan struct{})
			go l.loop(l.done)
		}
	}
	clear(b.waiting[len(kept):])
	b.waiting = kept
}

// loop is a lane's decoding loop: it runs a step over the lane's requests
// and hands each what it produced, until it has none (admission starts
// it again), holding the model's read lock meanwhile.
func (l *lane) loop(done chan struct{}) {
	b := l.b
	b.m.use.RLock()
	defer func() {
		b.m.use.RUnlock()
		close(done)
	}()
	for {
		b.mu.Lock()
		l.run = append(l.run[:0], l.running...)
		if len(l.run) == 0 {
			l.active = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		if !l.step(l.run) {
			// Every request of the lane is paused for its caller: wait
			// for one to catch up (or be cancelled) or for a new one.
			<-l.kick
		}
	}
}

// step advances the lane's requests once, in passes of about maxPassRows
// positions, and ends those that are done or cancelled. It reports
// whether any request moved: false when every one is paused for its
// caller.
func (l *lane) step(run []*batchCall) bool {
	b, d := l.b, l.dec
	moved, passed, tokens := false, false, 0
	for i := 0; i < len(run); {
		d.Begin()
		l.group = l.group[:0]
		for ; i < len(run) && (len(l.group) == 0 || d.Rows() < maxPassRows); i++ {
			c := run[i]
			c.mu.Lock()
			cancelled := c.cancelled
			c.mu.Unlock()
			switch {
			case cancelled != nil:
				c.r.Stop(cancelled)
				moved = true
			case !c.backlog():
				c.r.Plan(d)
				l.group = append(l.group, c)
				moved = true
			}
		}
		if d.Len() > 0 {
			passed = true
			d.Run(&l.pass)
		}
		for _, c := range l.group {
			c.r.Advance(d)
			tokens += c.r.Made
		}
		clear(l.group)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if passed {
		b.stats.Steps++
		b.stats.RowsHist[min(b.rows-len(b.free), len(b.stats.RowsHist)-1)]++
	}
	b.stats.Tokens += int64(tokens)
	kept, ended := l.running[:0], false
	for _, c := range l.running {
		if c.r.Done {
			l.rows -= c.need
			b.end(c)
			ended = true
			continue
		}
		kept = append(kept, c)
	}
	clear(l.running[len(kept):])
	l.running = kept
	if ended {
		b.admit()
	}
	return moved
}

// end frees c's rows and tells its caller. b.mu is held.
func (b *Batch) end(c *batchCall) {
	b.free = append(b.free, c.slots...)
	c.slots = c.slots[:0]
	b.ended++
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.notify()
}
