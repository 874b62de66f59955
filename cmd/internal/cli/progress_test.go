package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// syncBuffer is a bytes.Buffer safe for the Estimate goroutine's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestProgressLogLines(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	p := newProgress(&buf, false, "scoring x.txt", "characters", 1000, clock.now)
	if buf.Len() != 0 {
		t.Fatalf("a log starts with a line: %q", buf.String())
	}
	// 100 characters a second: a line at every tenth, none between.
	for i := int64(1); i <= 1000; i++ {
		clock.advance(10 * time.Millisecond)
		p.Set(i)
	}
	p.Done()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 10:\n%s", len(lines), buf.String())
	}
	for i, want := range map[int]string{
		0: "scoring x.txt: 10% (100 of 1000 characters), 1s so far, about 9s left",
		3: "scoring x.txt: 40% (400 of 1000 characters), 4s so far, about 6s left",
		8: "scoring x.txt: 90% (900 of 1000 characters), 9s so far, about 1s left",
		9: "scoring x.txt: 100% (1000 of 1000 characters), 10s so far, done",
	} {
		if lines[i] != want {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
}

func TestProgressLiveLine(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	p := newProgress(&buf, true, "writing m.safetensors", "bytes", 50e6, clock.now)
	// Nothing for the first half second: work that ends sooner leaves no
	// flicker.
	clock.advance(400 * time.Millisecond)
	p.Set(1e6)
	if buf.Len() != 0 {
		t.Fatalf("drawn before %v: %q", liveAfter, buf.String())
	}
	clock.advance(100 * time.Millisecond)
	p.Set(2e6)
	first := "\rwriting m.safetensors: 4% (2.0 of 50.0 MB), 500ms so far, about 12s left"
	if buf.String() != first {
		t.Fatalf("first draw %q, want %q", buf.String(), first)
	}
	buf.Reset()
	clock.advance(50 * time.Millisecond)
	p.Set(3e6)
	if buf.Len() != 0 {
		t.Errorf("redrawn within %v: %q", liveEvery, buf.String())
	}
	clock.advance(50 * time.Millisecond)
	p.Add(2e6)
	if want := "\rwriting m.safetensors: 10% (5.0 of 50.0 MB), 600ms so far, about 5.4s left"; buf.String() != want {
		t.Errorf("redraw = %q, want %q", buf.String(), want)
	}
	buf.Reset()
	// A shorter line blanks what the longer one left on screen.
	p.Set(50e6)
	got := buf.String()
	if !strings.HasPrefix(got, "\rwriting m.safetensors: 100% (50.0 of 50.0 MB), 600ms so far, done") || !strings.HasSuffix(got, "   ") {
		t.Errorf("the last line (always drawn) = %q", got)
	}
	buf.Reset()
	p.Done()
	if got := buf.String(); !strings.HasPrefix(got, "\r ") || !strings.HasSuffix(got, " \r") || strings.Trim(got, " \r") != "" {
		t.Errorf("Done leaves %q on the line, want it cleared", got)
	}
	buf.Reset()
	p.Done()
	p.Set(1)
	if buf.Len() != 0 {
		t.Errorf("after Done: %q", buf.String())
	}
}

func TestProgressLiveQuickWork(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	p := newProgress(&buf, true, "reading m.ckpt", "bytes", 100, clock.now)
	clock.advance(300 * time.Millisecond)
	p.Set(100)
	p.Done()
	if buf.Len() != 0 {
		t.Errorf("work of 300ms left %q on the terminal", buf.String())
	}
}

func TestProgressNowhere(t *testing.T) {
	var buf bytes.Buffer
	// A buffer (as a pipe or a file) is not a terminal: nothing without -progress.
	out := ProgressTo(NewCheckedWriter(&buf), false)
	p := out.Start("scoring", "characters", 10)
	if p != nil {
		t.Fatal("progress to a buffer without -progress")
	}
	// Every method of a nil *Progress does nothing.
	p.Set(3)
	p.Add(4)
	p.Estimate(100)
	p.Done()
	r := p.Reader(strings.NewReader("abc"))
	if b, _ := io.ReadAll(r); string(b) != "abc" {
		t.Errorf("nil Reader read %q", b)
	}
	if _, err := p.Writer(&buf).Write([]byte("x")); err != nil || buf.String() != "x" {
		t.Errorf("nil Writer: %v, %q", err, buf.String())
	}
	// -progress: lines, not a redrawn one.
	buf.Reset()
	p = ProgressTo(&buf, true).Start("reading c.txt", "bytes", 100)
	if p == nil || p.live {
		t.Fatalf("-progress to a buffer: %+v", p)
	}
	if _, err := io.ReadAll(p.Reader(strings.NewReader(strings.Repeat("z", 100)))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "reading c.txt: 100% (0.1 of 0.1 kB)") || strings.Contains(buf.String(), "\r") {
		t.Errorf("-progress wrote %q", buf.String())
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(NewCheckedWriter(f)) {
		t.Error("a regular file is a terminal")
	}
	// /dev/null is a character device too, so it counts as one: the
	// progress line is then written where nobody sees it, harmlessly.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	if !IsTerminal(NewCheckedWriter(null)) {
		t.Error("IsTerminal does not see through a CheckedWriter")
	}
}

func TestProgressEstimate(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	var buf syncBuffer
	p := newProgress(&buf, false, "encoding", "characters", 1000, clock.now)
	// 100 characters a second, as a timed sample said: after 5 s of a
	// call that reports nothing, the line says half is done.
	p.Estimate(100)
	clock.advance(5 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "50%") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), "encoding: 50% (500 of 1000 characters), 5s so far, about 5s left") {
		t.Fatalf("after 5 s at 100/s: %q", buf.String())
	}
	// Never past 99% on a guess, however long the call takes.
	clock.advance(time.Hour)
	for !strings.Contains(buf.String(), "99%") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(3 * liveEvery)
	p.Done()
	if strings.Contains(buf.String(), "100%") || !strings.Contains(buf.String(), "encoding: 99% (990 of 1000 characters)") {
		t.Errorf("an estimate reached 100%% or stopped short of 99%%: %q", buf.String())
	}
	got := buf.String()
	time.Sleep(3 * liveEvery)
	if buf.String() != got {
		t.Errorf("the estimate goes on after Done: %q", buf.String()[len(got):])
	}
}
