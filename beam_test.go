package minigpt

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// seqLogprob is the sum of log p(token) of cont after prompt, each from a
// full recomputation of the window (math.Log of a plain softmax: an
// independent path from the decoder's cache and log-sum-exp).
func seqLogprob(m *Model, prompt, cont []int) float64 {
	seq := slices.Clone(prompt)
	V, bs := m.Config().VocabSize, m.Config().BlockSize
	sum := 0.0
	for _, id := range cont {
		start := max(0, len(seq)-bs)
		logits, _ := m.Logits(seq[start:], 1, len(seq)-start)
		row := logits[(len(seq)-start-1)*V:]
		mx := slices.Max(row)
		z := 0.0
		for _, v := range row {
			z += math.Exp(v - mx)
		}
		sum += math.Log(math.Exp(row[id]-mx) / z)
		seq = append(seq, id)
	}
	return sum
}

// With enough beams to keep every prefix, beam search is exhaustive: its
// best n must be the brute-force best n over all V^L continuations
// (here across the slide of the window, block 4, prompt 2, 4 tokens).
func TestBeamSearchMatchesBruteForce(t *testing.T) {
	m := randomizedModel(t, Config{VocabSize: 3, BlockSize: 4, EmbedDim: 8, Heads: 2, Layers: 2}, 17)
	prompt := []int{2, 0}
	const L = 4
	V := m.Config().VocabSize
	type cand struct {
		ids []int
		lp  float64
	}
	var all []cand
	for code := range int(math.Pow(float64(V), L)) {
		ids := make([]int, L)
		for i, c := 0, code; i < L; i, c = i+1, c/V {
			ids[L-1-i] = c % V
		}
		all = append(all, cand{ids, seqLogprob(m, prompt, ids)})
	}
	slices.SortStableFunc(all, func(a, b cand) int { return cmp.Compare(b.lp, a.lp) })
	K := int(math.Pow(float64(V), L-1)) // 27: every prefix survives
	const n = 6
	for _, lp := range []float64{0, 1, 2} { // equal lengths: the penalty cannot reorder
		res, err := beamSearchK(m, prompt, K, L, lp, nil, n, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != n {
			t.Fatalf("%d results, want %d", len(res), n)
		}
		for i, r := range res {
			if !slices.Equal(r.IDs, all[i].ids) {
				t.Fatalf("length penalty %v, rank %d: beam %v (score %v), brute force %v (%v)", lp, i, r.IDs, r.Score, all[i].ids, all[i].lp)
			}
			if want := all[i].lp / math.Pow(L, lp); math.Abs(r.Score-want) > 1e-9 {
				t.Errorf("rank %d: score %v, want %v", i, r.Score, want)
			}
		}
	}
}

// refBeam is beam search written plainly over full recomputations: at
// every step, the K best (sequence + token) by summed log-probability,
// ties to the lower (beam, token).
func refBeam(m *Model, prompt []int, K, L int) [][]int {
	type beam struct {
		ids []int
		lp  float64
	}
	beams := []beam{{nil, 0}}
	V := m.Config().VocabSize
	for range L {
		var next []beam
		for _, b := range beams {
			for tok := range V {
				ids := append(slices.Clone(b.ids), tok)
				next = append(next, beam{ids, seqLogprob(m, prompt, ids)})
			}
		}
		slices.SortStableFunc(next, func(a, b beam) int { return cmp.Compare(b.lp, a.lp) })
		beams = next[:min(K, len(next))]
	}
	var out [][]int
	for _, b := range beams {
		out = append(out, b.ids)
	}
	return out
}

// A few beams on the default shape, against the plain version: each
// beam's cache rows must follow its parent through every reordering.
func TestBeamSearchMatchesReference(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 23)
	prompt := []int{3, 1, 4, 1, 5}
	const K, L = 3, 8
	want := refBeam(m, prompt, K, L)
	for _, noCache := range []bool{false, true} {
		res, err := beamSearchK(m, prompt, K, L, 1, nil, K, noCache)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !slices.Equal(res[i].IDs, want[i]) {
				t.Fatalf("noCache %v, beam %d: %v, reference %v", noCache, i, res[i].IDs, want[i])
			}
		}
	}
}

