package minigpt

import (
	"errors"
	"math"
	"slices"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// filtered runs the pipeline on hand-made logits with the given
// generated-token counts and sequence, and returns the filtered row.
func filtered(t *testing.T, logits []float64, seq []int, counts []int32, o GenerateOptions) []float64 {
	t.Helper()
	V := len(logits)
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	for _, id := range seq {
		st.seen[id] = true
	}
	copy(st.counts, counts)
	s := newSampler(V)
	row, err := s.filter(logits, nil, seq, &st, &o, false)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(row)
}

func kept(row []float64) []int {
	var ids []int
	for id, v := range row {
		if !math.IsInf(v, -1) {
			ids = append(ids, id)
		}
	}
	return ids
}

func logs(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = math.Log(p)
	}
	return out
}

func TestMinP(t *testing.T) {
	probs := logs(0.5, 0.25, 0.2, 0.05)
	// Alone: keep p >= 0.45·0.5 = 0.225.
	if got := kept(filtered(t, probs, nil, nil, GenerateOptions{MinP: 0.45})); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("min-p 0.45 kept %v, want [0 1]", got)
	}
	// After top-p: p = 0.77 needs three tokens of the full distribution
	// (0.5, 0.75, 0.95), and min-p 0.3 keeps all three. Min-p first would
	// drop 0.05, renormalise, and top-p would then stop at two (0.789).
	if got := kept(filtered(t, probs, nil, nil, GenerateOptions{TopP: 0.77, MinP: 0.3})); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("top-p 0.77 then min-p 0.3 kept %v, want [0 1 2]", got)
	}
	// After temperature: at T = 2 the ratios are square roots, so 0.05
	// (ratio 0.1, sqrt 0.316) survives min-p 0.3.
	if got := kept(filtered(t, probs, nil, nil, GenerateOptions{Temperature: 2, MinP: 0.3})); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("temperature 2 then min-p 0.3 kept %v, want all", got)
	}
}

func TestPresenceFrequencyPenalties(t *testing.T) {
	logits := []float64{1, 1, 1, 1}
	counts := []int32{0, 2, 1, 0}
	seq := []int{3, 3, 1, 1, 2} // id 3 only in the "prompt": it has no count
	// OpenAI: logit -= presence·[count>0] + frequency·count, on the raw
	// logits (before temperature, so /2 applies to the penalised value).
	got := filtered(t, logits, seq, counts, GenerateOptions{PresencePenalty: 0.5, FrequencyPenalty: 0.25, Temperature: 2})
	want := []float64{0.5, 0, 0.125, 0.5}
	if !slices.Equal(got, want) {
		t.Errorf("penalised row %v, want %v", got, want)
	}
	// Negative values encourage.
	got = filtered(t, logits, seq, counts, GenerateOptions{FrequencyPenalty: -1})
	if want := []float64{1, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("frequency -1: row %v, want %v", got, want)
	}
}

func TestLogitBias(t *testing.T) {
	logits := []float64{1, 2, 3, 0}
	for _, tc := range []struct {
		name string
		bias map[int]float64
		want []int
	}{
		{"-100 bans", map[int]float64{2: -100}, []int{0, 1, 3}},
		{"+100 forces", map[int]float64{0: 100}, []int{0}},
		{"two forced", map[int]float64{0: 100, 3: 100, 2: -5}, []int{0, 3}},
	} {
		if got := kept(filtered(t, logits, nil, nil, GenerateOptions{LogitBias: tc.bias})); !slices.Equal(got, tc.want) {
			t.Errorf("%s: kept %v, want %v", tc.name, got, tc.want)
		}
	}
	// Added to the raw logits, before temperature: (1 + 2)/2.
	got := filtered(t, logits, nil, nil, GenerateOptions{LogitBias: map[int]float64{0: 2}, Temperature: 2})
	if want := []float64{1.5, 1, 1.5, 0}; !slices.Equal(got, want) {
		t.Errorf("bias then temperature: row %v, want %v", got, want)
	}
	// Before top-k: a bias that lifts id 3 to the top makes top-k 1 keep it.
	if got := kept(filtered(t, logits, nil, nil, GenerateOptions{LogitBias: map[int]float64{3: 5}, TopK: 1})); !slices.Equal(got, []int{3}) {
		t.Errorf("bias then top-k 1 kept %v, want [3]", got)
	}
}

