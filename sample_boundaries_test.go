// sample_boundaries_test.go tests the sampling pipeline's knobs at their boundaries: the values that mean "off", the exact cuts of min-p, top-p, top-k and the logit bias, extreme temperatures and penalties, and no-repeat n-grams against their definition.

package minigpt

import (
	"errors"
	"math"
	"slices"
	"testing"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

// filterOnce runs the pipeline on logits after the sequence seq (every
// token of seq seen, none generated) with tracing on, and returns the
// filtered row (a copy), which stages ran, and the pipeline's error.
func filterOnce(logits []float64, seq []int, o GenerateOptions) ([]float64, [numStages]bool, error) {
	V := len(logits)
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	for _, id := range seq {
		st.seen[id] = true
	}
	s := newSampler(V)
	row, err := s.filter(logits, nil, seq, &st, &o, true)
	return slices.Clone(row), s.active, err
}

// Every knob at a value that means "off" leaves the logits bit for bit
// as they are and is reported as not run: 0 for every knob, and also
// temperature 1, repetition penalty 1, top-k at or above the vocabulary
// size and top-p 1. The logits include a token of probability ~1e-22,
// which a top-p of 1 applied as a filter would cut (its mass is lost in
// the rounding of the cumulative sum), and the sequence makes every
// token seen, so that a repetition penalty of 0 applied would divide by
// zero.
func TestOffValuesChangeNothing(t *testing.T) {
	logits := []float64{2, -1, 0.5, -50, 0}
	V := len(logits)
	seq := []int{0, 1, 2, 3, 4, 0, 1}
	for _, tc := range []struct {
		name  string
		o     GenerateOptions
		stage Stage
	}{
		{"temperature 0", GenerateOptions{Temperature: 0}, stageTemperature},
		{"temperature 1", GenerateOptions{Temperature: 1}, stageTemperature},
		{"repetition penalty 0", GenerateOptions{RepetitionPenalty: 0}, stageRepetitionPenalty},
		{"repetition penalty 1", GenerateOptions{RepetitionPenalty: 1}, stageRepetitionPenalty},
		{"presence and frequency 0", GenerateOptions{}, stagePenalties},
		{"no logit bias", GenerateOptions{LogitBias: map[int]float64{}}, stageLogitBias},
		{"no-repeat n-gram 0", GenerateOptions{NoRepeatNGramSize: 0}, stageNoRepeatNGram},
		{"top-k 0", GenerateOptions{TopK: 0}, stageTopK},
		{"top-k V", GenerateOptions{TopK: V}, stageTopK},
		{"top-k V+1", GenerateOptions{TopK: V + 1}, stageTopK},
		{"top-p 0", GenerateOptions{TopP: 0}, stageTopP},
		{"top-p 1", GenerateOptions{TopP: 1}, stageTopP},
		{"min-p 0", GenerateOptions{MinP: 0}, stageMinP},
	} {
		row, active, err := filterOnce(logits, seq, tc.o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !testutil.BitsEqual(row, logits) {
			t.Errorf("%s: row %v, want the logits %v unchanged", tc.name, row, logits)
		}
		if active[tc.stage] {
			t.Errorf("%s: the %v stage ran", tc.name, tc.stage)
		}
	}
}

// Min-p at 1 keeps exactly the tokens as probable as the most probable
// one (all of them on a tie) and never bans them all: the cut is
// "remove p < min_p·max", so the maximum itself always stays.
func TestMinPAtOne(t *testing.T) {
	for _, tc := range []struct {
		logits []float64
		want   []int
	}{
		{[]float64{0.3, 2, 1, -1}, []int{1}},
		{[]float64{3, 1, 3, 2}, []int{0, 2}},
		{[]float64{1, 1, 1}, []int{0, 1, 2}},
		{[]float64{-40, 7}, []int{1}},
	} {
		row, _, err := filterOnce(tc.logits, nil, GenerateOptions{MinP: 1})
		if err != nil {
			t.Errorf("min-p 1 on %v: %v", tc.logits, err)
			continue
		}
		if got := kept(row); !slices.Equal(got, tc.want) {
			t.Errorf("min-p 1 on %v kept %v, want %v", tc.logits, got, tc.want)
		}
	}
	// After top-p and temperature too, and through a whole sampled step:
	// the draw is always the most probable token.
	logits := []float64{0.3, 2, 1, -1}
	s := newSampler(4)
	st := seqState{seen: make([]bool, 4), counts: make([]int32, 4)}
	o := GenerateOptions{MinP: 1, TopP: 0.9, Temperature: 3}
	rng := seeded(5)
	for range 200 {
		id, err := s.choose(logits, nil, &st, &place{}, 0, &o, rng, nil)
		if err != nil || id != 1 {
			t.Fatalf("min-p 1 drew %d (%v), want 1", id, err)
		}
	}
}

// A token whose probability is exactly min_p times the largest stays;
// one ulp more of min_p removes it. The logits are searched for (ids 1
// and 3 tie) so that some min_p, rounded with the maximum as the filter
// rounds the product, gives exactly their probability.
func TestMinPAtExactThreshold(t *testing.T) {
	var logits []float64
	var minP, top, p float64
	for k := 0; k < 64 && logits == nil; k++ {
		l := []float64{1.5, 0.25 + float64(k)/64, -0.75, 0.25 + float64(k)/64}
		probs := make([]float64, len(l))
		kernels.Softmax(probs, l)
		top, p = probs[0], probs[1]
		for m := math.Nextafter(p/top, 0); m <= math.Nextafter(p/top, 1); m = math.Nextafter(m, 1) {
			if float64(m*top) == p {
				logits, minP = l, m
				break
			}
		}
	}
	if logits == nil {
		t.Fatal("no logits of the search have an exact min-p threshold")
	}
	row, _, err := filterOnce(logits, nil, GenerateOptions{MinP: minP})
	if err != nil {
		t.Fatal(err)
	}
	if got := kept(row); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("min-p %v (threshold exactly p = %v) kept %v, want [0 1 3]", minP, p, got)
	}
	above := minP
	for float64(above*top) <= p {
		above = math.Nextafter(above, 1)
	}
	row, _, err = filterOnce(logits, nil, GenerateOptions{MinP: above})
	if err != nil {
		t.Fatal(err)
	}
	if got := kept(row); !slices.Equal(got, []int{0}) {
		t.Errorf("min-p %v (threshold just above %v) kept %v, want [0]", above, p, got)
	}
}

// Top-p at its edges: p at or below the first token's probability keeps
// it alone, p one ulp above it needs the second; ties in probability are
// taken lower id first; p just below 1 keeps the tail a cumulative sum
// of 1 would otherwise already have covered.
func TestTopPEdges(t *testing.T) {
	logits := []float64{0.3, 2, 1, -1}
	probs := make([]float64, 4)
	kernels.Softmax(probs, logits)
	uniform := []float64{1, 1, 1, 1}
	for _, tc := range []struct {
		name   string
		logits []float64
		p      float64
		want   []int
	}{
		{"p = the first probability", logits, probs[1], []int{1}},
		{"p just above the first probability", logits, math.Nextafter(probs[1], 1), []int{1, 2}},
		{"smallest p", logits, 5e-324, []int{1}},
		{"ties at the cut, lower ids first", uniform, 0.5, []int{0, 1}},
		{"ties, just above half", uniform, math.Nextafter(0.5, 1), []int{0, 1, 2}},
		{"largest p below 1", logits, math.Nextafter(1, 0), []int{0, 1, 2, 3}},
	} {
		row, active, err := filterOnce(tc.logits, nil, GenerateOptions{TopP: tc.p})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := kept(row); !slices.Equal(got, tc.want) || !active[stageTopP] {
			t.Errorf("%s: top-p %v kept %v (ran: %v), want %v", tc.name, tc.p, got, active[stageTopP], tc.want)
		}
	}
}

// Top-k at 1, V-1, V and V+1: exactly min(k, V) tokens, the highest
// (lower ids on ties), and no stage at all from V on.
func TestTopKEdges(t *testing.T) {
	logits := []float64{1, 3, 3, 2, -1}
	V := len(logits)
	for _, tc := range []struct {
		k    int
		want []int
		ran  bool
	}{
		{1, []int{1}, true},
		{V - 1, []int{0, 1, 2, 3}, true},
		{V, []int{0, 1, 2, 3, 4}, false},
		{V + 1, []int{0, 1, 2, 3, 4}, false},
	} {
		row, active, err := filterOnce(logits, nil, GenerateOptions{TopK: tc.k})
		if err != nil {
			t.Errorf("top-k %d: %v", tc.k, err)
			continue
		}
		if got := kept(row); !slices.Equal(got, tc.want) || active[stageTopK] != tc.ran {
			t.Errorf("top-k %d kept %v (ran %v), want %v (ran %v)", tc.k, got, active[stageTopK], tc.want, tc.ran)
		}
	}
}

// Temperature at its extremes: a tiny one makes the draw the argmax
// every time; one so small that a logit leaves the float range is an
// ErrNonFinite error, not a NaN draw (positive and negative logits
// both); a huge one flattens the distribution to uniform.
func TestTemperatureExtremes(t *testing.T) {
	logits := []float64{0.5, 2, 1.999, -3}
	V := len(logits)
	s := newSampler(V)
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	rng := seeded(9)
	cold := GenerateOptions{Temperature: 1e-4}
	for range 500 {
		if id, err := s.choose(logits, nil, &st, &place{}, 0, &cold, rng, nil); err != nil || id != 1 {
			t.Fatalf("temperature 1e-4 drew %d (%v), want the argmax 1", id, err)
		}
	}
	for _, tc := range []struct {
		logits []float64
		temp   float64
	}{
		{[]float64{2, 1}, 1e-308},       // 2e308 overflows
		{[]float64{1, -1}, 5e-324},      // +Inf and -Inf
		{[]float64{0, 1e300}, 1e-10},    // a huge logit overflows
		{[]float64{-2, -1}, 1e-308},     // -Inf and -1e308: no overflow upwards
		{[]float64{0, -1e300}, 1e-10},   // -Inf beside 0
		{[]float64{1e-300, 0}, 1e-300},  // 1 and 0
		{[]float64{3, 0, -3}, 1e300},    // near-uniform
		{[]float64{1e300, -1e300}, 0.5}, // ±2e300, finite
	} {
		_, _, err := filterOnce(tc.logits, nil, GenerateOptions{Temperature: tc.temp})
		overflow := false
		for _, v := range tc.logits {
			if q := v / tc.temp; math.IsInf(q, 1) {
				overflow = true
			}
		}
		if overflow != errors.Is(err, ErrNonFinite) || !overflow && err != nil {
			t.Errorf("logits %v at temperature %v: err %v, want ErrNonFinite: %v", tc.logits, tc.temp, err, overflow)
		}
	}
	row, _, err := filterOnce(logits, nil, GenerateOptions{Temperature: 1e300})
	if err != nil {
		t.Fatal(err)
	}
	probs := make([]float64, V)
	kernels.Softmax(probs, row)
	for id, p := range probs {
		if math.Abs(p-1.0/float64(V)) > 1e-15 {
			t.Errorf("temperature 1e300: token %d has probability %v, want 1/%d", id, p, V)
		}
	}
}

// The repetition penalty below 1 favours seen tokens by the same rule
// (positive logits divided, negative ones multiplied); a zero logit stays
// zero; unseen tokens are untouched; and a token seen only in the prompt
// counts as seen (unlike the presence and frequency penalties).
func TestRepetitionPenaltyBelowOne(t *testing.T) {
	logits := []float64{2, -1, 0, 0.5, -3}
	seq := []int{0, 1, 2} // the prompt: nothing generated
	row, active, err := filterOnce(logits, seq, GenerateOptions{RepetitionPenalty: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{4, -0.5, 0, 0.5, -3}; !testutil.BitsEqual(row, want) || !active[stageRepetitionPenalty] {
		t.Errorf("penalty 0.5: row %v (ran %v), want %v", row, active[stageRepetitionPenalty], want)
	}
	row, _, err = filterOnce(logits, seq, GenerateOptions{RepetitionPenalty: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.5, -4, 0, 0.5, -3}; !testutil.BitsEqual(row, want) {
		t.Errorf("penalty 4: row %v, want %v", row, want)
	}
}

// The logit bias's cut is exactly ±100: one ulp inside it is an ordinary
// bias (no ban, no forcing), and forcing bans every token below +100,
// even one at +99.5.
func TestLogitBiasAtTheCut(t *testing.T) {
	logits := []float64{1, 2, 3, 0}
	for _, tc := range []struct {
		name string
		bias map[int]float64
		want []float64
	}{
		{"-100 bans", map[int]float64{1: -100}, []float64{1, math.Inf(-1), 3, 0}},
		{"just above -100 adds", map[int]float64{1: math.Nextafter(-100, 0)}, []float64{1, 2 + math.Nextafter(-100, 0), 3, 0}},
		{"just below +100 adds", map[int]float64{3: math.Nextafter(100, 0)}, []float64{1, 2, 3, math.Nextafter(100, 0)}},
		{"+100 forces, +99.5 does not", map[int]float64{3: 100, 0: 99.5}, []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1), 0}},
		{"+100 and -100 on others", map[int]float64{0: 100, 2: 100, 1: -100, 3: -5}, []float64{1, math.Inf(-1), 3, math.Inf(-1)}},
	} {
		row, _, err := filterOnce(logits, nil, GenerateOptions{LogitBias: tc.bias})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !testutil.BitsEqual(row, tc.want) {
			t.Errorf("%s: row %v, want %v", tc.name, row, tc.want)
		}
	}
	// A forced token that the no-repeat rule bans leaves nothing.
	_, _, err := filterOnce(logits, []int{3}, GenerateOptions{LogitBias: map[int]float64{3: 100}, NoRepeatNGramSize: 1})
	if !errors.Is(err, ErrBadOption) {
		t.Errorf("the only forced token banned: err %v, want ErrBadOption", err)
	}
}

// noRepeatBans is the no-repeat rule by its definition: token t is
// banned after seq if seq+t ends in an n-gram that already occurs in seq.
func noRepeatBans(seq []int, n, V int) []int {
	var banned []int
	for tok := range V {
		full := append(slices.Clone(seq), tok)
		if len(full) < n {
			continue
		}
		last := full[len(full)-n:]
		for i := 0; i+n <= len(seq); i++ {
			if slices.Equal(seq[i:i+n], last) {
				banned = append(banned, tok)
				break
			}
		}
	}
	return banned
}

// The no-repeat n-gram ban against its definition, for every sequence of
// up to 7 tokens over 3 ids and every n from 1 to 8 (longer than any
// sequence), and by name on runs of one character: after "e" a 1-gram
// ban forbids "e", after "ee" a 2-gram ban does.
func TestNoRepeatNGramAgainstDefinition(t *testing.T) {
	const V = 3
	logits := []float64{0.5, 1, -1}
	banned := func(seq []int, n int) []int {
		row := slices.Clone(logits)
		applyNoRepeatNGram(row, seq, n)
		var ids []int
		for id, v := range row {
			if math.IsInf(v, -1) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, tc := range []struct {
		seq  []int
		n    int
		want []int
	}{
		{[]int{1}, 1, []int{1}},
		{[]int{1, 1}, 2, []int{1}},
		{[]int{1, 1, 1}, 3, []int{1}},
		{[]int{0, 1, 1}, 2, []int{1}},
		{[]int{1, 1}, 3, nil},
		{[]int{2, 0, 1}, 4, nil},
	} {
		if got := banned(tc.seq, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("after %v, n = %d: banned %v, want %v", tc.seq, tc.n, got, tc.want)
		}
	}
	checked := 0
	for L := 0; L <= 7; L++ {
		for code := range int(math.Pow(V, float64(L))) {
			seq := make([]int, L)
			for i, c := 0, code; i < L; i, c = i+1, c/V {
				seq[i] = c % V
			}
			for n := 1; n <= 8; n++ {
				if got, want := banned(seq, n), noRepeatBans(seq, n, V); !slices.Equal(got, want) {
					t.Fatalf("after %v, n = %d: banned %v, the definition bans %v", seq, n, got, want)
				}
				checked++
			}
		}
	}
	if checked != 8*(1+3+9+27+81+243+729+2187) {
		t.Fatalf("checked %d cases", checked)
	}
}

// The presence and frequency penalties with counts 0, 1 and many: the
// presence penalty once for any count, the frequency penalty once per
// occurrence, nothing for a count of 0 even when the token is in the
// sequence.
func TestPenaltiesByCount(t *testing.T) {
	logits := []float64{1, 1, 1, 1}
	seq := []int{0, 1, 2, 3}
	for _, tc := range []struct {
		counts []int32
		want   []float64
	}{
		// logit - (presence·[count > 0] + frequency·count), presence 0.5,
		// frequency -0.25: 1, 1 - 0.25, 1 - 0, 1 + 249.5.
		{[]int32{0, 1, 2, 1000}, []float64{1, 0.75, 1, 250.5}},
		{[]int32{1000, 0, 1, 0}, []float64{250.5, 1, 0.75, 1}},
	} {
		row := filtered(t, logits, seq, tc.counts, GenerateOptions{PresencePenalty: 0.5, FrequencyPenalty: -0.25})
		if !testutil.BitsEqual(row, tc.want) {
			t.Errorf("counts %v: row %v, want %v", tc.counts, row, tc.want)
		}
	}
}
