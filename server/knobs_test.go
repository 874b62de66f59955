package server

// The sampling knobs: logprobs and trace against scoring, every knob
// against the library, beam refusals.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"example.org/minigpt"
)

// TestLogprobsAgreeWithScoring: the logprobs of generated tokens (from the
// sampler's trace) equal those of the same text scored as an echoed
// prompt (Model.Logits in this package): two computations of the model's
// raw distribution.
func TestLogprobsAgreeWithScoring(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, body := range []string{
		`{"prompt":"the ","max_tokens":50,"temperature":0,"logprobs":3}`,
		`{"prompt":"the keeper ","max_tokens":60,"temperature":1.3,"top_k":6,"seed":5,"logprobs":2}`,
	} {
		c := post(t, ts, body).completion(t)
		ch := c.Choices[0]
		lp := ch.Logprobs
		if lp == nil || strings.Join(lp.Tokens, "") != ch.Text {
			t.Fatalf("%s: logprobs %+v for %q", body, lp, ch.Text)
		}
		greedy := strings.Contains(body, `"temperature":0,`)
		var prompt string
		fmt.Sscanf(body[strings.Index(body, `"prompt":`)+9:], "%q", &prompt)
		scored := post(t, ts, fmt.Sprintf(`{"prompt":%q,"max_tokens":0,"echo":true,"logprobs":3}`, prompt+ch.Text)).completion(t)
		slp := scored.Choices[0].Logprobs
		off := len([]rune(prompt))
		for i, l := range lp.TokenLogprobs {
			want := *slp.TokenLogprobs[off+i]
			if math.Abs(*l-want) > 1e-9 {
				t.Errorf("%s: token %d %q: logprob %v, scored %v", body, i, lp.Tokens[i], *l, want)
			}
			if lp.TextOffset[i] != i {
				t.Errorf("text_offset[%d] = %d", i, lp.TextOffset[i])
			}
			top := lp.TopLogprobs[i]
			best, bestLP, sum := "", math.Inf(-1), 0.0
			for tok, v := range top {
				sum += math.Exp(v)
				if v > bestLP {
					best, bestLP = tok, v
				}
				if w, ok := slp.TopLogprobs[off+i][tok]; ok && math.Abs(w-v) > 1e-9 {
					t.Errorf("token %d: alternative %q %v, scored %v", i, tok, v, w)
				}
			}
			if sum > 1+1e-9 {
				t.Errorf("token %d: alternatives sum to probability %v", i, sum)
			}
			if greedy && best != lp.Tokens[i] {
				t.Errorf("greedy token %d is %q but the most likely alternative is %q", i, lp.Tokens[i], best)
			}
			if v, ok := top[lp.Tokens[i]]; !ok {
				t.Errorf("token %d: the chosen %q is not among the alternatives", i, lp.Tokens[i])
			} else if v != *l {
				t.Errorf("token %d: the chosen %q has logprob %v, and %v among the alternatives", i, lp.Tokens[i], *l, v)
			}
		}
	}
}

