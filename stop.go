package minigpt

// This file holds the stop strings: a sample's tokens held back while
// they may begin one or end inside a character, and the sample's end
// when one appears in its text.

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// errFinished tells a request that a sample has ended.
var errFinished = errors.New("sample finished")

// stopper keeps each sample's tokens and, with a vocabulary, their text;
// it ends a sample when a stop string appears in the text, and streams
// only what is final: no token that may begin a stop string, and no
// text that ends inside a character. Stop strings are matched on the
// decoded text, so they are found across token boundaries and inside a
// token of several characters.
type stopper struct {
	stops [][]byte    // the stop strings' bytes
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
	text     []byte // their bytes (with a vocabulary), cut before a stop string
	ends     []int  // ends[i]: the end of token i's bytes in text
	steps    []Step // the traces of ids[stepBase:], when tracing
	stepBase int
	released int // ids[:released] have been streamed
	relText  int // and text[:relText]
	finish   string
}

func newStopper(stops []string, vocab *Vocab, n int, trace, streamed bool) *stopper {
	return &stopper{stops: stopBytes(stops, vocab), vocab: vocab, trace: trace, streamed: trace && streamed, samples: make([]stopSample, n)}
}

// stopBytes returns the stop strings' bytes: none without a vocabulary.
func stopBytes(stops []string, vocab *Vocab) [][]byte {
	var b [][]byte
	if vocab != nil {
		for _, s := range stops {
			b = append(b, []byte(s))
		}
	}
	return b
}

// reset readies sample b for up to n tokens.
func (st *stopper) reset(b, n int) {
	s := &st.samples[b]
	s.ids = make([]int, 0, n)
	if st.vocab != nil {
		s.text, s.ends = make([]byte, 0, 4*n), make([]int, 0, n)
	}
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
	if st.vocab == nil {
		return st.release(b, len(s.ids), stream)
	}
	from := len(s.text)
	s.text = st.vocab.appendToken(s.text, id)
	s.ends = append(s.ends, len(s.text))
	if at := stopIn(s.text, from, st.stops); at >= 0 {
		// The text ends before the stop string; the tokens are those
		// wholly before it.
		keep := len(s.ids)
		for keep > 0 && s.ends[keep-1] > at {
			keep--
		}
		s.ids, s.ends, s.text = s.ids[:keep], s.ends[:keep], s.text[:at]
		if st.trace {
			s.steps = s.steps[:keep-s.stepBase]
		}
		s.finish = finishStop
		if err := st.release(b, keep, stream); err != nil {
			return err
		}
		return errFinished
	}
	// Hold back the longest suffix that is a proper prefix of a stop
	// string (it may still become one), and a character not yet whole.
	final := len(s.text) - holdBack(s.text, st.stops)
	final -= partialRune(s.text[:final])
	n := len(s.ids)
	for n > s.released && s.ends[n-1] > final {
		n--
	}
	return st.release(b, n, stream)
}

// stopIn returns where the stop string that completes first in text's
// bytes from from on begins (of those that complete at the same byte, the
// longest, which starts first), or -1 if none does.
func stopIn(text []byte, from int, stops [][]byte) int {
	at, end := -1, 0
	for _, stop := range stops {
		lo := max(0, from-len(stop)+1)
		i := bytes.Index(text[lo:], stop)
		if i < 0 {
			continue
		}
		i += lo
		if e := i + len(stop); at < 0 || e < end || (e == end && i < at) {
			at, end = i, e
		}
	}
	return at
}

// holdBack returns the length of the longest suffix of text that is a
// proper prefix of a stop string.
func holdBack(text []byte, stops [][]byte) int {
	hold := 0
	for _, stop := range stops {
		for k := min(len(stop)-1, len(text)); k > hold; k-- {
			if bytes.Equal(text[len(text)-k:], stop[:k]) {
				hold = k
				break
			}
		}
	}
	return hold
}

// partialRune returns the length of an incomplete UTF-8 character at the
// end of text (a token that holds only the first bytes of one), or 0.
func partialRune(text []byte) int {
	for k := 1; k <= min(utf8.UTFMax-1, len(text)); k++ {
		c := text[len(text)-k]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(text[len(text)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// release streams sample b's tokens up to upto (and, once the sample
// has finished, its last chunk with the finish reason, and the rest of
// its text).
func (st *stopper) release(b, upto int, stream func(*Completion) error) error {
	s := &st.samples[b]
	relText := s.relText
	switch {
	case s.finish != "":
		relText = len(s.text)
	case upto > 0 && st.vocab != nil:
		relText = s.ends[upto-1]
	}
	if upto == s.released && s.finish == "" {
		return nil
	}
	from, fromText := s.released, s.relText
	s.released, s.relText = upto, relText
	if stream == nil {
		return nil
	}
	c := &st.chunk
	*c = Completion{Index: b, IDs: s.ids[from:upto], Finish: s.finish}
	if st.vocab != nil {
		c.Text = string(s.text[fromText:relText])
	}
	if s.finish != "" {
		c.Incomplete = st.incomplete(s.ids[:upto])
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

// text returns sample b's released text.
func (st *stopper) text(b int) string {
	s := &st.samples[b]
	return string(s.text[:s.relText])
}
