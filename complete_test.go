package minigpt

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Sample i of a batch of n is bit-identical to a single-sample run with
// the seed derived for i, with the window short, growing and sliding.
func TestCompleteSamplesMatchSingleRuns(t *testing.T) {
	vocab, _ := NewVocab(LanternBay)
	tied := Config{VocabSize: vocab.Size(), BlockSize: 12, EmbedDim: 16, Heads: 4, Layers: 1, TiedHead: true}
	for _, m := range []*Model{randomizedModel(t, DefaultConfig(), 41), randomizedModel(t, tied, 43)} {
		testCompleteSamples(t, m, vocab)
	}
}

func testCompleteSamples(t *testing.T, m *Model, vocab *Vocab) {
	ctx := context.Background()
	for _, prompt := range []string{"the ", "the keeper rings the bell when a b", "the lamp keeper walks the shore at dusk. the lamp"} {
		for _, o := range []GenerateOptions{
			{MaxNewTokens: 45, Temperature: 1.2, TopK: 8, TopP: 0.95, MinP: 0.02, RepetitionPenalty: 1.1, PresencePenalty: 0.3, FrequencyPenalty: 0.2, NoRepeatNGramSize: 4, LogitBias: map[int]float64{3: -2}},
			{MaxNewTokens: 45, Greedy: true},
			{MaxNewTokens: 45, Temperature: 0.9, noCache: true},
		} {
			const n, seed = 5, 1234
			res, err := m.Complete(ctx, vocab, prompt, n, seed, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			distinct := map[string]bool{}
			for i, c := range res {
				one := o
				if o.sampled() {
					one.Rand = SampleRand(seed, i)
				}
				want, err := m.GenerateText(ctx, vocab, prompt, one)
				if err != nil {
					t.Fatal(err)
				}
				if prompt+c.Text != want {
					t.Fatalf("prompt %q, sample %d of %d:\nbatch  %q\nsingle %q", prompt, i, n, prompt+c.Text, want)
				}
				if wantSeed := uint64(seed + i); o.sampled() && c.Seed != wantSeed {
					t.Errorf("sample %d seed %d, want %d", i, c.Seed, wantSeed)
				}
				distinct[c.Text] = true
			}
			if o.sampled() && len(distinct) < 2 {
				t.Errorf("prompt %q: %d samples are all the same", prompt, n)
			}
		}
	}
}

func TestCompleteRejects(t *testing.T) {
	m := randomizedModel(t, DefaultConfig(), 1)
	vocab, _ := NewVocab(LanternBay)
	ctx := context.Background()
	for _, tc := range []struct {
		n    int
		o    GenerateOptions
		want string
	}{
		{0, GenerateOptions{}, "sample count 0"},
		{MaxSamples + 1, GenerateOptions{}, "sample count 129"},
		{2, GenerateOptions{Rand: seeded(1)}, "Rand is set"},
		{2, GenerateOptions{OnToken: func(int) error { return nil }}, "OnToken is set"},
		{3, GenerateOptions{NumBeams: 2}, "2 beams cannot return 3"},
		{1, GenerateOptions{Stop: []string{"a", "b", "c", "d", "e"}}, "5 stop strings"},
		{1, GenerateOptions{Stop: []string{"a", ""}}, "stop string 1 is empty"},
		{1, GenerateOptions{MinP: 1.5}, "min-p 1.5"},
		{1, GenerateOptions{MinP: math.NaN()}, "min-p NaN"},
		{1, GenerateOptions{PresencePenalty: 2.5}, "presence penalty 2.5"},
		{1, GenerateOptions{FrequencyPenalty: -3}, "frequency penalty -3"},
		{1, GenerateOptions{LogitBias: map[int]float64{2: 101}}, "logit bias 101 for token 2"},
		{1, GenerateOptions{LogitBias: map[int]float64{24: 1}}, "token id 24"},
		{1, GenerateOptions{NoRepeatNGramSize: -1}, "n-gram size -1"},
		{1, GenerateOptions{NumBeams: 65}, "beam count 65"},
		{1, GenerateOptions{NumBeams: 2, LengthPenalty: math.Inf(1)}, "length penalty +Inf"},
		{1, GenerateOptions{TraceTopN: 25}, "trace top-n 25"},
		{1, GenerateOptions{NumBeams: 2, OnStep: func(*Step) error { return nil }}, "OnStep"},
	} {
		_, err := m.Complete(ctx, vocab, "the ", tc.n, 1, tc.o, nil)
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("n %d: err = %v, want ErrBadOption mentioning %q", tc.n, err, tc.want)
		}
	}
	if _, err := m.Generate(ctx, []int{1}, GenerateOptions{Stop: []string{"x"}, Greedy: true}); !errors.Is(err, ErrBadOption) {
		t.Errorf("Generate with Stop: err %v", err)
	}
	if _, err := CharBias(vocab, map[rune]float64{'z': 1}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "'z'") {
		t.Errorf("CharBias with z: err %v", err)
	}
}

