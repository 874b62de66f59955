package minigpt

// Tests of the sampling pipeline's filters one by one: top-k, top-p, min-p,
// temperature and the penalties, their order, and the draw.

import (
	"context"
	"math"
	"slices"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// survivors returns the ids whose filtered logit is finite.
func survivors(logits []float64, seen []bool, o GenerateOptions) []int {
	s := newSampler(len(logits))
	st := seqState{seen: seen, counts: make([]int32, len(logits))}
	if seen == nil {
		st.seen = make([]bool, len(logits))
	}
	row, err := s.filter(logits, nil, nil, &st, &o, false)
	if err != nil {
		panic(err)
	}
	var ids []int
	for id, v := range row {
		if !math.IsInf(v, -1) {
			ids = append(ids, id)
		}
	}
	return ids
}

func TestTopKKeepsExactlyKWithTieRule(t *testing.T) {
	logits := []float64{1, 3, 3, 2, 3, -1}
	for _, tc := range []struct {
		k    int
		want []int
	}{
		{1, []int{1}},
		{2, []int{1, 2}},       // three logits tie at 3: the lower ids win
		{3, []int{1, 2, 4}},    // all the 3s
		{4, []int{1, 2, 3, 4}}, // then the 2
		{6, []int{0, 1, 2, 3, 4, 5}},
		{60, []int{0, 1, 2, 3, 4, 5}},
	} {
		got := survivors(logits, nil, GenerateOptions{Temperature: 1, TopK: tc.k})
		if !slices.Equal(got, tc.want) {
			t.Errorf("top-k %d kept %v, want %v", tc.k, got, tc.want)
		}
	}
}

func TestTopPBoundaries(t *testing.T) {
	logits := []float64{0.3, 2, 1, -1}
	probs := make([]float64, 4)
	kernels.Softmax(probs, logits)
	// Descending probability: ids 1, 2, 0, 3.
	exact := probs[1] + probs[2] // the mass of the first two, summed as the filter sums it
	for _, tc := range []struct {
		name string
		p    float64
		want []int
	}{
		{"mass exactly p keeps the crossing token only", exact, []int{1, 2}},
		{"just above needs one more", math.Nextafter(exact, 2), []int{0, 1, 2}},
		{"tiny p keeps one", 1e-9, []int{1}},
		{"p = 1 keeps all", 1, []int{0, 1, 2, 3}},
	} {
		got := survivors(logits, nil, GenerateOptions{Temperature: 1, TopP: tc.p})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: top-p %v kept %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	dominant := []float64{-5, 12, -5, -5, -5}
	if got := survivors(dominant, nil, GenerateOptions{Temperature: 1, TopP: 0.9}); !slices.Equal(got, []int{1}) {
		t.Errorf("one dominant token: kept %v, want [1]", got)
	}
}

// Each case is built so that moving one stage elsewhere in the pipeline
// changes the survivors.
func TestFilterOrder(t *testing.T) {
	// Temperature before top-p: at T = 1 the nucleus of p = 0.8 holds two
	// tokens; at T = 0.5 one token carries 87% of the mass.
	if got := survivors([]float64{2, 1, 0}, nil, GenerateOptions{Temperature: 0.5, TopP: 0.8}); !slices.Equal(got, []int{0}) {
		t.Errorf("temperature then top-p kept %v, want [0]", got)
	}
	if got := survivors([]float64{2, 1, 0}, nil, GenerateOptions{Temperature: 1, TopP: 0.8}); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("top-p at temperature 1 kept %v, want [0 1]", got)
	}
	// Penalty before top-k: the penalty demotes the seen leader.
	seen := []bool{true, false, false}
	if got := survivors([]float64{3, 2.9, 1}, seen, GenerateOptions{Temperature: 1, RepetitionPenalty: 2, TopK: 1}); !slices.Equal(got, []int{1}) {
		t.Errorf("penalty then top-k kept %v, want [1]", got)
	}
	// Top-k before top-p: two uniform survivors of top-k have mass 0.5
	// each, so p = 0.5 keeps one; top-p first would have kept two.
	if got := survivors([]float64{1, 1, 1, 1}, nil, GenerateOptions{Temperature: 1, TopK: 2, TopP: 0.5}); !slices.Equal(got, []int{0}) {
		t.Errorf("top-k then top-p kept %v, want [0]", got)
	}
}

// Temperature and the repetition penalty both scale a logit, so in exact
// arithmetic their order would not matter; in floating point it does, and
// the pipeline's order (see GenerateOptions) divides by the temperature
// first, as the lessons' generate does before any filter. Every filtered
// logit is checked against that order, computed here by hand, on values
// of which some round differently in the other order (checked too, so
// that the test can see a swap).
func TestRepetitionPenaltyAfterTemperatureBits(t *testing.T) {
	const V, temp, penalty = 64, 0.7, 1.3
	rng := seeded(11)
	logits, seen := make([]float64, V), make([]bool, V)
	for i := range logits {
		logits[i], seen[i] = 3*rng.NormFloat64(), i%2 == 0
	}
	s := newSampler(V)
	o := GenerateOptions{Temperature: temp, RepetitionPenalty: penalty}
	row, err := s.filter(logits, nil, nil, &seqState{seen: seen, counts: make([]int32, V)}, &o, false)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(x float64) float64 { // the sampling lesson's first exercise
		if x > 0 {
			return x / penalty
		}
		return x * penalty
	}
	swapped := 0
	for i, x := range logits {
		want, other := x/temp, x
		if seen[i] {
			want, other = scale(want), scale(x)
		}
		other /= temp
		if math.Float64bits(row[i]) != math.Float64bits(want) {
			t.Errorf("logit %d (%v, seen %v): filtered %v, want %v (temperature, then penalty)", i, x, seen[i], row[i], want)
		}
		if math.Float64bits(other) != math.Float64bits(want) {
			swapped++
		}
	}
	if swapped == 0 {
		t.Fatal("no logit rounds differently in the other order: the test cannot see a swap; choose other values")
	}
}

func TestRepetitionPenaltyLowersSeenTokens(t *testing.T) {
	logits := []float64{2, -1, 0.5, -0.5}
	seen := []bool{true, true, false, false}
	probsOf := func(penalty float64) []float64 {
		s := newSampler(4)
		row, _ := s.filter(logits, nil, nil, &seqState{seen: seen, counts: make([]int32, 4)}, &GenerateOptions{Temperature: 1, RepetitionPenalty: penalty}, false)
		p := make([]float64, 4)
		kernels.Softmax(p, row)
		return p
	}
	off, on := probsOf(1), probsOf(1.5)
	for id := 0; id < 2; id++ { // a positive and a negative seen logit
		if !(on[id] < off[id]) {
			t.Errorf("seen token %d (logit %v): probability %v with penalty, %v without; want lower", id, logits[id], on[id], off[id])
		}
	}
	for id := 2; id < 4; id++ {
		if !(on[id] > off[id]) {
			t.Errorf("unseen token %d: probability %v with penalty, %v without; want higher", id, on[id], off[id])
		}
	}
}

func TestSamplingFrequencies(t *testing.T) {
	target := []float64{0.5, 0.3, 0.15, 0.05, 0}
	logits := make([]float64, len(target))
	for i, p := range target {
		logits[i] = math.Log(p) // log 0 = -Inf: must never be drawn
	}
	probs := make([]float64, len(logits))
	kernels.Softmax(probs, logits)
	rng := seeded(2026)
	const n = 100000
	counts := make([]int, len(target))
	for range n {
		counts[sampleIndex(probs, rng.Float64())]++
	}
	for i, p := range target {
		sigma := math.Sqrt(n * p * (1 - p))
		if dev := math.Abs(float64(counts[i]) - n*p); dev > 5*sigma+1e-9 {
			t.Errorf("token %d drawn %d times, want %.0f ± %.0f (5σ)", i, counts[i], n*p, 5*sigma)
		}
	}
	if counts[4] != 0 {
		t.Errorf("a zero-probability token was drawn %d times", counts[4])
	}
}

// Issue 10, defect 4: a zero Temperature is temperature 1, not greedy.
func TestZeroTemperatureSamples(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 21)
	prompt := []int{1, 2, 3}
	zero := GenerateOptions{MaxNewTokens: 40, TopK: 5, Seed: 5}
	res, err := m.Generate(context.Background(), prompt, zero)
	if err != nil {
		t.Fatal(err)
	}
	a := res[0].IDs
	r := seeded(5)
	if ids, err := generateWith(m, prompt, zero, r); err != nil || !slices.Equal(ids, a) {
		t.Fatalf("token loop: %v, %v; Generate gave %v", ids, err, a)
	}
	if r.Uint64() == seeded(5).Uint64() {
		t.Error("TopK with a zero Temperature drew no random number: it was greedy")
	}
	b := generated(t, m, prompt, GenerateOptions{MaxNewTokens: 40, Temperature: 1, TopK: 5, Seed: 5})
	if !slices.Equal(a, b) {
		t.Error("zero Temperature differs from Temperature 1")
	}
	g := generated(t, m, prompt, GenerateOptions{MaxNewTokens: 40, Greedy: true})
	if slices.Equal(a, g) {
		t.Error("zero Temperature gave the greedy text")
	}
}

