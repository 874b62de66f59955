package minigpt

// This file holds Batch: continuous batching of many callers' requests
// on one model, with the bits each would get alone.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Batch generates for many callers at once on one model: a decoding loop
// advances every running request by one token (or a chunk of its prompt)
// per step, in one forward pass over all their rows, and requests join
// and leave between steps. A request needs one row per sample (or beam);
// one that finds too few free rows waits, in order of arrival.
//
// Every request's completions are the bits Model.Generate or
// Model.Complete gives for the same options alone, whatever else is in
// the batch and whenever it arrives: rows never mix in a pass, and a
// request sees only its own rows' logits.
//
// Its Generate and Complete are safe for concurrent use and block until
// their request ends; their options' Stream and OnStep run on the
// caller's goroutine, so a slow callback slows only its own request.
type Batch struct {
	m     *Model
	rows  int
	dec   *decoder
	s     sampler
	steps chan struct{} // capacity 1: there is work

	mu      sync.Mutex
	waiting []*batchCall
	running []*batchCall
	free    []int // free rows (cache slots)
	closed  bool
	stats   BatchStats
	done    chan struct{} // closed when the loop has ended

	run []*batchCall // the loop's copy of running, reused
}

// MaxBatchRows is the largest number of rows a Batch may have.
const MaxBatchRows = 1 << 12

// NewBatch returns a Batch of the given number of rows (cache slots) on
// m, and starts its loop; Close stops it.
func NewBatch(m *Model, rows int) (*Batch, error) {
	if rows < 1 || rows > MaxBatchRows {
		return nil, fmt.Errorf("%w: %d batch rows, want 1 to %d", ErrBadOption, rows, MaxBatchRows)
	}
	if err := m.checkBatchMemory(rows); err != nil {
		return nil, err
	}
	b := &Batch{m: m, rows: rows, dec: newDecoder(m.cfg, rows), s: newSampler(m.cfg.VocabSize),
		steps: make(chan struct{}, 1), done: make(chan struct{})}
	for r := rows - 1; r >= 0; r-- {
		b.free = append(b.free, r)
	}
	b.stats.RowsHist = make([]int64, rows+1)
	go b.loop()
	return b, nil
}

// BatchStats is a snapshot of a Batch's counters.
type BatchStats struct {
	Steps    int64         // forward passes run
	Tokens   int64         // tokens generated (every sample's or beam's)
	RowsHist []int64       // RowsHist[n]: steps that ran with n rows in use
	Requests int64         // requests that ended
	Waited   time.Duration // their total time waiting for rows
	Running  int           // requests running now
	Waiting  int           // requests waiting for rows now
	RowsUsed int           // rows in use now
}

// Stats returns a snapshot of b's counters.
func (b *Batch) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.RowsHist = append([]int64(nil), b.stats.RowsHist...)
	s.Running, s.Waiting, s.RowsUsed = len(b.running), len(b.waiting), b.rows-len(b.free)
	return s
}

// ErrClosed is returned by a closed Batch's Generate and Complete.
var ErrClosed = errors.New("batch closed")

// Close stops b once its running and waiting requests have ended (cancel
// their contexts to end them sooner); later calls get ErrClosed.
func (b *Batch) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.kick()
	<-b.done
}

// Generate is Model.Generate run in the batch.
func (b *Batch) Generate(ctx context.Context, prompt []int, opts GenerateOptions) ([]Completion, error) {
	if err := b.m.checkPrompt(prompt, &opts); err != nil {
		return nil, err
	}
	return b.generate(ctx, prompt, &opts, nil, nil)
}

// Complete is Model.Complete run in the batch.
func (b *Batch) Complete(ctx context.Context, vocab *Vocab, prompt string, opts CompleteOptions) ([]Completion, error) {
	ids, err := b.m.checkComplete(vocab, prompt, &opts)
	if err != nil {
		return nil, err
	}
	return b.generate(ctx, ids, &opts.GenerateOptions, opts.Stop, vocab.Chars())
}

// batchCall is a request in a Batch and what passes between the loop and
// the caller: the chunks and steps to deliver, and the end.
type batchCall struct {
	r      *request
	need   int
	rows   []reqRow
	slots  []int
	step   Step
	signal chan struct{} // capacity 1: events, or the end
	since  time.Time     // when it was submitted

	mu        sync.Mutex
	events    []batchEvent
	cancelled error // set by the caller: the loop drops the request
	ended     bool  // set by the loop: the request is done and its rows free
}

// batchEvent is a chunk or a step for the caller to deliver.
type batchEvent struct {
	chunk Chunk
	step  *Step
}

// maxBacklog is how many undelivered events pause a request: the loop
// does not advance it until its caller catches up. Tests lower it.
var maxBacklog = 4096

