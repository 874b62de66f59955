package minigpt

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/decode"
)

// Greedy Generate continues the prompt (which it leaves as it was and
// does not return) with argmaxes, whatever the other knobs say.
func TestGreedyGenerateKeepsPromptAndIgnoresKnobs(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 5)
	prompt := []int{3, 1, 4, 1, 5}
	gen := generated(t, m, prompt, GenerateOptions{MaxNewTokens: 40, Greedy: true})
	if len(gen) != 40 || !slices.Equal(prompt, []int{3, 1, 4, 1, 5}) {
		t.Fatalf("greedy result %v (want 40 new ids), prompt now %v", gen, prompt)
	}
	a := append(slices.Clone(prompt), gen...)
	// Greedy ignores every other knob and draws nothing: its Completion
	// has no seed, and the token loop leaves a generator it is handed
	// untouched.
	knobs := GenerateOptions{MaxNewTokens: 40, Greedy: true, Temperature: 3, TopK: 2, TopP: 0.1, RepetitionPenalty: 5, Seed: 3}
	res, err := m.Generate(context.Background(), prompt, knobs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gen, res[0].IDs) {
		t.Fatal("greedy with other knobs set differs from plain greedy")
	}
	r := seeded(3)
	if b, err := generateWith(m, prompt, knobs, r); err != nil || !slices.Equal(gen, b) {
		t.Fatalf("greedy token loop: %v, %v; Generate gave %v", b, err, gen)
	}
	if r.Uint64() != seeded(3).Uint64() {
		t.Fatal("greedy decoding drew a random number")
	}
	// Each token is the argmax of the full forward pass on the window.
	for n := len(prompt); n < len(a); n++ {
		start := max(0, n-m.Config().BlockSize)
		logits, _ := m.Logits(a[start:n], 1, n-start)
		V := m.Config().VocabSize
		if want := argmax(logits[(n-start-1)*V:]); a[n] != want {
			t.Fatalf("token %d is %d, argmax of the window's last logits is %d", n, a[n], want)
		}
	}
}

// The KV cache must reproduce full recomputation to the bit, including
// across the slide of the window past the block size.
func TestKVCacheMatchesFullRecompute(t *testing.T) {
	oneLayer := Config{VocabSize: 9, BlockSize: 12, EmbedDim: 16, Heads: 4, Layers: 1, TiedHead: true}
	// A block longer than a prefill chunk: prompts filled in several
	// passes.
	long := Config{VocabSize: 9, BlockSize: decode.PrefillChunk + 36, EmbedDim: 16, Heads: 2, Layers: 2}
	for _, cfg := range []Config{defaultConfig(), oneLayer, long} {
		testKVCache(t, randomizedModel(t, cfg, 8))
	}
}

// testKVCache generates greedily from prompts shorter than, as long as
// and longer than the block (and, for a long block, longer than a prefill
// chunk), and checks every step's logits, which the trace reports, against
// a full recompute of the window: through the prompt's fill, the cache's
// growth and the window's slide.
func testKVCache(t *testing.T, m *Model) {
	bs, V := m.Config().BlockSize, m.Config().VocabSize
	rng := seeded(9)
	for _, plen := range []int{1, 5, bs - 1, bs, bs + 7, min(decode.PrefillChunk+3, bs)} {
		seq := randomTokens(rng, plen, V)
		full := m.Clone()
		var steps int
		o := GenerateOptions{MaxNewTokens: 2 * bs, Greedy: true, TraceTopN: V, Trace: true, Stream: func(part *Completion) error {
			for i := range part.Steps {
				s := &part.Steps[i]
				start := max(0, len(seq)-bs)
				logits, _ := full.Logits(seq[start:], 1, len(seq)-start)
				want := logSoftmax(logits[(len(seq)-start-1)*V:])
				for _, c := range s.Top {
					if math.Float64bits(c.Logprob) != math.Float64bits(want[c.ID]) {
						t.Fatalf("prompt %d, length %d: cached logprob %d = %v, full recompute %v", plen, len(seq), c.ID, c.Logprob, want[c.ID])
					}
				}
				seq = append(seq, s.Chosen.ID)
				steps++
			}
			return nil
		}}
		if _, err := m.Generate(context.Background(), slices.Clone(seq), o); err != nil {
			t.Fatal(err)
		}
		if steps != 2*bs {
			t.Fatalf("prompt %d: %d steps traced, want %d", plen, steps, 2*bs)
		}
	}
}