// Issue 15, item 1: ties go to the lowest index, as NumPy's argmax.
func TestArgmaxTiesGoToLowestIndex(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want int
	}{
		{[]float64{0, 0, 0}, 0},
		{[]float64{1, 3, 3, 2}, 1},
		{[]float64{-1, -2, -1}, 0},
		{[]float64{2, 5, 1, 5, 5}, 1},
		{[]float64{math.Inf(-1), 7, 7}, 1},
	} {
		if got := argmax(tc.xs); got != tc.want {
			t.Errorf("argmax(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
	// A model whose parameters are all zero has equal logits everywhere:
	// greedy decoding must choose id 0 every time.
	m, err := NewModel(defaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	clear(m.Params())
	out := generated(t, m, []int{5, 9}, GenerateOptions{MaxNewTokens: 40, Greedy: true}) // past the block size too
	if len(out) != 40 {
		t.Fatalf("%d tokens, want 40", len(out))
	}
	for i, id := range out {
		if id != 0 {
			t.Fatalf("token %d of greedy decoding on equal logits is %d, want 0: %v", i, id, out)
		}
	}
}

// Issue 15, item 2: the draw is the first index whose cumulative
// probability is strictly above u (searchsorted side='right'). The
// probabilities are exact binary fractions, so the boundaries are exact.
func TestSampleIndexBoundaries(t *testing.T) {
	probs := []float64{0.25, 0, 0.25, 0.5}
	for _, tc := range []struct {
		u    float64
		want int
	}{
		{0, 0},
		{math.Nextafter(0.25, 0), 0},
		{0.25, 2}, // cdf[0] == u is not above it; id 1 has probability 0
		{math.Nextafter(0.25, 1), 2},
		{0.5, 3},
		{math.Nextafter(0.5, 0), 2},
		{math.Nextafter(1, 0), 3},
	} {
		if got := sampleIndex(probs, tc.u); got != tc.want {
			t.Errorf("sampleIndex(%v, %v) = %d, want %d", probs, tc.u, got, tc.want)
		}
	}
}
