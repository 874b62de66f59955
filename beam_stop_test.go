// beam_stop_test.go tests beam search with stop strings and logits processors against a plain reference written from Hugging Face's beam search.

package minigpt

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// hfOptions are the settings the reference beam search takes.
type hfOptions struct {
	K, maxNew     int
	lengthPenalty float64
	stops         [][]int // stop strings as ids: the end-of-sequence "token"

	bias                map[int]float64
	presence, frequency float64
	repetition          float64
	noRepeat            int
}

// hfResult is one finished hypothesis of the reference.
type hfResult struct {
	ids    []int // generated tokens, without the stop string
	score  float64
	finish string
}

// hfBeam is Hugging Face's beam search (transformers' _beam_search with
// early_stopping=False, one batch row), written from its documented
// algorithm as a plain loop over whole sequences, with a stop string in
// the part of the end-of-sequence token. At each step:
//
//   - every running beam's log-probabilities (the model's logits over the
//     whole window, log-softmaxed) go through the logits processors, then
//     add the beam's score; beams 2..K start dead (HF: -1e9);
//   - the 2·K best (beam, token) candidates are kept (beams_to_keep), ties
//     to the lower beam·V + token;
//   - a candidate whose generated text now ends in a stop string (cut
//     before the longest that ends there: it starts first) becomes a
//     finished hypothesis, scored sum / len^length_penalty (len counts
//     the generated tokens, the stop string included), but only if it
//     ranks among the first K of the 2·K (top_num_beam_mask); the finished
//     set keeps the best K, earlier ones first on ties;
//   - the next running beams are the best K candidates that did not stop
//     (a stopped one counts as dead: HF gives it -1e9);
//   - at the last step (max length) every one of the first K candidates
//     finishes, stopped or not;
//   - the search ends early once K hypotheses are finished and the best
//     running beam's score over its length^length_penalty does not beat
//     the worst of them.
//
// logprobs returns the log-probabilities after a whole sequence (prompt
// included); the reference copies them before changing anything.
func hfBeam(V int, prompt []int, o hfOptions, logprobs func(seq []int) []float64) []hfResult {
	type beam struct {
		gen   []int
		score float64
	}
	type cand struct {
		beam, tok int
		score     float64
	}
	running := make([]beam, o.K)
	for b := 1; b < o.K; b++ {
		running[b].score = math.Inf(-1)
	}
	var finished []hfResult
	add := func(r hfResult) {
		finished = append(finished, r)
		slices.SortStableFunc(finished, func(a, b hfResult) int { return cmp.Compare(b.score, a.score) })
		finished = finished[:min(len(finished), o.K)]
	}
	stopLen := func(gen []int) int { // the longest stop string gen ends with: it starts first
		n := 0
		for _, s := range o.stops {
			if len(gen) >= len(s) && slices.Equal(gen[len(gen)-len(s):], s) {
				n = max(n, len(s))
			}
		}
		return n
	}
	norm := func(sum float64, L int) float64 { return sum / math.Pow(float64(L), o.lengthPenalty) }
	for step := 0; step < o.maxNew; step++ {
		var cands []cand
		for b, bm := range running {
			seq := slices.Concat(prompt, bm.gen)
			lp := slices.Clone(logprobs(seq))
			hfProcess(lp, seq, bm.gen, o)
			for tok, v := range lp {
				cands = append(cands, cand{b, tok, v + bm.score})
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		top := cands[:min(2*o.K, len(cands))]
		last := step+1 == o.maxNew
		var next []beam
		for rank, c := range top {
			gen := append(slices.Clone(running[c.beam].gen), c.tok)
			s := stopLen(gen)
			if rank < o.K && !math.IsInf(c.score, -1) && (s > 0 || last) {
				r := hfResult{ids: gen[:len(gen)-s], score: norm(c.score, len(gen)), finish: finishLength}
				if s > 0 {
					r.finish = finishStop
				}
				add(r)
			}
			if s == 0 && len(next) < o.K {
				next = append(next, beam{gen, c.score})
			}
		}
		for len(next) < o.K {
			next = append(next, beam{nil, math.Inf(-1)})
		}
		running = next
		if last {
			break
		}
		if len(finished) == o.K && !(norm(running[0].score, step+1) > finished[o.K-1].score) {
			break
		}
	}
	return finished
}

// hfProcess is the logits processors on one beam's log-probabilities, in
// the pipeline's order (see GenerateOptions), written from their
// definitions: the logit bias (-100 bans, +100 forces), OpenAI's presence
// and frequency penalties on the generated tokens' counts, Hugging Face's
// repetition penalty on every token of the sequence (a negative score
// multiplied, any other divided) and its no-repeat n-gram ban over the
// whole sequence.
func hfProcess(lp []float64, seq, gen []int, o hfOptions) {
	forced := false
	for _, b := range o.bias {
		forced = forced || b >= 100
	}
	for id := range lp {
		b := o.bias[id]
		switch {
		case forced && b < 100, b <= -100:
			lp[id] = math.Inf(-1)
		case b < 100:
			lp[id] += b
		}
	}
	if o.presence != 0 || o.frequency != 0 {
		counts := map[int]int{}
		for _, id := range gen {
			counts[id]++
		}
		for id, c := range counts {
			lp[id] -= float64(float64(c)*o.frequency) + o.presence
		}
	}
	if o.repetition != 0 && o.repetition != 1 {
		done := map[int]bool{}
		for _, id := range seq {
			if done[id] {
				continue
			}
			done[id] = true
			if lp[id] < 0 {
				lp[id] *= o.repetition
			} else {
				lp[id] /= o.repetition
			}
		}
	}
	if n := o.noRepeat; n > 0 && len(seq) >= n {
		for i := 0; i+n <= len(seq); i++ {
			if slices.Equal(seq[i:i+n-1], seq[len(seq)-n+1:]) {
				lp[seq[i+n-1]] = math.Inf(-1)
			}
		}
	}
}

// modelLogprobs returns the log-probabilities of m's next token after a
// sequence, from a full computation of its window (the last BlockSize
// tokens), memoised: the reference asks for the same prefixes again and
// again.
func modelLogprobs(t testing.TB, m *Model) func(seq []int) []float64 {
	memo := map[string][]float64{}
	T, V := m.Config().BlockSize, m.Config().VocabSize
	return func(seq []int) []float64 {
		w := seq[max(0, len(seq)-T):]
		key := fmt.Sprint(w)
		if lp, ok := memo[key]; ok {
			return lp
		}
		logits, err := m.Logits(w, 1, len(w))
		if err != nil {
			t.Fatal(err)
		}
		lp := logSoftmax(logits[(len(w)-1)*V:])
		memo[key] = lp
		return lp
	}
}

// beamCase is one configuration of the comparison.
type beamCase struct {
	prompt string
	stops  []string
	o      GenerateOptions
}

func (c beamCase) String() string {
	return fmt.Sprintf("prompt %q, %d beams, stop %q, length penalty %v, bias %v, presence %v, frequency %v, repetition %v, no-repeat %d",
		c.prompt, c.o.NumBeams, c.stops, c.o.LengthPenalty, c.o.LogitBias, c.o.PresencePenalty, c.o.FrequencyPenalty, c.o.RepetitionPenalty, c.o.NoRepeatNGramSize)
}

// compareBeams runs every case through Complete and the reference on the
// embedded model (with its parameters all zero if uniform: every
// distribution uniform, every choice a tie) and returns the cases whose
// results differ (each with the first difference), failing t on an
// error.
func compareBeams(t *testing.T, cases []beamCase, uniform bool) []string {
	t.Helper()
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	if uniform {
		clear(m.Params())
	}
	lp := modelLogprobs(t, m)
	encode := func(s string) []int {
		ids, err := vocab.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var diffs []string
	for _, c := range cases {
		o := c.o
		o.N = o.NumBeams
		got, err := m.Complete(context.Background(), vocab, c.prompt, withStop(o, c.stops))
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		ho := hfOptions{K: o.NumBeams, maxNew: o.MaxNewTokens, lengthPenalty: o.LengthPenalty, bias: o.LogitBias,
			presence: o.PresencePenalty, frequency: o.FrequencyPenalty, repetition: o.RepetitionPenalty, noRepeat: o.NoRepeatNGramSize}
		for _, s := range c.stops {
			if ids, err := vocab.Encode(s); err == nil { // a character outside the vocabulary never appears
				ho.stops = append(ho.stops, ids)
			}
		}
		want := hfBeam(m.Config().VocabSize, encode(c.prompt), ho, lp)
		if d := firstBeamDifference(got, want); d != "" {
			diffs = append(diffs, fmt.Sprintf("%v: %s", c, d))
		}
	}
	return diffs
}

// firstBeamDifference describes the first hypothesis where got and want
// differ in tokens, finish reason or score, or "" if none does.
func firstBeamDifference(got []Completion, want []hfResult) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hypotheses, the reference %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !slices.Equal(g.IDs, w.ids) || g.Finish != w.finish || math.Abs(g.Score-w.score) > 1e-12*math.Abs(w.score) {
			return fmt.Sprintf("rank %d is %v (%s, %v), the reference %v (%s, %v)", i, g.IDs, g.Finish, g.Score, w.ids, w.finish, w.score)
		}
	}
	return ""
}

// TestBeamStopStringsMatchHuggingFace compares beam search with stop
// strings against the reference over 1,470 small configurations of the
// embedded model: 7 prompts, 2 to 4 beams, 10 sets of stop strings
// (single characters, words, several at once, overlapping ones, one that
// cannot occur) and 7 length penalties. A stop-string candidate ranked just outside the
// best num_beams becomes a hypothesis in 28 of them if the rank check
// goes (for example prompt "the ", 3 beams, stop "s", length penalty -1).
// With -short, every 7th configuration.
func TestBeamStopStringsMatchHuggingFace(t *testing.T) {
	prompts := []string{"the ", "a", "lantern ", "she was", "bay. ", "to", "w"}
	stopSets := [][]string{{"s"}, {" "}, {"."}, {"e"}, {"the"}, {" t", "n"}, {"ing", "ed", "."}, {"o", "a", "i", "u"}, {"x"}, {"he", "the", "."}}
	penalties := []float64{-2, -1, -0.5, 0, 0.5, 1, 2}
	var cases []beamCase
	for _, p := range prompts {
		for K := 2; K <= 4; K++ {
			for _, stops := range stopSets {
				for _, lp := range penalties {
					cases = append(cases, beamCase{prompt: p, stops: stops, o: GenerateOptions{MaxNewTokens: 12, NumBeams: K, LengthPenalty: lp}})
				}
			}
		}
	}
	if len(cases) != 1470 {
		t.Fatalf("%d configurations", len(cases))
	}
	if testing.Short() {
		var some []beamCase
		for i := 0; i < len(cases); i += 3 {
			some = append(some, cases[i])
		}
		cases = some
	}
	if diffs := compareBeams(t, cases, false); len(diffs) > 0 {
		t.Errorf("%d of %d configurations differ from the reference; the first:\n%s", len(diffs), len(cases), diffs[0])
	}
}

// TestBeamProcessorsMatchHuggingFace compares beam search with the logits
// processors (and stop strings) against the reference: presence and
// frequency penalties counted over the generated tokens only, the
// repetition penalty and the no-repeat ban over the prompt too, the logit
// bias's bans and forcing.
func TestBeamProcessorsMatchHuggingFace(t *testing.T) {
	processors := []GenerateOptions{
		{PresencePenalty: 1.5},
		{FrequencyPenalty: 0.8},
		{PresencePenalty: -0.5, FrequencyPenalty: 1.2},
		{RepetitionPenalty: 1.8},
		{RepetitionPenalty: 0.7},
		{NoRepeatNGramSize: 1},
		{NoRepeatNGramSize: 2},
		{NoRepeatNGramSize: 3},
		{LogitBias: map[int]float64{2: -100, 6: 3.5, 19: -2}},
		{LogitBias: map[int]float64{0: 100, 6: 100, 18: 100}},
		{PresencePenalty: 0.6, RepetitionPenalty: 1.3, NoRepeatNGramSize: 3, LogitBias: map[int]float64{15: -100}},
	}
	var cases []beamCase
	for _, p := range []string{"the ", "see see see ", "a"} {
		for K := 2; K <= 3; K++ {
			for _, stops := range [][]string{nil, {"s"}, {" t", "."}} {
				for _, lp := range []float64{-1, 1} {
					for _, proc := range processors {
						o := proc
						o.MaxNewTokens, o.NumBeams, o.LengthPenalty = 14, K, lp
						cases = append(cases, beamCase{prompt: p, stops: stops, o: o})
					}
				}
			}
		}
	}
	if testing.Short() {
		var some []beamCase
		for i := 0; i < len(cases); i += 5 {
			some = append(some, cases[i])
		}
		cases = some
	}
	if diffs := compareBeams(t, cases, false); len(diffs) > 0 {
		t.Errorf("%d of %d configurations differ from the reference; the first:\n%s", len(diffs), len(cases), diffs[0])
	}
}

// When stop strings overlap ("he" and "the"), a hypothesis is cut before
// the one that starts first, as a sampled one is (see stopper.add),
// whatever the order of the list: with both orders the beams are the
// same, and none that stopped ends in the "t" of "the".
func TestBeamStopCutsBeforeTheEarliestStop(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	var first []Completion
	for _, stops := range [][]string{{"he", "the"}, {"the", "he"}} {
		res, err := m.Complete(context.Background(), vocab, "she was ", GenerateOptions{MaxNewTokens: 20, NumBeams: 4, N: 4, LengthPenalty: 1, Stop: stops})
		if err != nil {
			t.Fatal(err)
		}
		stopped := 0
		for _, c := range res {
			if c.Finish == finishStop {
				stopped++
				if strings.HasSuffix(c.Text, "t") {
					t.Errorf("stops %q: %q stopped after a \"t\": the cut is before \"the\"", stops, c.Text)
				}
			}
		}
		if stopped == 0 {
			t.Fatalf("stops %q: no beam stopped: the test shows nothing", stops)
		}
		if first == nil {
			first = res
			continue
		}
		for i := range res {
			if res[i].Text != first[i].Text || res[i].Score != first[i].Score {
				t.Errorf("rank %d: %q (%v) with stops %q, %q (%v) the other way round", i, res[i].Text, res[i].Score, stops, first[i].Text, first[i].Score)
			}
		}
	}
}

// TestBeamTiesMatchHuggingFace compares beam search with the reference on
// a model whose every distribution is uniform, so that every choice is a
// tie: candidates go lower (beam, token) first, and a finished hypothesis
// that ties with earlier ones comes after them (with length penalty 1
// every hypothesis ties with every other).
func TestBeamTiesMatchHuggingFace(t *testing.T) {
	var cases []beamCase
	for _, p := range []string{"the ", "a"} {
		for K := 2; K <= 4; K++ {
			for _, stops := range [][]string{{" "}, {".", " "}, {"a", "b"}, {"c"}, {"he", "the"}, {" ", ".", "a", "b"}} {
				for _, lp := range []float64{-1, 0, 0.5, 1, 2} {
					cases = append(cases, beamCase{prompt: p, stops: stops, o: GenerateOptions{MaxNewTokens: 8, NumBeams: K, LengthPenalty: lp}})
				}
			}
		}
	}
	// Many beams, up to maxBeams: dozens of tied hypotheses at once.
	for _, K := range []int{16, maxBeams} {
		for _, lp := range []float64{0, 1} {
			cases = append(cases, beamCase{prompt: "a", stops: []string{" ", "e", "."}, o: GenerateOptions{MaxNewTokens: 4, NumBeams: K, LengthPenalty: lp}})
		}
	}
	if diffs := compareBeams(t, cases, true); len(diffs) > 0 {
		t.Errorf("%d of %d configurations differ from the reference; the first:\n%s", len(diffs), len(cases), diffs[0])
	}
}