func TestNoRepeatNGram(t *testing.T) {
	logits := []float64{3, 2, 1, 0}
	// seq 0 1 2 0 1: the 3-gram "0 1 2" exists, so after "0 1" id 2 is
	// banned; "1 2 0" makes nothing else complete a repeat.
	seq := []int{0, 1, 2, 0, 1}
	if got := kept(filtered(t, logits, seq, nil, GenerateOptions{NoRepeatNGramSize: 3})); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("3-gram: kept %v, want [0 1 3]", got)
	}
	// Size 2 after "1": "1 2" exists.
	if got := kept(filtered(t, logits, seq, nil, GenerateOptions{NoRepeatNGramSize: 2})); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("2-gram: kept %v, want [0 1 3]", got)
	}
	// Size 1 bans every token already present.
	if got := kept(filtered(t, logits, seq, nil, GenerateOptions{NoRepeatNGramSize: 1})); !slices.Equal(got, []int{3}) {
		t.Errorf("1-gram: kept %v, want [3]", got)
	}
	// Before top-k: the ban on the leader leaves top-k 1 the runner-up.
	seq = []int{2, 0, 2}
	if got := kept(filtered(t, logits, seq, nil, GenerateOptions{NoRepeatNGramSize: 2, TopK: 1})); !slices.Equal(got, []int{1}) {
		t.Errorf("2-gram then top-k 1 kept %v, want [1]", got)
	}
	// Longer than the sequence: nothing to repeat.
	if got := kept(filtered(t, logits, []int{0, 1}, nil, GenerateOptions{NoRepeatNGramSize: 3})); len(got) != 4 {
		t.Errorf("3-gram on 2 tokens kept %v, want all", got)
	}
}

func TestEverythingBannedIsAnError(t *testing.T) {
	V := 3
	s := newSampler(V)
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	o := GenerateOptions{LogitBias: map[int]float64{0: -100, 1: -100, 2: -100}}
	if _, err := s.filter([]float64{1, 2, 3}, nil, nil, &st, &o, false); !errors.Is(err, ErrBadOption) {
		t.Fatalf("err = %v, want ErrBadOption", err)
	}
}

