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
	for _, m := range []*Model{randomizedModel(t, defaultConfig(), 41), randomizedModel(t, tied, 43)} {
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
			batch := o
			batch.N, batch.Seed = n, seed
			res, err := m.Complete(ctx, vocab, prompt, batch)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != n {
				t.Fatalf("%d completions, want %d", len(res), n)
			}
			distinct := map[string]bool{}
			for i, c := range res {
				one := o
				one.Seed = (seed + uint64(i))
				want := completed(t, m, vocab, prompt, one)
				if prompt+c.Text != want {
					t.Fatalf("prompt %q, sample %d of %d:\nbatch  %q\nsingle %q", prompt, i, n, prompt+c.Text, want)
				}
				distinct[c.Text] = true
			}
			if o.sampled() && len(distinct) < 2 {
				t.Errorf("prompt %q: %d samples are all the same", prompt, n)
			}
		}
	}
}

// Complete and Generate refuse the same bad options with the same
// errors (Complete also the stop strings, which only it has).
func TestCompleteRejects(t *testing.T) {
	m := randomizedModel(t, defaultConfig(), 1)
	vocab, _ := NewVocab(LanternBay)
	ctx := context.Background()
	prompt, _ := vocab.Encode("the ")
	for _, tc := range []struct {
		o    GenerateOptions
		stop []string
		want string
	}{
		{GenerateOptions{N: -1}, nil, "sample count -1"},
		{GenerateOptions{N: maxSamples + 1}, nil, "sample count 129"},
		{GenerateOptions{N: 3, NumBeams: 2}, nil, "2 beams cannot return 3"},
		{GenerateOptions{}, []string{"a", "b", "c", "d", "e"}, "5 stop strings"},
		{GenerateOptions{}, []string{"a", ""}, "stop string 1 is empty"},
		{GenerateOptions{MinP: 1.5}, nil, "min-p 1.5"},
		{GenerateOptions{MinP: math.NaN()}, nil, "min-p NaN"},
		{GenerateOptions{PresencePenalty: 2.5}, nil, "presence penalty 2.5"},
		{GenerateOptions{FrequencyPenalty: -3}, nil, "frequency penalty -3"},
		{GenerateOptions{LogitBias: map[int]float64{2: 101}}, nil, "logit bias 101 for token 2"},
		{GenerateOptions{LogitBias: map[int]float64{24: 1}}, nil, "token id 24"},
		{GenerateOptions{NoRepeatNGramSize: -1}, nil, "n-gram size -1"},
		{GenerateOptions{NumBeams: 65}, nil, "beam count 65"},
		{GenerateOptions{NumBeams: 2, LengthPenalty: math.Inf(1)}, nil, "length penalty +Inf"},
		{GenerateOptions{TraceTopN: 25}, nil, "trace top-n 25"},
	} {
		_, err := m.Complete(ctx, vocab, "the ", withStop(tc.o, tc.stop))
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Complete: err = %v, want ErrBadOption mentioning %q", err, tc.want)
		}
		if tc.stop != nil {
			continue
		}
		if res, err := m.Generate(ctx, prompt, tc.o); res != nil || !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate: %d results, err = %v, want ErrBadOption mentioning %q", len(res), err, tc.want)
		}
	}
	// N 0 is one sample, and N may equal NumBeams.
	for _, o := range []GenerateOptions{{MaxNewTokens: 2, N: 0, Seed: 1}, {MaxNewTokens: 2, N: 2, NumBeams: 2}} {
		if res, err := m.Generate(ctx, prompt, o); err != nil || len(res) != max(o.N, 1) {
			t.Errorf("N %d, beams %d: %d results, err %v", o.N, o.NumBeams, len(res), err)
		}
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
	run := func(stops []string, text string) (chunks []string, finish string, out string) {
		v, err := vocabFromChars(chars)
		if err != nil {
			t.Fatal(err)
		}
		st := newStopper(stops, v, 1, false, false)
		stream := func(c *Completion) error {
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
		return chunks, finish, v.text(s.ids[:s.released])
	}
	for _, tc := range []struct {
		stops  []string
		text   string
		chunks []string
		finish string
		out    string
	}{
		// "ab" split over two tokens: the a is held, then the stop ends it.
		{[]string{"ab"}, "xaab", []string{"x", "a", ""}, finishStop, "xa"},
		// "abc" partially matched, then broken by x: released at once.
		{[]string{"abc"}, "abxc", []string{"abx", "c", ""}, finishLength, "abxc"},
		// held characters at the end are released when the length runs out.
		{[]string{"abc"}, "xab", []string{"x", "ab"}, finishLength, "xab"},
		// two stop strings: "ca" is held while "cab" is possible, released
		// when the second c breaks it, then "cab" completes.
		{[]string{"cab", "bb"}, "cacab", []string{"ca", ""}, finishStop, "ca"},
		// a stop string with a character outside the vocabulary never matches.
		{[]string{"z"}, "abc", []string{"a", "b", "c", ""}, finishLength, "abc"},
		// the stop string at the very start: nothing is output.
		{[]string{"ab"}, "abc", []string{""}, finishStop, ""},
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
	full := completed(t, m, vocab, "the ", GenerateOptions{MaxNewTokens: 80, Greedy: true})
	for _, stop := range []string{"fog", "the b", ". a", "zzz", "s", "the boats"} {
		var streamed strings.Builder
		var finish string
		res, err := m.Complete(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 80, Greedy: true, Stream: func(c *Completion) error {
			if strings.Contains(streamed.String()+c.Text, stop) {
				t.Errorf("stop %q: streamed text %q reaches the stop string", stop, streamed.String()+c.Text)
			}
			streamed.WriteString(c.Text)
			if c.Finish != "" {
				finish = c.Finish
			}
			return nil
		},
			Stop: []string{stop, "qq"}})
		if err != nil {
			t.Fatal(err)
		}
		gen := strings.TrimPrefix(full, "the ")
		want, wantFinish := gen, finishLength
		if i := strings.Index(gen, stop); i >= 0 {
			want, wantFinish = gen[:i], finishStop
		}
		if res[0].Text != want || streamed.String() != want || finish != wantFinish || res[0].Finish != wantFinish {
			t.Errorf("stop %q: text %q, streamed %q, finish %q/%q; want %q, %q", stop, res[0].Text, streamed.String(), finish, res[0].Finish, want, wantFinish)
		}
	}
	// The stop string is not part of the result, and the stream's ids
	// never hold its characters.
	var seen []int
	res, err := m.Complete(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 120, Greedy: true, Stream: func(c *Completion) error {
		seen = append(seen, c.IDs...)
		return nil
	},
		Stop: []string{"fog"}})
	if err != nil || "the "+res[0].Text != "the boats come home when the lantern glows. the boats wait outside the bay when the " {
		t.Fatalf("Complete with stop: %v, %v", res, err)
	}
	if s, _ := vocab.Decode(seen); s != "boats come home when the lantern glows. the boats wait outside the bay when the " {
		t.Errorf("the stream's ids are %q", s)
	}
}