func TestCachedAndUncachedGenerateAgree(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 12)
	n := 1000
	if testing.Short() {
		n = 200
	}
	for _, plen := range []int{4, 45} { // shorter and longer than the block
		prompt := randomTokens(seeded(uint64(plen)), plen, m.Config().VocabSize)
		for _, o := range []GenerateOptions{
			{MaxNewTokens: n, Greedy: true},
			{MaxNewTokens: n, Temperature: 0.9, TopK: 10, TopP: 0.95, RepetitionPenalty: 1.2},
		} {
			run := func(noCache bool) []int {
				o := o
				o.noCache = noCache
				o.Seed = 77
				return generated(t, m, prompt, o)
			}
			if a, b := run(false), run(true); !slices.Equal(a, b) {
				t.Fatalf("prompt %d greedy=%v: cached and uncached generation differ", plen, o.Greedy)
			}
		}
	}
}

func TestGenerateAllocatesNothingPerToken(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 4)
	prompt := []int{1, 2, 3}
	vocab, err := NewVocab(LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConstraint(vocab, "regex", `[a-z ]+`) // never ends: every step a token
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []GenerateOptions{
		// A constraint's states, once met, cost nothing per token.
		{Temperature: 1.5, Constraint: c, Seed: 1},
		{Greedy: true, Constraint: c},
		{Greedy: true},
		{Temperature: 0.8, TopK: 5, TopP: 0.9, RepetitionPenalty: 1.3, Seed: 1},
		{MinP: 0.05, PresencePenalty: 0.5, FrequencyPenalty: 0.5, NoRepeatNGramSize: 3, LogitBias: map[int]float64{2: -1}, Seed: 1},
		// A trace with a reused Step costs nothing per token either.
		{TopK: 5, TraceTopN: 5, Trace: true, Stream: func(*Completion) error { return nil }, Seed: 1},
	} {
		allocs := func(n int) float64 {
			o.MaxNewTokens = n
			return testing.AllocsPerRun(5, func() { m.Generate(context.Background(), prompt, o) })
		}
		allocs(10) // warm-up: the generator's buffers
		if few, many := allocs(10), allocs(100); many != few {
			t.Errorf("greedy=%v: %v allocations for 10 tokens, %v for 100: something allocates per token", o.Greedy, few, many)
		}
	}
}

// corpusWords is the set of words of the Lantern Bay corpus.
func corpusWords() map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(LanternBay, func(r rune) bool { return r == ' ' || r == '.' }) {
		words[w] = true
	}
	return words
}