// The draws follow the filtered distribution: min-p, bias and penalties
// on hand-made logits, against the target computed by hand.
func TestSamplingFrequenciesThroughFilters(t *testing.T) {
	// Raw 0.4, 0.3, 0.15, 0.1, 0.05. Bias bans id 1; the frequency
	// penalty ln 2 (count 1) halves id 0's weight: weights 0.2, 0, 0.15,
	// 0.1, 0.05; min-p 0.3 drops p < 0.3·0.2/0.5 relative, i.e. the 0.05.
	// Survivors 0.2, 0.15, 0.1 → 4/9, 3/9, 2/9.
	logits := logs(0.4, 0.3, 0.15, 0.1, 0.05)
	target := []float64{4.0 / 9, 0, 3.0 / 9, 2.0 / 9, 0}
	o := GenerateOptions{LogitBias: map[int]float64{1: -100}, FrequencyPenalty: math.Ln2, MinP: 0.3}
	V := len(logits)
	s := newSampler(V)
	st := seqState{seen: make([]bool, V), counts: []int32{1, 0, 0, 0, 0}}
	rng := seeded(2027)
	const n = 60000
	counts := make([]int, V)
	for range n {
		id, err := s.choose(logits, nil, &st, &place{}, 0, &o, rng, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
	}
	for i, p := range target {
		sigma := math.Sqrt(n * p * (1 - p))
		if dev := math.Abs(float64(counts[i]) - n*p); dev > 5*sigma+1e-9 {
			t.Errorf("token %d drawn %d times, want %.0f ± %.0f (5σ)", i, counts[i], n*p, 5*sigma)
		}
	}
}

// The trace: after every stage the probabilities over the whole
// vocabulary sum to 1, a removed token has probability 0 from its
// stage on, and the chosen token's final probability is exp(Logprob).
func TestTraceProbabilitiesSumToOne(t *testing.T) {
	logits := []float64{2.5, 0.3, -1, 1.7, 0.9, 1.7, -0.2, 3}
	V := len(logits)
	o := GenerateOptions{LogitBias: map[int]float64{7: -100, 1: 0.5}, PresencePenalty: 0.4, FrequencyPenalty: 0.2,
		Temperature: 1.3, RepetitionPenalty: 1.5, NoRepeatNGramSize: 2, TopK: 5, TopP: 0.9, MinP: 0.1, TraceTopN: V}
	seq := []int{4, 0, 3, 0}
	st := seqState{seen: make([]bool, V), counts: []int32{1, 0, 0, 1, 0, 0, 0, 0}}
	for _, id := range seq {
		st.seen[id] = true
	}
	s := newSampler(V)
	var tr Step
	rng := seeded(3)
	vocab, err := vocabFromChars([]rune("abcdefgh"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConstraint(vocab, "regex", "[a-fh]+") // no 'g', token 6
	if err != nil {
		t.Fatal(err)
	}
	var pl place
	pl.start(c)
	for range 50 {
		id, err := s.choose(logits, seq, &st, &pl, 10, &o, rng, &tr)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Chosen.ID != id || len(tr.Top) != V {
			t.Fatalf("trace id %d (chose %d), %d candidates", tr.Chosen.ID, id, len(tr.Top))
		}
		for stage := StageRaw; stage < numStages; stage++ {
			if !tr.Active[stage] {
				t.Errorf("stage %v did not run", stage)
			}
			sum := 0.0
			for _, c := range tr.Top {
				sum += c.Probs[stage]
				if c.CutBy != StageRaw && stage >= c.CutBy && c.Probs[stage] != 0 {
					t.Errorf("token %d cut by %v has probability %v after %v", c.ID, c.CutBy, c.Probs[stage], stage)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("after %v the probabilities sum to %v", stage, sum)
			}
		}
		if p := tr.Chosen.Probs[numStages-1]; math.Abs(math.Exp(tr.Logprob)-p) > 1e-12 {
			t.Errorf("exp(logprob) %v, final probability %v", math.Exp(tr.Logprob), p)
		}
		raw := make([]float64, V)
		kernels.Softmax(raw, logits)
		if math.Abs(math.Exp(tr.Chosen.Logprob)-raw[id]) > 1e-12 {
			t.Errorf("exp(raw logprob) %v, raw probability %v", math.Exp(tr.Chosen.Logprob), raw[id])
		}
		if tr.Chosen.CutBy != StageRaw {
			t.Errorf("the chosen token %d was cut by %v", id, tr.Chosen.CutBy)
		}
	}
	// Who cut what: 6 by the constraint, 7 by the bias; after "0" the
	// 2-gram "0 3" bans 3.
	cut := map[int]Stage{}
	for _, c := range tr.Top {
		cut[c.ID] = c.CutBy
	}
	if cut[6] != stageGrammar || cut[7] != stageLogitBias || cut[3] != stageNoRepeatNGram {
		t.Errorf("cut stages %v: want 6 by grammar, 7 by logit-bias, 3 by no-repeat-ngram", cut)
	}
	// Top is by raw probability, ties to the lower id (3 and 5 tie).
	var order []int
	for _, c := range tr.Top {
		order = append(order, c.ID)
	}
	if want := []int{7, 0, 3, 5, 4, 1, 6, 2}; !slices.Equal(order, want) {
		t.Errorf("candidate order %v, want %v", order, want)
	}
}

func TestTraceAllocatesNothing(t *testing.T) {
	logits := []float64{2.5, 0.3, -1, 1.7, 0.9}
	V := len(logits)
	o := GenerateOptions{TopK: 3, MinP: 0.05, TraceTopN: 3}
	st := seqState{seen: make([]bool, V), counts: make([]int32, V)}
	s := newSampler(V)
	var tr Step
	rng := seeded(1)
	s.choose(logits, nil, &st, &place{}, 0, &o, rng, &tr) // the first traced step allocates the buffers
	if n := testing.AllocsPerRun(100, func() { s.choose(logits, nil, &st, &place{}, 0, &o, rng, &tr) }); n != 0 {
		t.Errorf("a traced step allocates %v times", n)
	}
}
