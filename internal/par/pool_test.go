package par

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestWorkerPanicReachesCaller: a panic on a worker reaches the section's
// caller, where it can be recovered, carrying the worker's value and
// stack, after every item has been covered; the pool works afterwards;
// and the caller's own panic comes back as itself.
func TestWorkerPanicReachesCaller(t *testing.T) {
	const n = 64
	// Grow the pool past the workers the panicking section uses, as an
	// earlier GOMAXPROCS=8 section would (the records must survive that).
	setProcs(t, 8)
	if got := runFor(n, &panicJob{}); got != nil {
		t.Fatalf("section with 8 participants: recovered %v", got)
	}
	runtime.GOMAXPROCS(2)
	bad := &panicJob{panics: true, onWorker: true}
	got := runFor(n, bad)
	wp, ok := got.(*WorkerPanic)
	if !ok {
		t.Fatalf("caller recovered %v (%T), want a *WorkerPanic", got, got)
	}
	var rerr runtime.Error
	if !errors.As(wp, &rerr) {
		t.Errorf("worker panic %v does not unwrap to the runtime.Error", wp.Value)
	}
	msg := wp.Error()
	if !strings.Contains(msg, "index out of range") || !strings.Contains(msg, "panicJob).Run") {
		t.Errorf("message lacks the worker's value or stack:\n%s", msg)
	}
	if c := bad.covered.Load(); c != n {
		t.Errorf("the section covered %d of %d items before returning", c, n)
	}
	for range 3 {
		good := &panicJob{}
		if got := runFor(n, good); got != nil {
			t.Fatalf("section after a panic: recovered %v", got)
		}
		if c := good.covered.Load(); c != n {
			t.Fatalf("section after a panic covered %d of %d", c, n)
		}
	}
	own := &panicJob{panics: true}
	if got := runFor(n, own); got == nil {
		t.Fatal("a panic on the caller's range was lost")
	} else if _, ok := got.(*WorkerPanic); ok {
		t.Fatalf("the caller's own panic came back as a worker's: %v", got)
	}
	if c := own.covered.Load(); c != n {
		t.Errorf("caller's panic: %d of %d items covered", c, n)
	}
	if got := runFor(n, &panicJob{}); got != nil {
		t.Fatalf("section after the caller's panic: recovered %v", got)
	}
}

// TestForCoversEveryItemOnce runs For over many shapes and participant
// counts and checks that every item runs exactly once, on the grain.
func TestForCoversEveryItemOnce(t *testing.T) {
	alwaysParallel(t)
	for _, procs := range []int{1, 2, 3, 8} {
		setProcs(t, procs)
		for _, n := range []int{1, 2, 3, 7, 64, 1000} {
			for _, grain := range []int{1, 4, 512} {
				job := newCountJob(n, grain)
				For(job, n, grain, 1)
				job.check(t, "For")
			}
		}
	}
}

// orderJob records its ranges in the order they run (one participant).
type orderJob struct{ los, his []int }

func (j *orderJob) Run(lo, hi int) {
	j.los, j.his = append(j.los, lo), append(j.his, hi)
}

// TestParticipantStartsInItsRegion checks the affinity that keeps a core
// on the same rows from section to section: participant k claims its own
// region's chunks first, each region's chunks in order and shrinking, and
// then, alone, the other regions' in turn, covering every item once.
func TestParticipantStartsInItsRegion(t *testing.T) {
	for _, regions := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, 7, 64, 1000} {
			for _, grain := range []int{1, 4} {
				units := (n + grain - 1) / grain
				for k := 0; k < regions; k++ {
					job := &orderJob{}
					s := &section{job: job, n: n, grain: grain, units: units, regions: regions}
					s.setRegions()
					s.participate(k)
					r0, r1 := s.bound[k], s.bound[k+1]
					if r0 != k*units/regions {
						t.Fatalf("regions %d units %d: region %d starts at %d", regions, units, k, r0)
					}
					if len(job.los) == 0 || r0 < r1 && job.los[0] != r0*grain {
						t.Fatalf("regions %d n %d grain %d: participant %d began at %v, its region [%d, %d)", regions, n, grain, k, job.los, r0*grain, r1*grain)
					}
					covered := 0
					for i, lo := range job.los {
						covered += job.his[i] - lo
					}
					if covered != n {
						t.Fatalf("regions %d n %d grain %d participant %d: covered %d of %d", regions, n, grain, k, covered, n)
					}
					for r := 0; r < regions; r++ {
						last := units + 1
						for c := 0; ; c++ {
							u0, u1, ok := s.chunk(r, c)
							if !ok {
								break
							}
							if u1-u0 > last {
								t.Fatalf("regions %d units %d: region %d chunk %d has %d units after %d", regions, units, r, c, u1-u0, last)
							}
							last = u1 - u0
						}
					}
				}
			}
		}
	}
}
