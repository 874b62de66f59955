package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"example.org/minigpt/internal/testutil"
)

// batchJob is one request of a randomised batch schedule.
type batchJob struct {
	prompt string
	o      GenerateOptions
	delay  time.Duration
	cancel bool // the caller goes away after a few tokens
}

// batchJobs draws n mixed requests: greedy, beams, samples with stop
// strings, filtered and penalised samples, traced ones; 1 to 120 tokens;
// prompts shorter and longer than the block.
func batchJobs(seed uint64, n int) []batchJob {
	rng := rand.New(rand.NewPCG(seed, 3))
	prompts := []string{"the ", "the keeper ", "a small boat drifts near the rocks at dawn. the lamp keeper walks", "b"}
	jobs := make([]batchJob, n)
	for i := range jobs {
		o := GenerateOptions{MaxNewTokens: 1 + rng.IntN(120), Seed: uint64(i)}
		switch rng.IntN(6) {
		case 0:
			o.Greedy = true
		case 1:
			o.NumBeams, o.N = 2+rng.IntN(3), 1
			o.Stop = []string{"."}
		case 2:
			o.Temperature, o.TopK, o.N = 0.9, 5, 1+rng.IntN(4)
			o.Stop = []string{".", "the"}
		case 3:
			o.Trace, o.TraceTopN, o.MinP = true, 3, 0.05
		default:
			o.TopP, o.PresencePenalty, o.N = 0.9, 0.5, 1+rng.IntN(3)
		}
		jobs[i] = batchJob{prompt: prompts[rng.IntN(len(prompts))], o: o, delay: time.Duration(rng.IntN(15)) * time.Millisecond, cancel: rng.IntN(8) == 0}
	}
	return jobs
}

// TestBatchMatchesSerial is continuous batching's contract: requests
// arriving at random into a running batch, of every kind, some cancelled
// by their callers midway, each get exactly what the same call gives
// alone (completions, streamed text and finish reasons), at batches of
// several sizes.
func TestBatchMatchesSerial(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	n := 40
	if testing.Short() {
		n = 16
	}
	jobs := batchJobs(1, n)
	want, wantStream := make([]string, n), make([]string, n)
	for i, j := range jobs {
		var s string
		o := j.o
		o.Stream = func(c *Completion) error { s += fmt.Sprintf("%d:%s|%s;", c.Index, c.Text, c.Finish); return nil }
		res, err := m.Complete(context.Background(), vocab, j.prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		want[i], wantStream[i] = fmt.Sprint(res), s
	}
	// GOMAXPROCS sets the batch's lanes: which requests share a pass,
	// and how many loops step at once.
	for _, tc := range []struct{ rows, procs int }{{4, 1}, {8, 4}, {32, 2}, {32, 8}} {
		rows := tc.rows
		prev := runtime.GOMAXPROCS(tc.procs)
		b, err := NewBatch(m, rows)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		got, gotStream := make([]string, n), make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(j.delay)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var s string
				chunks := 0
				o := j.o
				o.Stream = func(c *Completion) error {
					s += fmt.Sprintf("%d:%s|%s;", c.Index, c.Text, c.Finish)
					if chunks++; j.cancel && chunks == 3 {
						cancel()
					}
					return nil
				}
				res, err := b.Complete(ctx, vocab, j.prompt, o)
				got[i], gotStream[i], errs[i] = fmt.Sprint(res), s, err
			}()
		}
		wg.Wait()
		for i, j := range jobs {
			switch {
			case j.cancel && errs[i] != nil:
				if !errors.Is(errs[i], context.Canceled) {
					t.Errorf("rows %d, job %d: %v, want a cancellation", rows, i, errs[i])
				}
				// What it streamed before it went is what the serial
				// run streamed first.
				if len(gotStream[i]) > len(wantStream[i]) || wantStream[i][:len(gotStream[i])] != gotStream[i] {
					t.Errorf("rows %d, job %d cancelled: streamed %q, alone %q", rows, i, gotStream[i], wantStream[i])
				}
			case errs[i] != nil:
				t.Errorf("rows %d, job %d: %v", rows, i, errs[i])
			case got[i] != want[i] || gotStream[i] != wantStream[i]:
				t.Errorf("rows %d, job %d (%+v): batched\n%s\n%s\nalone\n%s\n%s", rows, i, j.o, got[i], gotStream[i], want[i], wantStream[i])
			}
		}
		st := b.Stats()
		if ended, running, waiting := b.counts(); ended != int64(n) || st.RowsUsed != 0 || running != 0 || waiting != 0 {
			t.Errorf("rows %d: stats after every request ended: %+v, %d ended, %d running, %d waiting", rows, st, ended, running, waiting)
		}
		t.Logf("rows %d, %d lanes: %d steps, %d tokens", rows, len(b.lanes), st.Steps, st.Tokens)
		b.Close()
		if _, err := b.Complete(context.Background(), vocab, "the ", GenerateOptions{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Complete on a closed batch: %v, want ErrClosed", err)
		}
	}
}