func (b *Batch) generate(ctx context.Context, ids []int, o *GenerateOptions, stop []string, chars []rune) ([]Completion, error) {
	R := rowsOf(o)
	if R > b.rows {
		return nil, fmt.Errorf("%w: the request needs %d rows, the batch has %d", ErrBadOption, R, b.rows)
	}
	V := b.m.cfg.VocabSize
	c := &batchCall{need: R, rows: make([]reqRow, R), signal: make(chan struct{}, 1), since: time.Now()}
	for i := range c.rows {
		c.rows[i].state = seqState{seen: make([]bool, V), counts: make([]int32, V)}
	}
	c.r = b.m.newRequest(o, ids, stop, chars, c.rows, &b.s, &c.step)
	c.r.emit = c.enqueueChunk
	if o.OnStep != nil {
		c.r.onStep = c.enqueueStep
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	b.waiting = append(b.waiting, c)
	b.mu.Unlock()
	b.kick()
	var events []batchEvent
	for {
		select {
		case <-c.signal:
		case <-ctx.Done():
			c.cancel(ctx.Err())
			b.kick()
			for !c.isEnded() {
				<-c.signal // the loop's acknowledgement: the rows are free
			}
		}
		c.mu.Lock()
		events, c.events = c.events, events[:0]
		ended := c.ended
		c.mu.Unlock()
		for i := range events {
			if err := c.deliver(&events[i], o); err != nil {
				c.cancel(err)
			}
		}
		b.kick() // a paused request may go on, a cancelled one end
		if ended {
			break
		}
	}
	c.mu.Lock()
	err := c.cancelled
	c.mu.Unlock()
	if err == nil {
		err = c.r.err
	}
	return c.r.results(chars), err
}

// deliver runs the caller's callback for one event.
func (c *batchCall) deliver(e *batchEvent, o *GenerateOptions) error {
	if e.step != nil {
		return o.OnStep(e.step)
	}
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

// enqueueChunk is the request's emit: the chunk's slices are views of
// the stopper's tokens, which are final and never written again.
func (c *batchCall) enqueueChunk(ch *Chunk) error {
	c.mu.Lock()
	c.events = append(c.events, batchEvent{chunk: *ch})
	c.mu.Unlock()
	c.notify()
	return nil
}

// enqueueStep is the request's OnStep: the step is copied, as the trace
// buffer is reused.
func (c *batchCall) enqueueStep(s *Step) error {
	cp := s.Clone()
	c.mu.Lock()
	c.events = append(c.events, batchEvent{step: &cp})
	c.mu.Unlock()
	c.notify()
	return nil
}

// isEnded reports whether the loop has ended c.
func (c *batchCall) isEnded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
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

func (b *Batch) kick() {
	select {
	case b.steps <- struct{}{}:
	default:
	}
}

// loop is the decoding loop: it admits waiting requests while rows are
// free, runs a step over every running request, and hands each what it
// produced, until the Batch is closed and idle.
func (b *Batch) loop() {
	defer close(b.done)
	holding := false // the model's read lock, held while requests run
	for {
		b.mu.Lock()
		b.admit()
		b.run = append(b.run[:0], b.running...)
		run := b.run
		idle := len(run) == 0
		closed := b.closed && idle && len(b.waiting) == 0
		b.mu.Unlock()
		if idle {
			if holding {
				b.m.use.RUnlock()
				holding = false
			}
			if closed {
				return
			}
			<-b.steps
			continue
		}
		if !holding {
			b.m.use.RLock()
			holding = true
		}
		if !b.step(run) {
			// Every running request is paused (its caller behind) and
			// nothing changed: wait for a caller to catch up, cancel, or a
			// new request, instead of spinning.
			<-b.steps
		}
	}
}

// admit starts waiting requests, in order, while their rows are free.
// b.mu is held.
func (b *Batch) admit() {
	for len(b.waiting) > 0 {
		c := b.waiting[0]
		c.mu.Lock()
		cancelled := c.cancelled != nil
		c.mu.Unlock()
		if cancelled {
			b.waiting = b.waiting[1:]
			b.end(c)
			continue
		}
		if len(b.free) < c.need {
			return
		}
		b.waiting = b.waiting[1:]
		c.slots = append(c.slots[:0], b.free[len(b.free)-c.need:]...)
		b.free = b.free[:len(b.free)-c.need]
		b.stats.Waited += time.Since(c.since)
		c.r.start(c.slots)
		b.running = append(b.running, c)
	}
}

// step runs one pass over the running requests and ends those that are
// done or cancelled; it reports whether anything happened.
func (b *Batch) step(run []*batchCall) bool {
	d := b.dec
	d.begin()
	for _, c := range run {
		c.mu.Lock()
		cancelled := c.cancelled
		c.mu.Unlock()
		if cancelled != nil {
			c.r.stop(cancelled)
			continue
		}
		if !c.backlog() {
			c.r.plan(d)
		}
	}
	if d.rows == 0 && !anyDone(run) {
		return false
	}
	d.run(b.m)
	tokens := 0
	for _, c := range run {
		c.r.advance(d)
		tokens += c.r.made
	}
	b.mu.Lock()
	b.stats.Steps++
	b.stats.Tokens += int64(tokens)
	b.stats.RowsHist[min(b.rows-len(b.free), len(b.stats.RowsHist)-1)]++
	kept := b.running[:0]
	for _, c := range b.running {
		if c.r.done {
			b.end(c)
			continue
		}
		kept = append(kept, c)
	}
	clear(b.running[len(kept):])
	b.running = kept
	b.mu.Unlock()
	return true
}

// anyDone reports whether a request of run is done (cancelled, say): the
// step must end it even if no row runs.
func anyDone(run []*batchCall) bool {
	for _, c := range run {
		if c.r.done {
			return true
		}
	}
	return false
}

// end frees c's rows and tells its caller. b.mu is held.
func (b *Batch) end(c *batchCall) {
	b.free = append(b.free, c.slots...)
	c.slots = c.slots[:0]
	b.stats.Requests++
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.notify()
}