// The lessons' claims about their trained model (Stages 3 and 4), on the
// embedded model (which TestEmbeddedModelIsReproducible shows is the
// default run's).
func TestTrainedModelGenerates(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	greedy := func() string {
		return completed(t, m, vocab, "the ", GenerateOptions{MaxNewTokens: 80, Greedy: true})
	}
	a, b := greedy(), greedy()
	if a != b {
		t.Fatalf("greedy twice differs:\n%q\n%q", a, b)
	}
	if !strings.Contains(LanternBay, a) {
		t.Errorf("greedy output is not a stretch of the corpus: %q", a)
	}
	sample := func(seed uint64, n int, temp float64, k int, prompt string) string {
		return completed(t, m, vocab, prompt, GenerateOptions{MaxNewTokens: n, Temperature: temp, TopK: k, Seed: seed})
	}
	// Two calls with equal arguments (and so equal seeds) must agree: the
	// text depends on the seed alone, not on what ran before.
	first := sample(7, 40, 0.8, 10, "the ")
	if again := sample(7, 40, 0.8, 10, "the "); again != first {
		t.Errorf("the same seed gave different samples:\n%q\n%q", first, again)
	}
	s1, s7, s99 := sample(1, 60, 1, 8, "the "), sample(7, 60, 1, 8, "the "), sample(99, 60, 1, 8, "the ")
	if s1 == s7 && s7 == s99 {
		t.Errorf("seeds 1, 7 and 99 all gave %q", s1)
	}
	passage := sample(42, 200, 0.8, 10, "the keeper ")
	words := corpusWords()
	split := strings.FieldsFunc(passage, func(r rune) bool { return r == ' ' || r == '.' })
	last := ""
	if !strings.HasSuffix(passage, " ") && !strings.HasSuffix(passage, ".") {
		// The 200 characters may end inside a word: it must begin one.
		split, last = split[:len(split)-1], split[len(split)-1]
	}
	for _, w := range split {
		if !words[w] {
			t.Errorf("passage has %q, which is not a corpus word: %q", w, passage)
		}
	}
	if last != "" && !slices.ContainsFunc(slices.Collect(maps.Keys(words)), func(w string) bool { return strings.HasPrefix(w, last) }) {
		t.Errorf("passage ends in %q, which begins no corpus word", last)
	}
}

// Issue 10, defect 3: generation on one Model from many goroutines gives
// every goroutine the serial result (run with -race: the per-call state
// must not be shared).
func TestConcurrentGenerateMatchesSerial(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := func(i int) GenerateOptions {
		if i%3 == 0 {
			return GenerateOptions{MaxNewTokens: 50, Greedy: true}
		}
		return GenerateOptions{MaxNewTokens: 50 + i, Temperature: 1.5, TopK: 6, Seed: uint64(i)}
	}
	prompts := []string{"the ", "the keeper rings the bell when a boat ", "a small boat drifts near the rocks at dawn. the "}
	text := func(i int) (string, error) {
		res, err := m.Complete(ctx, vocab, prompts[i%len(prompts)], opts(i))
		if err != nil {
			return "", err
		}
		return res[0].Text, nil
	}
	const goroutines, calls = 8, 6
	want := make([]string, goroutines*calls)
	for i := range want {
		want[i], err = text(i)
		if err != nil {
			t.Fatal(err)
		}
	}
	got := make([]string, len(want))
	done := make(chan bool)
	for g := range goroutines {
		go func() {
			defer func() { done <- true }()
			for c := range calls {
				i := g*calls + c
				got[i], _ = text(i)
			}
		}()
	}
	for range goroutines {
		<-done
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			bad++
			if bad <= 3 {
				t.Errorf("call %d: concurrent %q, serial %q", i, got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d concurrent results differ from the serial ones", bad, len(want))
	}
}

// Issue 15, item 3: a call never reuses the KV cache an earlier call
// left behind, even when the earlier one ended inside the block with
// exactly one position fewer than the new prompt.
func TestGenerateDoesNotReuseAnotherCallsCache(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 31)
	ctx := context.Background()
	for i := range 8 { // the scratch pool hands the same buffers back
		first := randomTokens(seeded(uint64(100+i)), 3, m.Config().VocabSize)
		if _, err := m.Generate(ctx, first, GenerateOptions{MaxNewTokens: 5, Greedy: true}); err != nil {
			t.Fatal(err)
		}
		// The first call cached 7 positions; this prompt has 8.
		second := randomTokens(seeded(uint64(200+i)), 8, m.Config().VocabSize)
		got := generated(t, m, second, GenerateOptions{MaxNewTokens: 6, Greedy: true})
		want := generated(t, m.Clone(), second, GenerateOptions{MaxNewTokens: 6, Greedy: true, noCache: true})
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: second call gave %v, a fresh recomputation %v", i, got, want)
		}
	}
}