// TestBatchRefusesTooManyRows: a request needing more rows than the batch
// has is refused at once, as are absurd batch sizes.
func TestBatchRefusesTooManyRows(t *testing.T) {
	m, vocab, b := newTestBatch(t, 2)
	if _, err := b.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 3, N: 3}); !errors.Is(err, ErrBadOption) {
		t.Errorf("3 samples in a batch of 2 rows: %v, want ErrBadOption", err)
	}
	for _, rows := range []int{0, -1, maxBatchRows + 1} {
		if _, err := NewBatch(m, rows); !errors.Is(err, ErrBadOption) {
			t.Errorf("NewBatch(%d): %v, want ErrBadOption", rows, err)
		}
	}
}

// TestBatchStopsCallingBackAfterAnError: as with Model.Complete, a Stream
// callback that returns an error (traced or not) ends its request, is not
// called again, and its error is the call's, even when the loop has
// already queued more events than the callback has seen, or has ended
// the request before the callback returned.
func TestBatchStopsCallingBackAfterAnError(t *testing.T) {
	_, vocab, b := newTestBatch(t, 4)
	stop := errors.New("the client went away")
	for _, tc := range []struct{ traced, late bool }{{false, false}, {true, false}, {false, true}} {
		traced := tc.traced
		calls := 0
		callback := func() error {
			calls++
			if calls == 2 {
				// Let the loop queue a backlog behind this call, or (late)
				// end the request.
				time.Sleep(20 * time.Millisecond)
				for tc.late && func() bool { _, r, _ := b.counts(); return r > 0 }() {
					time.Sleep(time.Millisecond)
				}
				return stop
			}
			return nil
		}
		o := GenerateOptions{MaxNewTokens: 2000, Greedy: true}
		if tc.late {
			o.MaxNewTokens = 50
		}
		o.Trace = traced
		o.Stream = func(*Completion) error { return callback() }
		if _, err := b.Complete(context.Background(), vocab, "the ", o); !errors.Is(err, stop) {
			t.Errorf("%+v: %v, want the callback's error", tc, err)
		}
		if calls != 2 {
			t.Errorf("%+v: the callback was called %d times, the second returned an error", tc, calls)
		}
	}
}

// TestBatchStopsCallingBackWhenCancelled: a context cancelled from a
// callback ends the request as an error would: the callback is not
// called again and the call returns the cancellation, also when the loop
// has ended the request before the callback returned (then the events
// already queued are not delivered, so success would be a lie).
func TestBatchStopsCallingBackWhenCancelled(t *testing.T) {
	_, vocab, b := newTestBatch(t, 4)
	for _, late := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		o := GenerateOptions{MaxNewTokens: 50, Greedy: true}
		o.Stream = func(*Completion) error {
			if calls++; calls == 2 {
				cancel()
				for late && func() bool { _, r, _ := b.counts(); return r > 0 }() {
					time.Sleep(time.Millisecond)
				}
			}
			return nil
		}
		if _, err := b.Complete(ctx, vocab, "the ", o); !errors.Is(err, context.Canceled) {
			t.Errorf("late %v: %v, want the cancellation", late, err)
		}
		if calls != 2 {
			t.Errorf("late %v: the callback was called %d times, the second cancelled", late, calls)
		}
		cancel()
	}
}

