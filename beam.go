package minigpt

// This file holds beam search, as a request's way of choosing its rows'
// next tokens.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"example.org/minigpt/internal/kernels"
)

// beamState is Hugging Face's beam search (num_beams = K, length_penalty,
// early_stopping=False) on the raw log-probabilities, over a request's K
// rows. Like Hugging Face, it runs the logits processors of the options
// (logit bias, presence/frequency penalties, repetition penalty,
// no-repeat n-gram, in the pipeline's order) on each beam's
// log-probabilities; the sampling warpers (temperature, top-k, top-p,
// min-p) do not apply. A stop string plays the part of Hugging Face's
// end-of-sequence token: a beam that completes one becomes a finished
// hypothesis of its length.
type beamState struct {
	o        *GenerateOptions
	K, n     int      // beams, and hypotheses returned
	V        int      // the model's vocabulary size
	P        int      // the prompt's length
	stops    [][]byte // the stop strings' bytes
	maxStop  int      // the longest one's length
	vocab    *Vocab   // for the stop strings: nil without
	tail     []byte   // stopCut's scratch
	scores   []float64
	logp     []float64 // (K, V) candidates' scores
	order    []int     // (K·V)
	parents  []int     // (K) each beam's parent after a step
	tokens   []int     // (K) and the token it appends to its parent's sequence
	next     []float64 // (K) the chosen candidates' scores
	finished []hypothesis
	running  bool
	st       seqState // the processors' scratch

	// With a constraint: each beam's place in it, the places of the
	// chosen candidates, and a beam's mask.
	places, nextPlaces []place
	mask               []bool
}

// hypothesis is a finished beam.
type hypothesis struct {
	ids        []int // generated tokens, the stop string included
	score      float64
	finish     string
	stop       int  // the tokens of ids not wholly before the stop string
	textLen    int  // with a stop string, the bytes of text before it; -1 without
	incomplete bool // ids[:len(ids)-stop] falls short of the constraint's format
}

func newBeamState(c Config, o *GenerateOptions, P, K, n int, stops [][]byte, vocab *Vocab) *beamState {
	V := c.VocabSize
	bs := &beamState{o: o, K: K, n: n, V: V, P: P, stops: stops, vocab: vocab, scores: make([]float64, K), logp: make([]float64, K*V),
		order: make([]int, K*V), parents: make([]int, K), tokens: make([]int, K), next: make([]float64, K),
		running: true, st: seqState{seen: make([]bool, V), counts: make([]int32, V)}}
	// Every beam starts as the prompt; only beam 0 may be continued at
	// the first step, so that the K beams are K different sequences
	// (Hugging Face starts the others at -1e9).
	for b := 1; b < K; b++ {
		bs.scores[b] = math.Inf(-1)
	}
	for _, s := range stops {
		bs.maxStop = max(bs.maxStop, len(s))
	}
	if c := o.Constraint; c != nil {
		bs.places, bs.nextPlaces, bs.mask = make([]place, K), make([]place, K), make([]bool, V)
		for b := range bs.places {
			bs.places[b].start(c)
		}
	}
	return bs
}

// hyp makes the hypothesis of generated tokens gen, of which the first
// keep come wholly before a stop string (len(gen) without one), with the
// given score.
func (bs *beamState) hyp(gen []int, score float64, finish string, keep int) hypothesis {
	h := hypothesis{ids: gen, score: score, finish: finish, stop: len(gen) - keep, textLen: -1}
	if keep < len(gen) {
		h.textLen = bs.stopText(gen)
	}
	h.incomplete = bs.o.Constraint != nil && bs.o.Constraint.incomplete(gen[:keep])
	return h
}

// tokLen returns the length of token id's bytes.
func (bs *beamState) tokLen(id int) int {
	if bs.vocab.tok != nil {
		return len(bs.vocab.tok.Token(id))
	}
	return utf8.RuneLen(bs.vocab.chars[id])
}

// score is a hypothesis's score: its log-probability sum over its length
// (generated tokens) to the length penalty.
func (bs *beamState) score(o *GenerateOptions, sum float64, L int) float64 {
	if L == 0 {
		return sum
	}
	return sum / math.Pow(float64(L), o.LengthPenalty)
}

func (bs *beamState) addHyp(h hypothesis) {
	bs.finished = append(bs.finished, h)
	slices.SortStableFunc(bs.finished, func(a, b hypothesis) int { return cmp.Compare(b.score, a.score) })
	if len(bs.finished) > bs.K {
		bs.finished = bs.finished[:bs.K]
	}
}