func TestOneBeamIsGreedy(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 29)
	prompt := []int{7, 7, 2}
	const L = 50 // past the block size
	res, err := beamSearchK(m, prompt, 1, L, 1, nil, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	g := generated(t, m, prompt, GenerateOptions{MaxNewTokens: L, Greedy: true})
	if !slices.Equal(res[0].IDs, g) {
		t.Fatalf("1 beam %v, greedy %v", res[0].IDs, g)
	}
	// Ties too: with every parameter zero all logits are equal, and
	// greedy (NumPy's argmax) takes id 0 every time; so must one beam.
	clear(m.Params())
	res, err = beamSearchK(m, prompt, 1, L, 1, nil, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := make([]int, L); !slices.Equal(res[0].IDs, want) {
		t.Fatalf("1 beam on equal logits gave %v, want id 0 every time", res[0].IDs)
	}
}

// With stop strings, hypotheses end at different lengths: every score is
// its sequence's log-probability over len^penalty, the ranking follows
// the scores, and the penalty changes which hypothesis wins.
func TestBeamLengthPenaltyWithStops(t *testing.T) {
	m, vocab, _ := DefaultModel()
	ctx := context.Background()
	prompt := "the "
	pids, _ := vocab.Encode(prompt)
	best := map[float64]string{}
	for _, lp := range []float64{-2, 0, 2} {
		res, err := m.Complete(ctx, vocab, prompt, GenerateOptions{MaxNewTokens: 30, N: 4, NumBeams: 4, LengthPenalty: lp, Stop: []string{" the", "."}})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			full := slices.Clone(r.IDs)
			if r.Finish == finishStop {
				// Put back the stop string that ended it: the one whose
				// characters end a hypothesis of this score.
				for _, s := range []string{" the", "."} {
					sid, _ := vocab.Encode(s)
					withStop := append(slices.Clone(full), sid...)
					if want := seqLogprob(m, pids, withStop) / math.Pow(float64(len(withStop)), lp); math.Abs(want-r.Score) < 1e-9 {
						full = withStop
						break
					}
				}
			}
			if want := seqLogprob(m, pids, full) / math.Pow(float64(len(full)), lp); math.Abs(want-r.Score) > 1e-9 {
				t.Errorf("penalty %v, rank %d %q (%s): score %v, want %v", lp, i, r.Text, r.Finish, r.Score, want)
			}
			if i > 0 && r.Score > res[i-1].Score {
				t.Errorf("penalty %v: rank %d scores %v above rank %d's %v", lp, i, r.Score, i-1, res[i-1].Score)
			}
		}
		best[lp] = res[0].Text
	}
	if best[-2] == best[2] {
		t.Errorf("length penalties -2 and 2 chose the same best hypothesis %q", best[2])
	}
}

// Beam search runs the logits processors (as Hugging Face does): with a
// no-repeat 3-gram rule no beam repeats a 3-gram, with a ban no beam holds
// the banned character, and both change the result; the warpers
// (temperature, top-k) change nothing.
func TestBeamSearchRunsProcessors(t *testing.T) {
	m, vocab, _ := DefaultModel()
	ctx := context.Background()
	run := func(o GenerateOptions) []Completion {
		o.MaxNewTokens, o.NumBeams, o.N = 60, 3, 3
		res, err := m.Complete(ctx, vocab, "the ", o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := run(GenerateOptions{})
	hasRepeat := func(s string, n int) bool {
		seen := map[string]bool{}
		rs := []rune(s)
		for i := 0; i+n <= len(rs); i++ {
			if seen[string(rs[i:i+n])] {
				return true
			}
			seen[string(rs[i:i+n])] = true
		}
		return false
	}
	if !hasRepeat("the "+plain[0].Text, 3) {
		t.Fatalf("the plain best beam %q repeats no 3-gram: the test shows nothing", plain[0].Text)
	}
	for _, c := range run(GenerateOptions{NoRepeatNGramSize: 3}) {
		if hasRepeat("the "+c.Text, 3) {
			t.Errorf("no-repeat 3: beam %q repeats a 3-gram", c.Text)
		}
	}
	eID := 6 // 'e'
	if chars := vocab.chars; chars[eID] != 'e' {
		t.Fatalf("id 6 is %q", chars[eID])
	}
	for _, c := range run(GenerateOptions{LogitBias: map[int]float64{eID: -100}}) {
		if strings.ContainsRune(c.Text, 'e') {
			t.Errorf("'e' banned: beam %q", c.Text)
		}
	}
	for i, c := range run(GenerateOptions{Temperature: 3, TopK: 1, TopP: 0.1, MinP: 0.9}) {
		if c.Text != plain[i].Text || c.Score != plain[i].Score {
			t.Errorf("warpers changed beam %d: %q (%v), plain %q (%v)", i, c.Text, c.Score, plain[i].Text, plain[i].Score)
		}
	}
	// Every beam banned: an error, not an empty answer.
	all := map[int]float64{}
	for id := range vocab.Size() {
		all[id] = -100
	}
	if _, err := m.Complete(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 5, NumBeams: 2, LogitBias: all}); !errors.Is(err, ErrBadOption) {
		t.Errorf("everything banned: err %v", err)
	}
}
