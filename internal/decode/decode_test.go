package decode

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// recorder is a Pass that keeps each step's sequences and returns, for
// every wanted position, logits of V values all equal to the position
// (so a test sees which position's logits a row got).
type recorder struct {
	V     int
	steps [][]Seq
}

func (p *recorder) Forward(seqs []Seq, rows int) []float64 {
	p.steps = append(p.steps, slices.Clone(seqs))
	var out []float64
	for _, s := range seqs {
		for t := s.Out0; t < s.T1; t++ {
			for range p.V {
				out = append(out, float64(t))
			}
		}
	}
	return out
}

// counter is a Chooser that appends, to every running row, the position
// whose logits it got, and ends at the length limit.
type counter struct {
	ends, aborts int
}

func (c *counter) Choose(r *Request) (int, error) {
	made := 0
	for b := range r.Rows {
		if !r.Rows[b].Done {
			r.Rows[b].Seq = append(r.Rows[b].Seq, int(r.Logits(b)[0]))
			made++
		}
	}
	return made, nil
}
func (c *counter) End(*Request) error { c.ends++; return nil }
func (c *counter) Abort(*Request)     { c.aborts++ }

func newTestRequest(c Chooser, prompt []int, rows, T, maxNew int, noCache bool) (*Request, *Decoder) {
	r := &Request{}
	r.Init(c, prompt, make([]Row, rows), T, maxNew, noCache)
	slots := make([]int, rows)
	for i := range slots {
		slots[i] = i
	}
	r.Start(slots)
	return r, NewDecoder(NewKVCache(1, T, 1, rows), 2)
}

func TestPromptIsComputedInChunksOnce(t *testing.T) {
	prompt := make([]int, 150)
	for _, noCache := range []bool{false, true} {
		c, p := &counter{}, &recorder{V: 2}
		r, d := newTestRequest(c, prompt, 3, 256, 2, noCache)
		Run(context.Background(), r, d, p)
		var chunks [][2]int
		for _, s := range p.steps[:len(p.steps)-1] { // the last step is the second token's
			if len(s) != 1 {
				t.Fatalf("noCache=%v: a prompt step ran %d sequences, want 1 (the first row's)", noCache, len(s))
			}
			chunks = append(chunks, [2]int{s[0].T0, s[0].T1})
		}
		want := [][2]int{{0, 64}, {64, 128}, {128, 150}}
		if noCache {
			want = [][2]int{{0, 150}}
		}
		if !slices.Equal(chunks, want) {
			t.Errorf("noCache=%v: prompt chunks %v, want %v", noCache, chunks, want)
		}
		// Every row continues from the prompt's last position (149),
		// then from its own new one (150).
		for b, row := range r.Rows {
			if got := row.Seq[150:]; !slices.Equal(got, []int{149, 150}) {
				t.Errorf("noCache=%v: row %d generated %v, want [149 150]", noCache, b, got)
			}
		}
		if c.ends != 1 || !r.Done || r.Steps != 2 {
			t.Errorf("noCache=%v: %d ends, done %v after %d steps; want 1, true, 2", noCache, c.ends, r.Done, r.Steps)
		}
	}
}

func TestWindowSlidesPastTheBlock(t *testing.T) {
	c, p := &counter{}, &recorder{V: 2}
	r, d := newTestRequest(c, []int{5, 6}, 1, 4, 5, false)
	Run(context.Background(), r, d, p)
	// Steps: the prompt [0,2); positions 2 and 3 one at a time against
	// the cache; then the sequence outgrew the block: whole windows of 4.
	want := [][2]int{{0, 2}, {2, 3}, {3, 4}, {0, 4}, {0, 4}}
	for i, s := range p.steps {
		if got := [2]int{s[0].T0, s[0].T1}; got != want[i] {
			t.Errorf("step %d computed positions %v, want %v", i, got, want[i])
		}
	}
	if got := r.Rows[0].Seq; !slices.Equal(got, []int{5, 6, 1, 2, 3, 3, 3}) {
		t.Errorf("sequence %v, want [5 6 1 2 3 3 3]", got)
	}
}

// follower is a beam search that, after the first step, makes both rows
// continue row 1.
type follower struct{ counter }

func (f *follower) Choose(r *Request) (int, error) {
	if r.Steps > 0 {
		r.Follow([]int{1, 1}, []int{7, 8})
		return len(r.Rows), nil
	}
	return f.counter.Choose(r)
}

func TestFollowCopiesTheParentsSequenceAndCache(t *testing.T) {
	f := &follower{}
	r, d := newTestRequest(f, []int{1, 2}, 2, 8, 3, false)
	ctx := context.Background()
	// The prompt's step: both rows get its last position's token.
	d.Begin()
	r.Plan(d)
	d.Run(&recorder{V: 2})
	r.Advance(d)
	// Mark row 1's cache, which both rows must continue.
	for i, v := range d.KV.Slot(1) {
		d.KV.Slot(1)[i] = v + 100
	}
	r.Rows[1].Seq[len(r.Rows[1].Seq)-1] = 9
	d.Begin()
	r.Plan(d)
	d.Run(&recorder{V: 2})
	r.Advance(d)
	if got := [][]int{r.Rows[0].Seq, r.Rows[1].Seq}; !slices.Equal(got[0], []int{1, 2, 9, 7}) || !slices.Equal(got[1], []int{1, 2, 9, 8}) {
		t.Errorf("sequences %v, want [1 2 9 7] and [1 2 9 8]", got)
	}
	for l := range d.KV.L {
		a, b := d.KV.Rows(l, 0, 0, r.Rows[0].cached), d.KV.Rows(l, 1, 0, r.Rows[1].cached)
		if !slices.Equal(a, b) || len(a) == 0 || a[0] < 100 {
			t.Errorf("layer %d: row 0's cache %v is not its parent's %v", l, a, b)
		}
	}
	Run(ctx, r, d, &recorder{V: 2})
	if !r.Done || f.ends != 1 {
		t.Errorf("done %v with %d ends, want true and 1", r.Done, f.ends)
	}
}

func TestStopAbortsOnceAndStreamsNothingAfter(t *testing.T) {
	c := &counter{}
	r, d := newTestRequest(c, []int{1}, 1, 8, 100, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Run(ctx, r, d, &recorder{V: 2})
	if !errors.Is(r.Err, context.Canceled) || !r.Done {
		t.Fatalf("after cancelling: err %v, done %v", r.Err, r.Done)
	}
	r.Stop(errors.New("again"))
	if c.aborts != 1 || c.ends != 0 || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("%d aborts, %d ends, err %v; want 1, 0 and the first error", c.aborts, c.ends, r.Err)
	}
}

func TestNoNewTokensEndsAtStart(t *testing.T) {
	c := &counter{}
	r, _ := newTestRequest(c, []int{1, 2}, 2, 8, 0, false)
	if !r.Done || c.ends != 1 {
		t.Errorf("MaxNew 0: done %v with %d ends, want true and 1", r.Done, c.ends)
	}
}