// TestTrace checks the playground's trace on a step of top-k 3 sampling
// over the whole vocabulary: raw probabilities sum to 1, exactly three
// candidates survive, the others are cut by top-k (or earlier), the final
// probabilities sum to 1 and the chosen token's is exp(logprob).
func TestTrace(t *testing.T) {
	_, ts := newTestServer(t, nil)
	c := post(t, ts, `{"prompt":"the ","max_tokens":40,"temperature":0.7,"top_k":3,"seed":8,"trace":24}`).completion(t)
	steps := c.Choices[0].Trace
	if len(steps) != 40 {
		t.Fatalf("%d trace steps for 40 tokens", len(steps))
	}
	for i, st := range steps {
		if got := strings.Join(st.Stages, ","); got != "raw,temperature,top-k" {
			t.Fatalf("step %d stages %q", i, got)
		}
		if st.Token != string([]rune(c.Choices[0].Text)[i]) {
			t.Errorf("step %d token %q, text has %q", i, st.Token, string([]rune(c.Choices[0].Text)[i]))
		}
		if len(st.Candidates) != 24 {
			t.Fatalf("step %d: %d candidates", i, len(st.Candidates))
		}
		raw, final, kept, chosen := 0.0, 0.0, 0, 0
		for j, cand := range st.Candidates {
			if j > 0 && cand.Probs[0] > st.Candidates[j-1].Probs[0] {
				t.Errorf("step %d: candidates not by descending raw probability", i)
			}
			raw += cand.Probs[0]
			p := cand.Probs[len(cand.Probs)-1]
			final += p
			if p > 0 {
				kept++
				if cand.CutBy != "" {
					t.Errorf("step %d: %q kept with cut_by %q", i, cand.Token, cand.CutBy)
				}
			} else if cand.CutBy == "" {
				t.Errorf("step %d: %q has probability 0 and no cut_by", i, cand.Token)
			}
			if cand.Chosen {
				chosen++
				if math.Abs(math.Log(p)-st.Logprob) > 1e-9 || cand.Token != st.Token {
					t.Errorf("step %d: chosen %q p %v, logprob %v", i, cand.Token, p, st.Logprob)
				}
			}
		}
		if math.Abs(raw-1) > 1e-9 || math.Abs(final-1) > 1e-9 || kept != 3 || chosen != 1 {
			t.Errorf("step %d: raw sum %v, final sum %v, %d kept, %d chosen", i, raw, final, kept, chosen)
		}
	}
	// Streamed, each character's chunk carries its trace step.
	st := streamed(t, ts, `{"prompt":"the ","max_tokens":10,"temperature":0.7,"top_k":3,"seed":8,"trace":5,"stream":true}`)
	n := 0
	for _, ch := range st.chunks {
		for _, c := range ch.Choices {
			if len(c.Trace) != len([]rune(c.Text)) {
				t.Errorf("chunk %q has %d trace steps", c.Text, len(c.Trace))
			}
			n += len(c.Trace)
		}
	}
	if n != 10 {
		t.Errorf("%d trace steps streamed", n)
	}
}

// TestKnobsAgainstLibrary: every knob reaches the library, as a direct
// call of Model.Complete with the same options shows.
func TestKnobsAgainstLibrary(t *testing.T) {
	_, ts := newTestServer(t, nil)
	m, vocab := lanternBay()
	eID, _ := vocab.Encode("e")
	for _, tc := range []struct {
		name, fields string
		opts         minigpt.GenerateOptions
	}{
		{"min_p", `"min_p":0.2`, minigpt.GenerateOptions{MinP: 0.2}},
		{"presence_penalty", `"presence_penalty":1.5`, minigpt.GenerateOptions{PresencePenalty: 1.5}},
		{"frequency_penalty", `"frequency_penalty":0.8`, minigpt.GenerateOptions{FrequencyPenalty: 0.8}},
		{"logit_bias", fmt.Sprintf(`"logit_bias":{"%d":-100}`, eID[0]), minigpt.GenerateOptions{LogitBias: map[int]float64{eID[0]: -100}}},
		{"no_repeat_ngram_size", `"no_repeat_ngram_size":4`, minigpt.GenerateOptions{NoRepeatNGramSize: 4}},
		{"repetition_penalty", `"repetition_penalty":1.4`, minigpt.GenerateOptions{RepetitionPenalty: 1.4}},
		{"everything", `"min_p":0.05,"top_k":8,"top_p":0.95,"presence_penalty":0.3,"frequency_penalty":0.2,"no_repeat_ngram_size":6,"repetition_penalty":1.1`,
			minigpt.GenerateOptions{MinP: 0.05, TopK: 8, TopP: 0.95, PresencePenalty: 0.3, FrequencyPenalty: 0.2, NoRepeatNGramSize: 6, RepetitionPenalty: 1.1}},
		{"stop", `"stop":["ee","ll"]`, minigpt.GenerateOptions{Stop: []string{"ee", "ll"}}},
		{"beams", `"num_beams":4,"n":2`, minigpt.GenerateOptions{NumBeams: 4}},
		{"beams with length penalty", `"num_beams":3,"length_penalty":1,"stop":"."`, minigpt.GenerateOptions{NumBeams: 3, LengthPenalty: 1, Stop: []string{"."}}},
		{"beams with processors", fmt.Sprintf(`"num_beams":3,"no_repeat_ngram_size":3,"presence_penalty":0.5,"logit_bias":{"%d":-100}`, eID[0]),
			minigpt.GenerateOptions{NumBeams: 3, NoRepeatNGramSize: 3, PresencePenalty: 0.5, LogitBias: map[int]float64{eID[0]: -100}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 3
			if strings.Contains(tc.fields, "num_beams") {
				n = 1
				if strings.Contains(tc.fields, `"n":2`) {
					n = 2
				}
			}
			body := fmt.Sprintf(`{"prompt":"the ","max_tokens":80,"temperature":1.2,"seed":21,%s}`, tc.fields)
			if strings.Contains(tc.fields, "num_beams") {
				// Beam search takes no temperature (it would be refused).
				body = strings.Replace(body, `"temperature":1.2,`, "", 1)
			}
			if !strings.Contains(tc.fields, `"n":`) {
				body = strings.Replace(body, "{", fmt.Sprintf(`{"n":%d,`, n), 1)
			}
			got := post(t, ts, body).completion(t)
			o := tc.opts
			o.MaxNewTokens, o.Temperature, o.N, o.Seed = 80, 1.2, n, 21
			want, err := m.Complete(context.Background(), vocab, "the ", o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if got.Choices[i].Text != want[i].Text || *got.Choices[i].FinishReason != string(want[i].Finish) {
					t.Errorf("choice %d: server %q (%s), library %q (%s)", i, got.Choices[i].Text, *got.Choices[i].FinishReason, want[i].Text, want[i].Finish)
				}
			}
			if tc.name == "logit_bias" && strings.Contains(got.Choices[0].Text, "e") {
				t.Errorf("logit_bias -100 on 'e', yet %q", got.Choices[0].Text)
			}
		})
	}
}