// stopCut looks in the text of gen (generated tokens) for a stop string
// that completes in its last token, as the stopper does for a sample: of
// those that do, the first to complete, the longest on a tie. It returns
// how many tokens come wholly before it (len(gen) when none completes).
func (bs *beamState) stopCut(gen []int) int {
	at, i := bs.stopAt(gen)
	if at < 0 {
		return len(gen)
	}
	keep, end := i, 0
	for _, id := range gen[i:] {
		if end += bs.tokLen(id); end > at {
			break
		}
		keep++
	}
	return keep
}

// stopAt decodes the tail of gen that can hold a stop string completing
// in its last token, from token i on, into bs.tail, and returns where in
// it the stop string stopCut finds begins (-1 for none).
func (bs *beamState) stopAt(gen []int) (at, i int) {
	if len(bs.stops) == 0 {
		return -1, 0
	}
	i = len(gen) - 1
	last := bs.tokLen(gen[i])
	for before := 0; i > 0 && before < bs.maxStop-1; {
		i--
		before += bs.tokLen(gen[i])
	}
	bs.tail = bs.tail[:0]
	for _, id := range gen[i:] {
		bs.tail = bs.vocab.appendToken(bs.tail, id)
	}
	return stopIn(bs.tail, len(bs.tail)-last, bs.stops), i
}

// stopText returns the length of gen's text before the stop string that
// completes in its last token.
func (bs *beamState) stopText(gen []int) int {
	at, i := bs.stopAt(gen)
	n := at
	for _, id := range gen[:i] {
		n += bs.tokLen(id)
	}
	return n
}

// process runs the deterministic stages of the pipeline on one beam's
// log-probabilities.
func (bs *beamState) process(o *GenerateOptions, lp []float64, seq []int, P int) {
	st := &bs.st
	st.reset(seq)
	for _, id := range seq[P:] {
		st.counts[id]++
	}
	if len(o.LogitBias) > 0 {
		applyLogitBias(lp, o.LogitBias)
	}
	if o.PresencePenalty != 0 || o.FrequencyPenalty != 0 {
		applyPresenceFrequency(lp, st.counts, o.PresencePenalty, o.FrequencyPenalty)
	}
	if o.RepetitionPenalty != 0 && o.RepetitionPenalty != 1 {
		applyRepetitionPenalty(lp, st.seen, o.RepetitionPenalty)
	}
	if o.NoRepeatNGramSize > 0 {
		applyNoRepeatNGram(lp, seq, o.NoRepeatNGramSize)
	}
}

