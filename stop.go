package minigpt

import "slices"

// stopper holds back each sample's tokens that may begin a stop string
// and ends a sample when one appears. The model is character-level, so a
// token is one character and a stop string is a sequence of ids.
type stopper struct {
	stops  [][]int // the stop strings as ids; a string with a character outside the vocabulary can never appear
	chars  []rune
	trace  bool
	noText bool // the stream reads only Chunk.IDs: skip decoding

	samples []stopSample
	chunk   Chunk // the chunk handed to the stream, reused: valid only during the callback
}

type stopSample struct {
	ids      []int  // generated tokens
	steps    []Step // their traces, when tracing
	released int    // ids[:released] have been streamed
	finish   FinishReason
}

func newStopper(stops []string, chars []rune, n int, trace bool) *stopper {
	st := &stopper{chars: chars, trace: trace, samples: make([]stopSample, n)}
	index := make(map[rune]int, len(chars))
	for id, r := range chars {
		index[r] = id
	}
outer:
	for _, s := range stops {
		var ids []int
		for _, r := range s {
			id, ok := index[r]
			if !ok {
				continue outer
			}
			ids = append(ids, id)
		}
		st.stops = append(st.stops, ids)
	}
	return st
}

// add appends sample b's new token and streams what became final;
// it returns errFinished when a stop string completed.
func (st *stopper) add(b, id int, step *Step, stream func(*Chunk) error) error {
	s := &st.samples[b]
	s.ids = append(s.ids, id)
	if st.trace {
		s.steps = append(s.steps, Step{})
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
			s.steps = s.steps[:len(s.ids)]
		}
		s.finish = FinishStop
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
func (st *stopper) release(b, upto int, stream func(*Chunk) error) error {
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
	*c = Chunk{Sample: b, IDs: s.ids[from:upto], Finish: s.finish}
	if !st.noText {
		c.Text = decodeChars(st.chars, c.IDs)
	}
	if st.trace {
		c.Steps = s.steps[from:upto]
	}
	return stream(c)
}

// finish ends every sample still running at the length limit, releasing
// its held-back tokens.
func (st *stopper) finish(stream func(*Chunk) error) error {
	for b := range st.samples {
		s := &st.samples[b]
		if s.finish != "" {
			continue
		}
		s.finish = FinishLength
		if err := st.release(b, len(s.ids), stream); err != nil {
			return err
		}
	}
	return nil
}