// TestBatchPausedRequestWaits: a request whose caller has fallen
// maxBacklog events behind is paused (no pass, no token), a request that
// arrives meanwhile runs beside it, and once the caller catches up the
// paused one goes on to its end (TestBatchPausedCallerDoesNotSpin checks
// that the waiting costs no CPU).
func TestBatchPausedRequestWaits(t *testing.T) {
	_, vocab, b := newTestBatch(t, 2)
	// Within the block a token costs one cached position: the backlog
	// fills fast.
	const prompt = "the "
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold, calls := make(chan struct{}), 0
	ended := make(chan error, 1)
	go func() {
		o := GenerateOptions{MaxNewTokens: 3 * maxBacklog, Greedy: true}
		o.Stream = func(*Completion) error {
			if calls++; calls == 1 {
				<-hold
			}
			return nil
		}
		_, err := b.Complete(ctx, vocab, prompt, o)
		ended <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for b.Stats().Tokens <= int64(maxBacklog) {
		if time.Now().After(deadline) {
			t.Fatal("the backlog never filled")
		}
		time.Sleep(time.Millisecond)
	}
	// The caller took a few events before it blocked: the request pauses
	// once the backlog behind them is full, a few tokens later.
	for last := int64(-1); b.Stats().Tokens != last; {
		last = b.Stats().Tokens
		time.Sleep(50 * time.Millisecond)
	}
	before := b.Stats()
	time.Sleep(100 * time.Millisecond)
	after := b.Stats()
	if after.Steps-before.Steps > 2 || after.Tokens != before.Tokens {
		t.Errorf("paused: %d steps and %d tokens in 100 ms", after.Steps-before.Steps, after.Tokens-before.Tokens)
	}
	// Another request runs beside the paused one.
	if res, err := b.Complete(context.Background(), vocab, prompt, GenerateOptions{MaxNewTokens: 5, Greedy: true}); err != nil || len(res[0].IDs) != 5 {
		t.Errorf("beside a paused request: %v %v", res, err)
	}
	close(hold)
	if err := <-ended; err != nil {
		t.Errorf("the paused request, once its caller caught up: %v", err)
	}
	if calls < 3*maxBacklog {
		t.Errorf("%d chunks streamed, want %d", calls, 3*maxBacklog)
	}
}

// TestBatchPausedCallerDoesNotSpin: a caller that stops taking its
// chunks pauses its request once the backlog is full, and then the loop
// waits instead of spinning (before, a batch whose only request was
// paused ran empty steps as fast as it could); once the caller catches
// up the request finishes with its serial result.
func TestBatchPausedCallerDoesNotSpin(t *testing.T) {
	saved := maxBacklog
	maxBacklog = 4
	t.Cleanup(func() { maxBacklog = saved })
	m, vocab, b := newTestBatch(t, 2)
	o := GenerateOptions{MaxNewTokens: 200, Temperature: 1, Seed: 3}
	want, err := m.Complete(context.Background(), vocab, "the ", o)
	if err != nil {
		t.Fatal(err)
	}
	var cpu time.Duration
	first := true
	o.Stream = func(*Completion) error {
		if first {
			first = false
			time.Sleep(100 * time.Millisecond) // let the backlog fill and the request pause
			c0, ok0 := testutil.ProcessCPUTime()
			time.Sleep(400 * time.Millisecond)
			c1, ok1 := testutil.ProcessCPUTime()
			if ok0 && ok1 {
				cpu = c1 - c0
			}
		}
		return nil
	}
	got, err := b.Complete(context.Background(), vocab, "the ", o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the pause: %v, alone %v", got, want)
	}
	if cpu > 200*time.Millisecond {
		t.Errorf("the process used %v of CPU in 400 ms while its only request was paused: the loop spins", cpu)
	}
}

// TestBatchIdleHoldsNoGoroutine: a lane's goroutine runs only while it
// has requests, so a Batch nobody uses holds none and needs no Close to
// be collected (the server's fine-tuned models come and go).
func TestBatchIdleHoldsNoGoroutine(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	b, err := NewBatch(m, 4)
	if err != nil {
		t.Fatal(err)
	}
	if g := runtime.NumGoroutine(); g != before {
		t.Errorf("a new batch runs %d goroutines", g-before)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			o := GenerateOptions{MaxNewTokens: 20, Seed: uint64(i)}
			if _, err := b.Complete(context.Background(), vocab, "the ", o); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("an idle batch runs %d goroutines after its requests", g-before)
	}
	if ended, running, _ := b.counts(); ended != 4 || running != 0 {
		t.Errorf("%d requests ended, %d running", ended, running)
	}
}

// newTestBatch is a batch of rows rows over the embedded model, closed
// when the test ends.
func newTestBatch(t *testing.T, rows int) (*Model, *Vocab, *Batch) {
	t.Helper()
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatch(m, rows)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return m, vocab, b
}