// TestBeamRefusals: what beam search cannot do, and knobs that greedy
// decoding or beam search would ignore, are refused by name.
func TestBeamRefusals(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, tc := range []struct{ body, param string }{
		{`{"prompt":"the ","num_beams":2,"n":3}`, "n"},
		{`{"prompt":"the ","num_beams":2,"logprobs":1}`, "logprobs"},
		{`{"prompt":"the ","num_beams":2,"trace":3}`, "trace"},
		{`{"prompt":"the ","num_beams":65}`, "num_beams"},
		{`{"prompt":"the ","num_beams":2,"temperature":0.7}`, "temperature"},
		{`{"prompt":"the ","num_beams":2,"top_k":3}`, "top_k"},
		{`{"prompt":"the ","num_beams":2,"top_p":0.5}`, "top_p"},
		{`{"prompt":"the ","num_beams":2,"min_p":0.1}`, "min_p"},
		// length_penalty weighs finished beams: without beams it does nothing.
		{`{"prompt":"the ","length_penalty":1}`, "length_penalty"},
		{`{"prompt":"the ","num_beams":1,"length_penalty":-0.5}`, "length_penalty"},
		{`{"prompt":"the ","temperature":0,"length_penalty":2}`, "length_penalty"},
		// Greedy decoding ignores what acts on the logits before the argmax.
		{`{"prompt":"the ","temperature":0,"logit_bias":{"3":-100}}`, "logit_bias"},
		{`{"prompt":"the ","temperature":0,"presence_penalty":1}`, "presence_penalty"},
		{`{"prompt":"the ","temperature":0,"frequency_penalty":1}`, "frequency_penalty"},
		{`{"prompt":"the ","temperature":0,"repetition_penalty":1.2}`, "repetition_penalty"},
		{`{"prompt":"the ","temperature":0,"no_repeat_ngram_size":2}`, "no_repeat_ngram_size"},
	} {
		r := post(t, ts, tc.body)
		if r.status != 400 || r.apiError(t).Error.Param == nil || *r.apiError(t).Error.Param != tc.param {
			t.Errorf("%s: %d %s", tc.body, r.status, r.body)
		}
	}
}

// TestAllBanned: a bias that bans every token is a 400 naming logit_bias.
func TestAllBanned(t *testing.T) {
	_, ts := newTestServer(t, nil)
	var bias []string
	for id := range 24 {
		bias = append(bias, fmt.Sprintf(`"%d":-100`, id))
	}
	r := post(t, ts, `{"prompt":"the ","logit_bias":{`+strings.Join(bias, ",")+`}}`)
	if r.status != 400 || *r.apiError(t).Error.Param != "logit_bias" {
		t.Errorf("every token banned: %d %s", r.status, r.body)
	}
}