// TestTraceLogprobs checks the trace's raw log-probabilities against a
// hand calculation (logits 0, ln 2, ln 3 and -Inf are probabilities 1/6,
// 2/6, 3/6 and 0), for the chosen token and the candidates alike.
func TestTraceLogprobs(t *testing.T) {
	logits := []float64{0, math.Ln2, math.Log(3), math.Inf(-1)}
	want := []float64{math.Log(1.0 / 6), math.Log(2.0 / 6), math.Log(3.0 / 6), math.Inf(-1)}
	s := newSampler(len(logits))
	var tr Step
	s.traceGreedy(logits, logits, false, 1, len(logits), &tr)
	close := func(what string, got, want float64) {
		if !(math.Abs(got-want) <= 1e-15) && got != want {
			t.Errorf("%s: logprob %v, want %v", what, got, want)
		}
	}
	close("chosen", tr.Chosen.Logprob, want[1])
	close("step", tr.Logprob, want[1])
	for i, c := range tr.Top {
		close(fmt.Sprintf("candidate %d (id %d)", i, c.ID), c.Logprob, want[c.ID])
	}
	if tr.Top[0].ID != 2 || tr.Top[3].ID != 3 {
		t.Errorf("candidates %+v, want ids by descending probability", tr.Top)
	}
}

// Sample i of Generate's N is bit-identical to a one-sample call with
// Seed (Seed + uint64(i)), and to Complete's sample i on the same
// prompt as text: the window short, growing and sliding (block 32 and 12).
func TestGenerateSamplesMatchSingleRuns(t *testing.T) {
	vocab, _ := NewVocab(LanternBay)
	tied := Config{VocabSize: vocab.Size(), BlockSize: 12, EmbedDim: 16, Heads: 4, Layers: 1, TiedHead: true}
	for _, m := range []*Model{randomizedModel(t, defaultConfig(), 41), randomizedModel(t, tied, 43)} {
		for _, plen := range []int{4, 11, 40} {
			prompt := randomTokens(seeded(uint64(plen)), plen, vocab.Size())
			text, _ := vocab.Decode(prompt)
			for _, o := range []GenerateOptions{
				{MaxNewTokens: 45, Temperature: 1.2, TopK: 8, TopP: 0.95, MinP: 0.02, RepetitionPenalty: 1.1, PresencePenalty: 0.3, FrequencyPenalty: 0.2, NoRepeatNGramSize: 4, LogitBias: map[int]float64{3: -2}},
				{MaxNewTokens: 45, Greedy: true},
				{MaxNewTokens: 45, Temperature: 0.9, noCache: true},
			} {
				const n, seed = 5, 1234
				batch := o
				batch.N, batch.Seed = n, seed
				res, err := m.Generate(context.Background(), prompt, batch)
				if err != nil {
					t.Fatal(err)
				}
				asText, err := m.Complete(context.Background(), vocab, text, batch)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != n || len(asText) != n {
					t.Fatalf("%d completions from Generate, %d from Complete; want %d", len(res), len(asText), n)
				}
				distinct := map[string]bool{}
				for i, c := range res {
					one := o
					one.Seed = (seed + uint64(i))
					want := generated(t, m, prompt, one)
					if !slices.Equal(c.IDs, want) {
						t.Fatalf("prompt %d, greedy %v, sample %d of %d:\nbatch  %v\nsingle %v", plen, o.Greedy, i, n, c.IDs, want)
					}
					if !slices.Equal(c.IDs, asText[i].IDs) {
						t.Fatalf("prompt %d, sample %d: Generate %v, Complete %v", plen, i, c.IDs, asText[i].IDs)
					}
					if c.Index != i || c.Text != "" || c.Finish != finishLength {
						t.Errorf("sample %d: index %d, text %q, finish %q; want %d, \"\", length", i, c.Index, c.Text, c.Finish, i)
					}
					distinct[fmt.Sprint(c.IDs)] = true
				}
				if !o.Greedy && len(distinct) < 2 {
					t.Errorf("prompt %d: %d samples are all the same", plen, n)
				}
			}
		}
	}
}