// advance is one step of the search over the beams' sequences (prompt
// and generated tokens), after steps steps: every beam's candidates
// scored, the best K continuations kept (finished hypotheses set aside)
// as each beam's parent and token. It reports whether the beams must
// follow their parents (grow), and whether the search has ended.
func (bs *beamState) advance(seqs [][]int, steps int, logits func(b int) []float64) (grow, ended bool, err error) {
	o, K, V, P := bs.o, bs.K, bs.V, bs.P
	for b := range K {
		row := logits(b)[:V]
		if !isFinite(row) {
			return false, false, fmt.Errorf("%w at position %d", ErrNonFinite, len(seqs[0]))
		}
		maxv, sum := math.Inf(-1), 0.0
		for _, v := range row {
			maxv = max(maxv, v)
		}
		for _, v := range row {
			sum += kernels.Exp(v - maxv)
		}
		lse := kernels.Log(sum)
		lp := bs.logp[b*V : (b+1)*V]
		for v, x := range row {
			lp[v] = float64(x-maxv) - lse
		}
		// The constraint first, as in sampling; a dead beam (score -Inf)
		// stands nowhere in it.
		if bs.places != nil && !math.IsInf(bs.scores[b], -1) {
			err := bs.places[b].allowed(o.MaxNewTokens-steps, bs.mask)
			switch {
			case errors.Is(err, errFormatEnded):
				// Complete, and nothing more fits: the beam ends here
				// (a dead beam from now on), as at a stop string.
				gen := slices.Clone(seqs[b][P:])
				bs.addHyp(bs.hyp(gen, bs.score(o, bs.scores[b], len(gen)), finishStop, len(gen)))
				clear(bs.mask)
			case err != nil:
				return false, false, err
			}
			applyMask(lp, bs.mask)
		}
		bs.process(o, lp, seqs[b], P)
		for v := range lp {
			lp[v] += bs.scores[b]
		}
	}
	// Candidates (beam·V + token) by descending score, the lower (beam,
	// token) first among equals.
	sortByValue(bs.order, bs.logp)
	// At the length limit every one of the best K candidates ends, in
	// rank order (Hugging Face's max-length criterion), so that ties
	// between stopped and running ones keep that order.
	last := steps+1 >= o.MaxNewTokens
	filled := 0
	for rank, c := range bs.order[:min(2*K, len(bs.order))] {
		b, tok := c/V, c%V
		if math.IsInf(bs.logp[c], -1) {
			break
		}
		seq := seqs[b]
		gen := append(seq[P:len(seq):len(seq)], tok) // a copy: the cap forces it
		keep := bs.stopCut(gen)
		s := len(gen) - keep // tokens not wholly before a stop string
		// A complete format that nothing may extend ends the beam as a
		// stop string would (without a stop string to cut).
		mustEnd := false
		var next place
		if bs.places != nil {
			next = bs.places[b]
			var err error
			if mustEnd, err = next.advance(tok); err != nil {
				return false, false, err
			}
		}
		// Hugging Face keeps an end-of-sequence candidate only if it
		// ranks among the best num_beams.
		if (s > 0 || mustEnd || last) && rank < K {
			finish := finishLength
			if s > 0 || mustEnd {
				finish = finishStop
			}
			bs.addHyp(bs.hyp(gen, bs.score(o, bs.logp[c], len(gen)), finish, keep))
		}
		if s > 0 || mustEnd {
			continue
		}
		if bs.places != nil {
			bs.nextPlaces[filled] = next
		}
		bs.parents[filled], bs.tokens[filled], bs.next[filled] = b, tok, bs.logp[c]
		if filled++; filled == K {
			break
		}
	}
	if filled == 0 {
		if len(bs.finished) == 0 {
			return false, false, fmt.Errorf("%w at position %d: logit bias and no-repeat n-gram leave no token for any beam", ErrBadOption, len(seqs[0]))
		}
		bs.running = false // every live beam is banned: the finished ones are the answer
		return false, true, nil
	}
	if last {
		bs.running = false // the best candidates are hypotheses already
		return false, false, nil
	}
	for b := filled; b < K; b++ {
		// Fewer than K live continuations (a tiny vocabulary): keep the
		// rest dead.
		bs.parents[b], bs.tokens[b], bs.next[b] = bs.parents[0], bs.tokens[0], math.Inf(-1)
	}
	copy(bs.scores, bs.next)
	copy(bs.places, bs.nextPlaces)
	// Hugging Face's stopping rule (early_stopping=False): done once K
	// hypotheses are finished and the best running beam, at its current
	// length, cannot beat the worst of them.
	if len(bs.finished) == K {
		L := len(seqs[0]) + 1 - P // after the step
		bs.running = bs.score(o, bs.scores[0], L) > bs.finished[K-1].score
		return true, !bs.running, nil
	}
	return true, false, nil
}

// finish adds the running beams to the hypotheses (unless the search
// stopped early) and streams the best n, each whole, best first.
func (bs *beamState) finish(seqs [][]int, vocab *Vocab, emit func(*Completion) error) error {
	if bs.running {
		P := bs.P
		for b := range bs.K {
			if !math.IsInf(bs.scores[b], -1) {
				seq := seqs[b]
				bs.addHyp(bs.hyp(slices.Clone(seq[P:]), bs.score(bs.o, bs.scores[b], len(seq)-P), finishLength, len(seq)-P))
			}
		}
		bs.running = false
	}
	if len(bs.finished) > bs.n {
		bs.finished = bs.finished[:bs.n]
	}
	if emit == nil {
		return nil
	}
	for i, h := range bs.finished {
		c := bs.completion(i, &h, vocab)
		if err := emit(&c); err != nil {
			return err
		}
	}
	return nil
}

// results returns the best hypotheses as completions.
func (bs *beamState) results(vocab *Vocab) []Completion {
	res := make([]Completion, len(bs.finished))
	for i := range bs.finished {
		res[i] = bs.completion(i, &bs.finished[i], vocab)
	}
	return res
}

// completion returns hypothesis h, ranked i, as a Completion: its tokens
// before the stop string, and with vocab its text before it (which, with
// tokens of several characters, may end inside a token IDs leaves out).
func (bs *beamState) completion(i int, h *hypothesis, vocab *Vocab) Completion {
	c := Completion{Index: i, IDs: h.ids[:len(h.ids)-h.stop], Finish: h.finish, Score: h.score, Incomplete: h.incomplete}
	if vocab != nil {
		if h.textLen >= 0 {
			c.Text = vocab.text(h.ids)[:h.textLen]
		} else {
			c.Text = vocab.text(c.IDs)
		}
	}
	return c
}
