package minigpt

// This file holds the schedule: how the jobs of a forward or backward
// pass, listed in the model's order, are grouped into parallel sections.

import "example.org/minigpt/internal/par"

// schedule runs the jobs a pass lists, in order, as par sections, so that
// the pass itself can read as the list of the model's layers. Row jobs
// (rows) listed one after the other form one chain: a chunk of rows goes
// through all of them while it is in one core's cache, and nothing waits
// between them. Any other job (run) is a section of its own. Jobs listed
// with beside, and sums over rows listed with sums, run in the pending
// section beside its chain or job (they read nothing it writes); sums
// listed with after run in the section that follows the pending one,
// whose inputs the pending section makes. par decides whether a sum runs
// whole or in halves.
//
// The grouping moves no bit: every job gives each item the same result
// whichever section runs it. A schedule is reused pass after pass and
// allocates only when a pass needs more sums than any before.
type schedule struct {
	sec    par.Section
	chain  par.Chain
	rows   int      // the pending chain's rows
	task   par.Task // the pending section's job when it is not a chain
	beside []par.Task
	now    []par.Sum // sums of the pending section
	next   []par.Sum // sums of the section after it
	halves []par.Halves
	used   int // halves used by this pass
}

// begin starts a pass.
func (s *schedule) begin() {
	s.chain.Reset()
	s.rows, s.task, s.used = 0, nil, 0
	s.beside, s.now, s.next = s.beside[:0], s.now[:0], s.next[:0]
}

// chainRows appends row jobs over rows [0, rows) to the pending chain,
// or starts a new one (rows differs, or the pending section is no chain).
func (s *schedule) chainRows(rows int, jobs ...par.RowJob) {
	if s.task != nil || (s.chain.Len() > 0 && rows != s.rows) {
		s.flush()
	}
	s.rows = rows
	for _, j := range jobs {
		s.chain.Add(j)
	}
}

// run makes t a section of its own, after the pending one.
func (s *schedule) run(t par.Task) {
	s.flush()
	s.task = t
}

// with adds t to the pending section, beside its chain or job.
func (s *schedule) with(t par.Task) { s.beside = append(s.beside, t) }

// sums adds sums whose inputs are ready to the pending section.
func (s *schedule) sums(sums ...par.Sum) { s.now = append(s.now, sums...) }

// after adds sums to the section after the pending one.
func (s *schedule) after(sums ...par.Sum) { s.next = append(s.next, sums...) }

// flush runs the pending section, if any; the sums listed after it
// become the next section's.
func (s *schedule) flush() {
	if s.chain.Len() == 0 && s.task == nil && len(s.beside) == 0 && len(s.now) == 0 {
		return
	}
	s.sec.Reset()
	switch {
	case s.chain.Len() > 0:
		s.sec.AddChain(&s.chain, s.rows)
	case s.task != nil:
		s.sec.AddTask(s.task)
	}
	for _, t := range s.beside {
		s.sec.AddTask(t)
	}
	for _, sum := range s.now {
		if s.used == len(s.halves) {
			s.halves = append(s.halves, par.Halves{})
		}
		s.sec.AddSum(&s.halves[s.used], sum)
		s.used++
	}
	s.sec.Run()
	s.chain.Reset()
	s.task = nil
	s.beside = s.beside[:0]
	s.now, s.next = append(s.now[:0], s.next...), s.next[:0]
}

// end runs what is left of the pass: the pending section, then the sums
// listed after it.
func (s *schedule) end() {
	s.flush()
	s.flush()
}