// At token level Stream delivers each sample's ids in chunks with no
// text: together they are the sample's Completion, the last one carries
// the finish reason, with Trace each id has its step, and Complete
// streams the same ids. Beam search streams each beam whole at the end,
// best first.
func TestGenerateStreamsTokenChunks(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := vocab.Encode("the ")
	type chunk struct {
		sample int
		ids    []int
		steps  []Step
		finish string
	}
	collect := func(t *testing.T, o GenerateOptions, text bool) ([]chunk, []Completion) {
		t.Helper()
		var chunks []chunk
		o.Stream = func(c *Completion) error {
			if text {
				if want, _ := vocab.Decode(c.IDs); c.Text != want {
					t.Errorf("Complete chunk text %q, its ids %q", c.Text, want)
				}
			} else if c.Text != "" {
				t.Errorf("token-level chunk of sample %d has text %q", c.Index, c.Text)
			}
			var steps []Step
			for _, s := range c.Steps {
				steps = append(steps, s.Clone())
			}
			chunks = append(chunks, chunk{c.Index, slices.Clone(c.IDs), steps, c.Finish})
			return nil
		}
		var res []Completion
		var err error
		if text {
			res, err = m.Complete(context.Background(), vocab, "the ", o)
		} else {
			res, err = m.Generate(context.Background(), prompt, o)
		}
		if err != nil {
			t.Fatal(err)
		}
		return chunks, res
	}
	t.Run("sampled", func(t *testing.T) {
		o := GenerateOptions{MaxNewTokens: 30, N: 3, Seed: 5, Temperature: 1.3, Trace: true, TraceTopN: 2}
		chunks, res := collect(t, o, false)
		streamed := make([][]int, len(res))
		finished := make([]int, len(res))
		for _, c := range chunks {
			if c.sample < 0 || c.sample >= len(res) {
				t.Fatalf("chunk for sample %d of %d", c.sample, len(res))
			}
			if finished[c.sample] > 0 {
				t.Errorf("sample %d: a chunk after its finish", c.sample)
			}
			if len(c.steps) != len(c.ids) {
				t.Errorf("sample %d: chunk with %d ids has %d steps", c.sample, len(c.ids), len(c.steps))
			}
			for j, s := range c.steps {
				if s.Chosen.ID != c.ids[j] || s.Pos != len(prompt)+len(streamed[c.sample])+j {
					t.Errorf("sample %d: step %+v for id %d at %d", c.sample, s, c.ids[j], len(prompt)+len(streamed[c.sample])+j)
				}
			}
			streamed[c.sample] = append(streamed[c.sample], c.ids...)
			if c.finish != "" {
				if c.finish != finishLength {
					t.Errorf("sample %d finished %q", c.sample, c.finish)
				}
				finished[c.sample]++
			}
		}
		for i, r := range res {
			if len(r.IDs) != 30 || !slices.Equal(streamed[i], r.IDs) || finished[i] != 1 {
				t.Errorf("sample %d: streamed %v (%d finish chunks), returned %v", i, streamed[i], finished[i], r.IDs)
			}
		}
		textChunks, _ := collect(t, o, true)
		if len(textChunks) != len(chunks) {
			t.Fatalf("Complete streamed %d chunks, Generate %d", len(textChunks), len(chunks))
		}
		for i, c := range textChunks {
			if g := chunks[i]; c.sample != g.sample || !slices.Equal(c.ids, g.ids) || c.finish != g.finish {
				t.Errorf("chunk %d: Complete %+v, Generate %+v", i, c, g)
			}
		}
	})
	t.Run("beams", func(t *testing.T) {
		chunks, res := collect(t, GenerateOptions{MaxNewTokens: 20, N: 3, NumBeams: 4}, false)
		if len(chunks) != 3 || len(res) != 3 {
			t.Fatalf("%d chunks and %d beams, want 3 each", len(chunks), len(res))
		}
		for i, c := range chunks {
			if c.sample != i || !slices.Equal(c.ids, res[i].IDs) || len(c.ids) != 20 || c.finish != finishLength {
				t.Errorf("chunk %d: %+v; beam %d is %v", i, c, i, res[i].IDs)
			}
		}
	})
}
