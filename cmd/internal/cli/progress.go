package cli

// This file holds the progress line of long work (scoring a large text,
// reading or writing a large model, preparing a large corpus): on
// standard error, only to a terminal unless -progress asks for it, so
// that it never lands in piped output.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// ProgressUsage is the -progress flag's usage, the same in every command.
const ProgressUsage = "show progress and the time left on standard error even when it is not a terminal (a line a tenth of the work); a terminal always gets it"

// ProgressOut is where a command's progress goes: its standard error
// when that is a terminal (one line, redrawn in place) or when -progress
// asks for it (a line at every tenth of the work), otherwise nowhere.
// The zero ProgressOut shows nothing.
type ProgressOut struct {
	w    io.Writer
	live bool
}

// ProgressTo returns where progress goes for a command whose standard
// error is stderr (the writer Main gave it, possibly inside a
// CheckedWriter) and whose -progress flag is always.
func ProgressTo(stderr io.Writer, always bool) ProgressOut {
	live := IsTerminal(stderr)
	if !live && !always {
		return ProgressOut{}
	}
	return ProgressOut{w: stderr, live: live}
}

// IsTerminal reports whether w is a character device such as a terminal
// (seeing through a CheckedWriter).
func IsTerminal(w io.Writer) bool {
	if c, ok := w.(*CheckedWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Start begins a report on total units of work ("bytes" are shown in
// kB, MB or GB), called what ("scoring notes.txt"). It returns nil when progress
// goes nowhere; every method of a nil *Progress does nothing, so callers
// need not ask.
func (o ProgressOut) Start(what, unit string, total int64) *Progress {
	if o.w == nil {
		return nil
	}
	return newProgress(o.w, o.live, what, unit, total, time.Now)
}

// StartLarge is Start for reading or writing size bytes, or nil when
// they are too few to take long (under 16 MiB: well under a second).
func (o ProgressOut) StartLarge(what string, size int64) *Progress {
	if size < progressMinBytes {
		return nil
	}
	return o.Start(what, "bytes", size)
}

// progressMinBytes is the smallest file whose reading or writing shows
// progress; a variable so that tests can lower it.
var progressMinBytes int64 = 16 << 20

// Progress reports how much of one piece of work is done and how long the
// rest should take, from the mean rate so far. A live line first shows
// half a second into the work (work that ends sooner shows nothing).
// Its methods are safe for concurrent use.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool // one line redrawn in place, else a line per tenth
	what  string
	unit  string
	total int64
	done  int64
	now   func() time.Time
	start time.Time
	last  time.Time // of the last live draw
	drawn int       // width of the live line on screen; 0: none
	tenth int64     // tenths already logged
	ended bool
	guess chan struct{} // closed to stop an Estimate
}

// liveEvery is the least time between two redraws of a live line, and
// liveAfter the time a live line waits before its first draw, so that
// work which ends sooner leaves nothing flickering on the terminal.
const (
	liveEvery = 100 * time.Millisecond
	liveAfter = 500 * time.Millisecond
)

func newProgress(w io.Writer, live bool, what, unit string, total int64, now func() time.Time) *Progress {
	return &Progress{w: w, live: live, what: what, unit: unit, total: max(total, 1), now: now, start: now()}
}

// Set records that done units of the work are done.
func (p *Progress) Set(done int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set(done)
}

// Add records n more units done.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set(p.done + n)
}

func (p *Progress) set(done int64) {
	if p.ended {
		return
	}
	p.done = min(max(done, 0), p.total)
	now := p.now()
	if p.live {
		switch {
		case p.drawn == 0 && now.Sub(p.start) < liveAfter:
		case p.done == p.total || now.Sub(p.last) >= liveEvery:
			p.draw(now)
		}
		return
	}
	if t := p.done * 10 / p.total; t > p.tenth {
		p.tenth = t
		fmt.Fprintln(p.w, p.line(now))
	}
}

// draw redraws the live line.
func (p *Progress) draw(now time.Time) {
	line := p.line(now)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(0, p.drawn-len(line))))
	p.drawn, p.last = len(line), now
}

// line is the report: "scoring x.txt: 45% (502000 of 1115393 characters), 12s so far, about 15s left".
func (p *Progress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	s := fmt.Sprintf("%s: %d%% (%s), %s so far", p.what, p.done*100/p.total, p.amount(), roundDuration(elapsed))
	switch {
	case p.done == p.total:
		s += ", done"
	case p.done > 0 && elapsed > 0:
		left := time.Duration(float64(elapsed) * float64(p.total-p.done) / float64(p.done))
		s += ", about " + roundDuration(left) + " left"
	}
	return s
}

// amount says how much of the total is done, in the work's unit.
func (p *Progress) amount() string {
	if p.unit == "bytes" {
		scale, unit := 1e3, "kB"
		switch {
		case p.total >= 1e9:
			scale, unit = 1e9, "GB"
		case p.total >= 1e6:
			scale, unit = 1e6, "MB"
		}
		return fmt.Sprintf("%.1f of %.1f %s", float64(p.done)/scale, float64(p.total)/scale, unit)
	}
	return fmt.Sprintf("%d of %d %s", p.done, p.total, p.unit)
}

// roundDuration shows a duration to the second (a tenth below ten
// seconds), as people read a time left.
func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Done ends the report: a live line is cleared, so that what the command
// prints next starts on a clean line. Later calls do nothing.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.stopEstimate()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if p.live && p.drawn > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawn))
		p.drawn = 0
	}
}

// Estimate is for work that reports nothing while it runs (a library
// call without a progress hook): until Done, it advances the report as if
// the work went at rate units a second, never past 99%, so that the line
// still moves and says about how long is left. The rate should come from
// a measurement: a sample of the same work, timed.
func (p *Progress) Estimate(rate float64) {
	if p == nil || !(rate > 0) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.guess != nil || p.ended {
		return
	}
	stop := make(chan struct{})
	p.guess = stop
	from, at := p.done, p.now()
	go func() {
		tick := time.NewTicker(liveEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				p.mu.Lock()
				guess := from + int64(rate*p.now().Sub(at).Seconds())
				p.set(min(guess, p.total*99/100))
				p.mu.Unlock()
			}
		}
	}()
}

func (p *Progress) stopEstimate() {
	p.mu.Lock()
	stop := p.guess
	p.guess = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
	}
}

// Reader returns r counting what is read from it as done.
func (p *Progress) Reader(r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return progressReader{r, p}
}

// Writer returns w counting what is written to it as done.
func (p *Progress) Writer(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return progressWriter{w, p}
}

type progressReader struct {
	r io.Reader
	p *Progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.Add(int64(n))
	return n, err
}

type progressWriter struct {
	w io.Writer
	p *Progress
}

func (w progressWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.p.Add(int64(n))
	return n, err
}