// Traces are held back with their tokens: with Stream they arrive in the
// streamed parts (and the returned Completions keep none), without it in
// the Completions, the same steps either way.
func TestCompleteTraceRecords(t *testing.T) {
	m, vocab, _ := DefaultModel()
	var streamed []Step
	o := GenerateOptions{MaxNewTokens: 30, Temperature: 1.5, TopK: 5, TraceTopN: 3, Trace: true, Seed: 42, Stop: []string{"rocks"}}
	recorded, err := m.Complete(context.Background(), vocab, "the ", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Stream = func(c *Completion) error {
		if len(c.Steps) != len(c.IDs) {
			t.Errorf("a part with %d ids has %d steps", len(c.IDs), len(c.Steps))
		}
		for _, s := range c.Steps {
			streamed = append(streamed, s.Clone())
		}
		return nil
	}
	res, err := m.Complete(context.Background(), vocab, "the ", o)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Steps != nil {
		t.Errorf("a streamed call returned %d steps", len(res[0].Steps))
	}
	ids := recorded[0].IDs
	if len(recorded[0].Steps) != len(ids) || len(streamed) != len(ids) || !slices.Equal(res[0].IDs, ids) {
		t.Fatalf("%d ids, %d recorded steps, %d streamed", len(ids), len(recorded[0].Steps), len(streamed))
	}
	for i, s := range recorded[0].Steps {
		if s.Chosen.ID != ids[i] || s.Logprob != streamed[i].Logprob || s.Pos != 4+i || len(s.Top) != 3 || s.Top[1] != streamed[i].Top[1] {
			t.Fatalf("step %d: recorded %+v, streamed %+v", i, s, streamed[i])
		}
	}
}

// An error from the stream (traced or not) stops every sample and is
// returned; so does cancelling the context, with what was released.
func TestCompleteStopsOnErrorsAndCancel(t *testing.T) {
	m, vocab, _ := DefaultModel()
	boom := errors.New("boom")
	chunks := 0
	_, err := m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 50, N: 3, Seed: 1, Stream: func(c *Completion) error {
		if chunks++; chunks == 7 {
			return boom
		}
		return nil
	}})
	if !errors.Is(err, boom) || chunks != 7 {
		t.Errorf("stream error: err %v after %d chunks", err, chunks)
	}
	steps := 0
	_, err = m.Complete(context.Background(), vocab, "the ", GenerateOptions{MaxNewTokens: 50, N: 2, Seed: 1, Trace: true, Stream: func(c *Completion) error {
		if steps += len(c.Steps); steps >= 5 {
			return boom
		}
		return nil
	}})
	if !errors.Is(err, boom) || steps != 5 {
		t.Errorf("traced stream error: err %v after %d steps", err, steps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := 0
	res, err := m.Complete(ctx, vocab, "the ", GenerateOptions{MaxNewTokens: 50, N: 2, Seed: 1, Stream: func(c *Completion) error {
		if got += len(c.IDs); got >= 10 {
			cancel()
		}
		return nil
	}})
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
	for _, o := range []GenerateOptions{{MaxNewTokens: 1, N: 2, Seed: 1}, {MaxNewTokens: 1, NumBeams: 2}} {
		if _, err := m.Complete(context.Background(), vocab, "ab", o); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "2 sequences together") {
			t.Errorf("Complete, N %d, beams %d: err %v", o.N, o.NumBeams, err)
		}
		if _, err := m.Generate(context.Background(), []int{0}, o); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "2 sequences together") {
			t.Errorf("Generate, N %d, beams %d: err %v", o.N, o.NumBeams, err)
		}
	}
}
