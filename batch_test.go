package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// batchJob is one request of a randomised batch schedule.
type batchJob struct {
	prompt string
	o      CompleteOptions
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
		o := CompleteOptions{GenerateOptions: GenerateOptions{MaxNewTokens: 1 + rng.IntN(120), Seed: uint64(i)}}
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
		o.Stream = func(c *Chunk) error { s += fmt.Sprintf("%d:%s|%s;", c.Sample, c.Text, c.Finish); return nil }
		res, err := m.Complete(context.Background(), vocab, j.prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		want[i], wantStream[i] = fmt.Sprint(res), s
	}
	for _, rows := range []int{4, 8, 32} {
		b, err := NewBatch(m, rows)
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
				o.Stream = func(c *Chunk) error {
					s += fmt.Sprintf("%d:%s|%s;", c.Sample, c.Text, c.Finish)
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
		if st.Requests != int64(n) || st.RowsUsed != 0 || st.Running != 0 || st.Waiting != 0 {
			t.Errorf("rows %d: stats after every request ended: %+v", rows, st)
		}
		t.Logf("rows %d: %d steps, %d tokens", rows, st.Steps, st.Tokens)
		b.Close()
		if _, err := b.Complete(context.Background(), vocab, "the ", CompleteOptions{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Complete on a closed batch: %v, want ErrClosed", err)
		}
	}
}

// TestBatchRefusesTooManyRows: a request needing more rows than the batch
// has is refused at once, as are absurd batch sizes.
func TestBatchRefusesTooManyRows(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatch(m, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Complete(context.Background(), vocab, "the ", CompleteOptions{GenerateOptions: GenerateOptions{MaxNewTokens: 3, N: 3}}); !errors.Is(err, ErrBadOption) {
		t.Errorf("3 samples in a batch of 2 rows: %v, want ErrBadOption", err)
	}
	for _, rows := range []int{0, -1, MaxBatchRows + 1} {
		if _, err := NewBatch(m, rows); !errors.Is(err, ErrBadOption) {
			t.Errorf("NewBatch(%d): %v, want ErrBadOption", rows, err)
		}
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
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatch(m, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o := CompleteOptions{GenerateOptions: GenerateOptions{MaxNewTokens: 200, Temperature: 1, Seed: 3}}
	want, err := m.Complete(context.Background(), vocab, "the ", o)
	if err != nil {
		t.Fatal(err)
	}
	var cpu time.Duration
	first := true
	o.Stream = func(*Chunk) error {
		if first {
			first = false
			time.Sleep(100 * time.Millisecond) // let the backlog fill and the request pause
			c0, ok0 := processCPUTime()
			time.Sleep(400 * time.Millisecond)
			c1, ok1 := processCPUTime()
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