// The stopper on hand-fed tokens: what each chunk releases, a stop string
// split across tokens, a partial match that fails and is released.
func TestStopStringHoldBack(t *testing.T) {
	chars := []rune("abcx")
	enc := func(s string) []int {
		var ids []int
		for _, r := range s {
			ids = append(ids, strings.IndexRune(string(chars), r))
		}
		return ids
	}
	run := func(stops []string, text string) (chunks []string, finish FinishReason, out string) {
		st := newStopper(stops, chars, 1, false)
		stream := func(c *Chunk) error {
			chunks = append(chunks, c.Text)
			if c.Finish != "" {
				finish = c.Finish
			}
			return nil
		}
		for _, id := range enc(text) {
			if err := st.add(0, id, nil, stream); errors.Is(err, errFinished) {
				break
			}
		}
		st.finish(stream)
		s := st.samples[0]
		return chunks, finish, decodeChars(chars, s.ids[:s.released])
	}
	for _, tc := range []struct {
		stops  []string
		text   string
		chunks []string
		finish FinishReason
		out    string
	}{
		// "ab" split over two tokens: the a is held, then the stop ends it.
		{[]string{"ab"}, "xaab", []string{"x", "a", ""}, FinishStop, "xa"},
		// "abc" partially matched, then broken by x: released at once.
		{[]string{"abc"}, "abxc", []string{"abx", "c", ""}, FinishLength, "abxc"},
		// held characters at the end are released when the length runs out.
		{[]string{"abc"}, "xab", []string{"x", "ab"}, FinishLength, "xab"},
		// two stop strings: "ca" is held while "cab" is possible, released
		// when the second c breaks it, then "cab" completes.
		{[]string{"cab", "bb"}, "cacab", []string{"ca", ""}, FinishStop, "ca"},
		// a stop string with a character outside the vocabulary never matches.
		{[]string{"z"}, "abc", []string{"a", "b", "c", ""}, FinishLength, "abc"},
		// the stop string at the very start: nothing is output.
		{[]string{"ab"}, "abc", []string{""}, FinishStop, ""},
	} {
		chunks, finish, out := run(tc.stops, tc.text)
		if !slices.Equal(chunks, tc.chunks) || finish != tc.finish || out != tc.out {
			t.Errorf("stops %q on %q: chunks %q finish %q out %q; want %q %q %q", tc.stops, tc.text, chunks, finish, out, tc.chunks, tc.finish, tc.out)
		}
	}
}

