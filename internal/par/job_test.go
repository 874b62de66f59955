package par

import (
	"fmt"
	"slices"
	"testing"
)

// TestSectionCoversEveryItemOnce runs sections of several jobs of mixed
// sizes, grains and costs (a cheap job beside a costly one, a job smaller
// than its grain, one of a single item) and checks that every item of
// every job runs exactly once and that ranges start on their job's grain,
// at several participant counts and serially.
func TestSectionCoversEveryItemOnce(t *testing.T) {
	alwaysParallel(t)
	shapes := [][][3]int{ // jobs as {items, grain, cost per item}
		{{1000, 4, 64}},
		{{768, 4, 1 << 14}, {128, 8, 768}, {48, 1, 1 << 16}},
		{{3, 4, 1 << 20}, {1, 1, 1}, {4096, 4, 1 << 10}, {17, 8, 5}},
		{{64, 4, 1 << 13}, {256, 4, 1 << 13}, {64, 8, 1024}, {256, 8, 1024}, {64, 4, 3072}, {64, 4, 3072}, {48, 1, 1 << 15}},
	}
	for _, procs := range []int{1, 2, 3, 8} {
		setProcs(t, procs)
		for si, shape := range shapes {
			var s Section
			jobs := make([]*countJob, len(shape))
			for i, task := range shape {
				jobs[i] = newCountJob(task[0], task[1])
				s.Add(jobs[i], task[0], task[1], task[2])
			}
			s.Run()
			for _, job := range jobs {
				job.check(t, fmt.Sprintf("procs %d shape %d", procs, si))
			}
		}
	}
}

// TestSectionLayoutFollowsCostAndKind: units go to the jobs in proportion
// to their cost, never more than a job has pieces, in the order added,
// with Halves' first jobs before everything and their second jobs after.
func TestSectionLayoutFollowsCostAndKind(t *testing.T) {
	var s Section
	a, b, c, d := newCountJob(1024, 4), newCountJob(64, 8), newCountJob(3, 1), newCountJob(16, 1)
	var h Halves
	s.Add(a, 1024, 4, 1000)
	s.AddHalves(&h, c, d, 16, 1, 20000)
	s.Add(b, 64, 8, 4000)
	units, total := s.layout()
	if want := 1024*1000 + 64*4000 + 2*16*20000; total != want {
		t.Errorf("total cost %d, want %d", total, want)
	}
	if got, want := s.order[:s.n], []int{1, 0, 3, 2}; !slices.Equal(got, want) {
		t.Fatalf("jobs laid out in the order %v, want %v (first half, as added, second half)", got, want)
	}
	if units != s.tasks[0].units+s.tasks[1].units+s.tasks[2].units+s.tasks[3].units {
		t.Errorf("units %d are not the jobs' sum", units)
	}
	if got := s.tasks[3].units; got != 8 { // b: 64 items in grains of 8
		t.Errorf("job b has %d units, want 8 (its pieces bound them)", got)
	}
	if ua, ub := s.tasks[0].units, s.tasks[3].units; ua < 4*ub {
		t.Errorf("job a (4× b's total cost) has %d units against b's %d", ua, ub)
	}
}

// chainStep records, for each row, the order in which the chain's steps
// reached it.
type chainStep struct {
	id   int32
	seen [][]int32
}

func (s *chainStep) RowCost() int { return 10 }

func (s *chainStep) Run(lo, hi int) {
	for r := lo; r < hi; r++ {
		s.seen[r] = append(s.seen[r], s.id)
	}
}

// TestChainRunsStepsInOrderPerRow: every row goes through every step of a
// chain once, in the order the steps were added, whatever the chunking (a
// row's later step reads what its earlier step wrote).
func TestChainRunsStepsInOrderPerRow(t *testing.T) {
	alwaysParallel(t)
	for _, procs := range []int{1, 2, 8} {
		setProcs(t, procs)
		const n = 999
		seen := make([][]int32, n)
		var c Chain
		steps := make([]chainStep, 5)
		for i := range steps {
			steps[i] = chainStep{id: int32(i), seen: seen}
			c.Add(&steps[i])
		}
		var s Section
		s.Add(&c, n, 4, 1<<12)
		s.Run()
		for r, got := range seen {
			if len(got) != len(steps) {
				t.Fatalf("procs %d: row %d went through %d steps, want %d", procs, r, len(got), len(steps))
			}
			for i, id := range got {
				if id != int32(i) {
					t.Fatalf("procs %d: row %d saw steps %v, want 0..%d in order", procs, r, got, len(steps)-1)
				}
			}
		}
	}
}
