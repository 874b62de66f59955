package par

// This file holds what a caller composes: jobs, sections, chains, For.

import "runtime"

// Job is work over a range [lo, hi) of independent items. Run may be called
// with any sub-range, from any goroutine, concurrently with other ranges of
// the same section; it must give each item the same result whatever range
// the item arrives in.
type Job interface {
	Run(lo, hi int)
}

// A Task is a Job that knows its own size: its items, the grain its
// pieces are cut at, and one item's cost in the caller's unit
// (multiply-adds, say), which weighs it against the other jobs of a
// section.
type Task interface {
	Job
	Size() (items, grain, cost int)
}

// A RowJob is a Job over rows that a Chain runs after others over the
// same rows: it knows what one row costs.
type RowJob interface {
	Job
	RowCost() int
}

// A Sum is a Task whose every item is a sum over the same rows (a weight
// gradient, a column sum), in row order, which can run over part of the
// rows: the section decides whether it runs whole or in Halves.
type Sum interface {
	Task
	// SumRows returns the rows the sums run over, the values a run over
	// all of them reads (the rows' values) and writes (the outputs).
	SumRows() (rows, rowValues, outValues int)
	// RunRows computes items [lo, hi) over rows [r0, r1), starting every
	// chain from its beginning when first is set and continuing the
	// chains the items hold otherwise. Run(lo, hi) is RunRows(lo, hi, 0,
	// rows, true).
	RunRows(lo, hi, r0, r1 int, first bool)
}

// maxTasks bounds the jobs of one section.
const maxTasks = 16

// Section is one parallel section: jobs that read nothing another of them
// writes, run together behind one barrier. The zero value is an empty
// section; a Section is reused with Reset and allocates nothing.
type Section struct {
	tasks [maxTasks]task
	n     int
	order [maxTasks]int // the tasks in the order of their units
	units int
	self  sectionUnits
}

// task is job over items [0, items), in pieces whose boundaries are
// multiples of grain (but the last), each item costing cost.
type task struct {
	job                Job
	items, grain, cost int
	kind               int // kindFirst, kindWhole or kindLast: where its units go
	first, units       int // the task's units in the section
}

// The kinds of tasks, in the order of their units.
const (
	kindFirst = iota // Halves' first jobs
	kindWhole        // every other job
	kindLast         // Halves' second jobs
	numKinds
)

// Reset empties the section.
func (s *Section) Reset() { s.n = 0 }

// Add adds job over items [0, items) to the section, in pieces whose
// boundaries are multiples of grain; cost is an item's cost in the
// caller's unit (multiply-adds, say), which weighs the job against the
// others. A job with no items is dropped.
func (s *Section) Add(job Job, items, grain, cost int) {
	s.add(job, items, grain, cost, kindWhole)
}

// AddTask adds t over its items, as t.Size gives them.
func (s *Section) AddTask(t Task) {
	items, grain, cost := t.Size()
	s.Add(t, items, grain, cost)
}

// AddChain adds c over rows [0, rows), in pieces of four rows, each row
// costing what its jobs' rows cost together.
func (s *Section) AddChain(c *Chain, rows int) {
	s.Add(c, rows, 4, c.RowCost())
}

// AddSum adds sum j, whole or as h, two Halves over the two halves of its
// rows, whichever the sizes say pays (HalvesPay, and rows that pass
// at least HalvesRatio times more values between the cores than the
// outputs a second half takes over).
func (s *Section) AddSum(h *Halves, j Sum) {
	rows, rowValues, outValues := j.SumRows()
	if !sumInHalves(rows, rowValues, outValues) {
		s.AddTask(j)
		return
	}
	items, grain, cost := j.Size()
	mid := rows / 2
	h.firstRows = rowRange{j, 0, mid, true}
	h.secondRows = rowRange{j, mid, rows, false}
	s.AddHalves(h, &h.firstRows, &h.secondRows, items, grain, max(cost*(rows-mid)/max(rows, 1), 1))
}

// HalvesRatio is how many times more row values than outputs a sum must
// read to run in Halves: each core then reads the rows its earlier
// sections wrote, and the second half takes over the outputs the first
// left. Tests set it to 0, which runs every sum over two or more rows in
// halves.
var HalvesRatio = 16

// sumInHalves reports whether a sum of the given sizes runs in halves.
func sumInHalves(rows, rowValues, outValues int) bool {
	if HalvesRatio == 0 {
		return rows >= 2
	}
	return HalvesPay() && rows >= 2 && rowValues >= HalvesRatio*outValues
}

// rowRange is a Sum over some of its rows: one of Halves' two jobs.
type rowRange struct {
	sum    Sum
	r0, r1 int
	first  bool
}

func (r *rowRange) Run(lo, hi int) { r.sum.RunRows(lo, hi, r.r0, r.r1, r.first) }

