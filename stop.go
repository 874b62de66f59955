package minigpt

// This file holds the stop strings: a sample's tokens held back while
// they may begin one, and the sample's end when one appears.

import (
	"errors"
	"slices"
)

// errFinished tells a request that a sample has ended.
var errFinished = errors.New("sample finished")

// stopper holds back each sample's tokens that may begin a stop string
// and ends a sample when one appears. The model is character-level, so a
// token is one character and a stop string is a sequence of ids.
type stopper struct {
	stops [][]int     // the stop strings as ids; a string with a character outside the vocabulary can never appear
	vocab *Vocab      // nil: token ids only, no text
	c     *Constraint // the samples' constraint, or nil
	trace bool        // keep each token's Step
	// streamed: the Steps go to the stream only, so a sample keeps those
	// of its held-back tokens alone.
	streamed bool

	samples []stopSample
	chunk   Completion // the part handed to the stream, reused: valid only during the callback
}

type stopSample struct {
	ids      []int  // generated tokens
	steps    []Step // the traces of ids[stepBase:], when tracing
	stepBase int
	released int // ids[:released] have been streamed
	finish   string
}

func newStopper(stops []string, vocab *Vocab, n int, trace, streamed bool) *stopper {
	st := &stopper{vocab: vocab, trace: trace, streamed: trace && streamed, samples: make([]stopSample, n)}
	if vocab == nil {
		return st
	}
	for _, s := range stops {
		if ids, err := vocab.Encode(s); err == nil {
			st.stops = append(st.stops, ids)
		}
	}
	return st
}

// add appends sample b's new token and streams what became final;
// it returns errFinished when a stop string completed.
func (st *stopper) add(b, id int, step *Step, stream func(*Completion) error) error {
	s := &st.samples[b]
	s.ids = append(s.ids, id)
	if st.trace {
		// Reuse a dropped step's buffers where there is one.
		if n := len(s.steps); n < cap(s.steps) {
			s.steps = s.steps[:n+1]
		} else {
			s.steps = append(s.steps, Step{})
		}
		copyStep(&s.steps[len(s.steps)-1], step)
	}
	// Of the stop strings that end here, the longest starts first: the
	// text is cut before it, whatever the order of the list.
	cut := 0
	for _, stop := range st.stops {
		if len(stop) > cut && len(s.ids) >= len(stop) && slices.Equal(s.ids[len(s.ids)-len(stop):], stop) {
			cut = len(stop)
		}
	}
	if cut > 0 {
		s.ids = s.ids[:len(s.ids)-cut]
		if st.trace {
			s.steps = s.steps[:len(s.ids)-s.stepBase]
		}
		s.finish = finishStop
		if err := st.release(b, len(s.ids), stream); err != nil {
			return err
		}
		return errFinished
	}
	// Hold back the longest suffix that is a proper prefix of a stop
	// string: it may still become one.
	hold := 0
	for _, stop := range st.stops {
		for k := min(len(stop)-1, len(s.ids)); k > hold; k-- {
			if slices.Equal(s.ids[len(s.ids)-k:], stop[:k]) {
				hold = k
				break
			}
		}
	}
	return st.release(b, max(s.released, len(s.ids)-hold), stream)
}

// release streams sample b's tokens up to upto (and, once the sample
// has finished, its last chunk with the finish reason).
func (st *stopper) release(b, upto int, stream func(*Completion) error) error {
	s := &st.samples[b]
	if upto == s.released && s.finish == "" {
		return nil
	}
	from := s.released
	s.released = upto
	if stream == nil {
		return nil
	}
	c := &st.chunk
	*c = Completion{Index: b, IDs: s.ids[from:upto], Finish: s.finish}
	if s.finish != "" {
		c.Incomplete = st.incomplete(s.ids[:upto])
	}
	if st.vocab != nil {
		c.Text = st.vocab.text(c.IDs)
	}
	if st.trace {
		c.Steps = s.steps[from-s.stepBase : upto-s.stepBase]
	}
	if err := stream(c); err != nil || !st.streamed {
		return err
	}
	// Drop the delivered steps, swapping them behind the kept ones so
	// that each keeps its own buffers for reuse.
	n := upto - s.stepBase
	kept := len(s.steps) - n
	for i := range kept {
		s.steps[i], s.steps[n+i] = s.steps[n+i], s.steps[i]
	}
	s.steps, s.stepBase = s.steps[:kept], upto
	return nil
}

// end ends sample b where it stands (its constraint's format is
// complete and nothing may follow), releasing its held-back tokens, and
// returns errFinished.
func (st *stopper) end(b int, stream func(*Completion) error) error {
	s := &st.samples[b]
	s.finish = finishStop
	if err := st.release(b, len(s.ids), stream); err != nil {
		return err
	}
	return errFinished
}

// incomplete reports whether a sample's text ids falls short of its
// constraint's format (never, without one).
func (st *stopper) incomplete(ids []int) bool {
	return st.c != nil && st.c.incomplete(ids)
}

// finish ends every sample still running at the length limit, releasing
// its held-back tokens.
func (st *stopper) finish(stream func(*Completion) error) error {
	for b := range st.samples {
		s := &st.samples[b]
		if s.finish != "" {
			continue
		}
		s.finish = finishLength
		if err := st.release(b, len(s.ids), stream); err != nil {
			return err
		}
	}
	return nil
}