// Stop strings on the embedded model, against the greedy text without
// them ("the boats come home when the lantern glows. the boats wait
// outside the bay when the fog is thick. ...").
func TestStopStringsOnModel(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	full, _ := m.GenerateText(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 80, Greedy: true})
	for _, stop := range []string{"fog", "the b", ". a", "zzz", "s", "the boats"} {
		var streamed strings.Builder
		var finish FinishReason
		res, err := m.Complete(ctx, vocab, "the ", 1, 0, GenerateOptions{MaxNewTokens: 80, Greedy: true, Stop: []string{stop, "qq"}}, func(c *Chunk) error {
			if strings.Contains(streamed.String()+c.Text, stop) {
				t.Errorf("stop %q: streamed text %q reaches the stop string", stop, streamed.String()+c.Text)
			}
			streamed.WriteString(c.Text)
			if c.Finish != "" {
				finish = c.Finish
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		gen := strings.TrimPrefix(full, "the ")
		want, wantFinish := gen, FinishLength
		if i := strings.Index(gen, stop); i >= 0 {
			want, wantFinish = gen[:i], FinishStop
		}
		if res[0].Text != want || streamed.String() != want || finish != wantFinish || res[0].Finish != wantFinish {
			t.Errorf("stop %q: text %q, streamed %q, finish %q/%q; want %q, %q", stop, res[0].Text, streamed.String(), finish, res[0].Finish, want, wantFinish)
		}
	}
	// GenerateText: the stop string is not part of the result, and
	// OnToken never sees its characters.
	var seen []int
	text, err := m.GenerateText(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 120, Greedy: true, Stop: []string{"fog"}, OnToken: func(id int) error {
		seen = append(seen, id)
		return nil
	}})
	if err != nil || text != "the boats come home when the lantern glows. the boats wait outside the bay when the " {
		t.Fatalf("GenerateText with stop: %q, %v", text, err)
	}
	if s, _ := vocab.Decode(seen); s != "boats come home when the lantern glows. the boats wait outside the bay when the " {
		t.Errorf("OnToken saw %q", s)
	}
}

// Traces recorded with Trace agree with the OnStep ones and are held
// back with their tokens.
func TestCompleteTraceRecords(t *testing.T) {
	m, vocab, _ := DefaultModel()
	var live []Step
	o := GenerateOptions{MaxNewTokens: 30, Temperature: 1.5, TopK: 5, TraceTopN: 3, Trace: true, Stop: []string{"rocks"},
		OnStep: func(s *Step) error { live = append(live, s.Clone()); return nil }}
	var chunkSteps []Step
	res, err := m.Complete(context.Background(), vocab, "the ", 1, 42, o, func(c *Chunk) error {
		if len(c.Steps) != len(c.IDs) {
			t.Errorf("chunk with %d ids has %d steps", len(c.IDs), len(c.Steps))
		}
		chunkSteps = append(chunkSteps, c.Steps...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Steps) != len(res[0].IDs) || len(chunkSteps) != len(res[0].IDs) {
		t.Fatalf("%d ids, %d recorded steps, %d streamed", len(res[0].IDs), len(res[0].Steps), len(chunkSteps))
	}
	for i, s := range res[0].Steps {
		if s.ID != res[0].IDs[i] || s.Logprob != live[i].Logprob || s.Pos != 4+i || len(s.Top) != 3 || s.Top[1] != live[i].Top[1] {
			t.Fatalf("step %d: recorded %+v, live %+v", i, s, live[i])
		}
	}
}

// An error from the stream or from OnStep stops every sample and is
// returned; so does cancelling the context, with what was released.
func TestCompleteStopsOnErrorsAndCancel(t *testing.T) {
	m, vocab, _ := DefaultModel()
	boom := errors.New("boom")
	chunks := 0
	_, err := m.Complete(context.Background(), vocab, "the ", 3, 1, GenerateOptions{MaxNewTokens: 50}, func(c *Chunk) error {
		if chunks++; chunks == 7 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || chunks != 7 {
		t.Errorf("stream error: err %v after %d chunks", err, chunks)
	}
	steps := 0
	_, err = m.Complete(context.Background(), vocab, "the ", 2, 1, GenerateOptions{MaxNewTokens: 50, OnStep: func(*Step) error {
		if steps++; steps == 5 {
			return boom
		}
		return nil
	}}, nil)
	if !errors.Is(err, boom) || steps != 5 {
		t.Errorf("OnStep error: err %v after %d steps", err, steps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := 0
	res, err := m.Complete(ctx, vocab, "the ", 2, 1, GenerateOptions{MaxNewTokens: 50}, func(c *Chunk) error {
		if got += len(c.IDs); got >= 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(res) != 2 || len(res[0].IDs)+len(res[1].IDs) != got {
		t.Errorf("cancel: err %v, %d results, %d ids streamed", err, len(res), got)
	}
}

// n rows together cost n times one sequence's activations: a batch over
// the bound Config.Validate puts on one sequence is refused up front
// (block 8192, one head: one sequence fits, two do not).
func TestCompleteRefusesOversizedBatch(t *testing.T) {
	vocab, _ := NewVocab("ab")
	m, err := NewModel(Config{VocabSize: 2, BlockSize: 8192, EmbedDim: 8, Heads: 1, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []GenerateOptions{{MaxNewTokens: 1}, {MaxNewTokens: 1, NumBeams: 2}} {
		n := 2
		if o.NumBeams > 0 {
			n = 1
		}
		if _, err := m.Complete(context.Background(), vocab, "ab", n, 1, o, nil); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "2 sequences together") {
			t.Errorf("beams %d: err %v", o.NumBeams, err)
		}
	}
	if _, err := m.Generate(context.Background(), []int{0}, GenerateOptions{MaxNewTokens: 1, NumBeams: 2}); !errors.Is(err, ErrBadOption) {
		t.Errorf("Generate with 2 beams: err %v", err)
	}
}