func (s *Section) add(job Job, items, grain, cost, kind int) {
	if items <= 0 {
		return
	}
	if s.n == maxTasks {
		panic("par: more than 16 jobs in one section")
	}
	s.tasks[s.n] = task{job: job, items: items, grain: max(grain, 1), cost: max(cost, 1), kind: kind}
	s.n++
}

// Run runs the section's jobs and returns when every item of every job has
// run: spread over the pool when there is enough work and the pool is
// free, else serially on the calling goroutine, each job whole, in the
// order of their units.
func (s *Section) Run() {
	units, total := s.layout()
	if units == 0 {
		return
	}
	if p := pool.acquire(units, total); p > 1 {
		s.self.s = s
		pool.dispatch(p, units, 1, &s.self)
		return
	}
	for _, i := range s.order[:s.n] {
		t := &s.tasks[i]
		t.job.Run(0, t.items)
	}
}

// For runs job over [0, n) in chunks whose boundaries are multiples of
// grain, each item costing cost: a section of one job.
func For(job Job, n, grain, cost int) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	if p := pool.acquire((n+grain-1)/grain, n*max(cost, 1)); p > 1 {
		pool.dispatch(p, n, grain, job)
		return
	}
	job.Run(0, n)
}

// Procs is the number of goroutines a section may run on: GOMAXPROCS.
func Procs() int { return runtime.GOMAXPROCS(0) }

// HalvesPay reports whether splitting a sum over rows into Halves can
// pay: with more than one participant, and no more than there are CPUs
// (with more, a participant waiting for a first half takes the CPU from
// the one doing it).
func HalvesPay() bool {
	p := runtime.GOMAXPROCS(0)
	return p > 1 && p <= runtime.NumCPU()
}

// planUnits is about how many pieces a section is cut into: enough for
// the chunks to shrink to a small share of the section.
const planUnits = 256

// layout lays the tasks' pieces end to end as the section's units, kind by
// kind and, within a kind, in the order added; it returns their number and
// the tasks' total cost. A task gets units in proportion to its cost, so
// that a unit of any task costs about the same, but never more than it
// has pieces.
func (s *Section) layout() (units, total int) {
	for _, t := range s.tasks[:s.n] {
		total += t.items * t.cost
	}
	quantum := max(total/planUnits, 1)
	n := 0
	for kind := range numKinds {
		for i := range s.tasks[:s.n] {
			t := &s.tasks[i]
			if t.kind != kind {
				continue
			}
			s.order[n] = i
			n++
			pieces := (t.items + t.grain - 1) / t.grain
			t.first, t.units = units, min(max(t.items*t.cost/quantum, 1), pieces)
			units += t.units
		}
	}
	s.units = units
	return units, total
}

// item is the first item of the task's piece u.
func (t *task) item(u int) int {
	if u >= t.units {
		return t.items
	}
	return t.items * u / t.units / t.grain * t.grain
}

// sectionUnits runs a section's units: the pool's view of a Section.
type sectionUnits struct{ s *Section }

// Run runs the pieces of units [lo, hi), task by task in the order of
// their units, so that a chunk's first-half pieces are done before its
// second-half pieces wait for them (see Halves).
func (u *sectionUnits) Run(lo, hi int) {
	s := u.s
	for _, i := range s.order[:s.n] {
		t := &s.tasks[i]
		u0, u1 := max(lo, t.first), min(hi, t.first+t.units)
		if u0 >= u1 {
			continue
		}
		if a, b := t.item(u0-t.first), t.item(u1-t.first); a < b {
			t.job.Run(a, b)
		}
	}
}

// maxChainSteps bounds a chain's jobs.
const maxChainSteps = 8

// Chain is a Job that runs row-wise jobs (each row's outputs depend only
// on that row's inputs and the jobs before it in the chain) one after the
// other over the same rows, with no barrier between them. The zero value
// is an empty chain.
type Chain struct {
	steps [maxChainSteps]RowJob
	n     int
}

// Reset empties the chain.
func (c *Chain) Reset() { c.n = 0 }

// Add appends a job to the chain.
func (c *Chain) Add(j RowJob) {
	if c.n == maxChainSteps {
		panic("par: more than 8 jobs in one chain")
	}
	c.steps[c.n] = j
	c.n++
}

// Len is the number of jobs in the chain.
func (c *Chain) Len() int { return c.n }

// RowCost is what a row costs: its jobs' rows together.
func (c *Chain) RowCost() int {
	cost := 0
	for _, s := range c.steps[:c.n] {
		cost += s.RowCost()
	}
	return cost
}

// Run runs every job of the chain over [lo, hi), in the order added.
func (c *Chain) Run(lo, hi int) {
	for _, s := range c.steps[:c.n] {
		s.Run(lo, hi)
	}
}
