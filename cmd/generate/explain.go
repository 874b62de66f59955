package main

// This file holds the ways of writing samples other than plain text:
// several samples side by side, the -explain trace of each token, and the
// speed report.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// many prints several samples (-samples) or beams (-beams), generated
// together by minigpt.Complete: each as a header line and its text.
func many(ctx context.Context, m *minigpt.Model, vocab *minigpt.Vocab, o *options, gen minigpt.GenerateOptions, stdout, stderr io.Writer) error {
	gen.N, gen.Seed = o.samples, o.seed
	start := time.Now()
	res, err := m.Complete(ctx, vocab, o.prompt, gen)
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	count, chars := 0, 0
	for _, c := range res {
		count += len(c.IDs)
		chars += utf8.RuneCountInString(c.Text)
		switch {
		case o.samples == 1:
		case o.beams > 0:
			fmt.Fprintf(stdout, "--- beam %d, score %.6f, %s ---\n", c.Index, c.Score, c.Finish)
		default:
			fmt.Fprintf(stdout, "--- sample %d, seed %d, %s ---\n", c.Index, sampleSeed(gen, c.Index), c.Finish)
		}
		if _, err := fmt.Fprintf(stdout, "%s%s\n", o.prompt, c.Text); err != nil {
			return err
		}
	}
	reportSpeed(stderr, vocab, count, chars, elapsed)
	return noteIncomplete(stderr, res, o.samples > 1)
}

// reportSpeed says how many tokens were generated and how fast: for a
// character model, in characters; for a BPE model, in tokens and the
// characters they decode to.
func reportSpeed(stderr io.Writer, vocab *minigpt.Vocab, tokens, chars int, elapsed time.Duration) {
	if !cli.IsBPE(vocab) {
		fmt.Fprintf(stderr, "%d characters in %v (%.0f characters/s)\n", tokens, elapsed.Round(time.Microsecond), float64(tokens)/elapsed.Seconds())
		return
	}
	fmt.Fprintf(stderr, "%d tokens, %d characters, in %v (%.0f tokens/s, %.0f characters/s)\n",
		tokens, chars, elapsed.Round(time.Microsecond), float64(tokens)/elapsed.Seconds(), float64(chars)/elapsed.Seconds())
}

// traced runs -explain or -logprobs: every released token with its
// trace, through minigpt.Complete (so -samples and -stop work as without).
func traced(ctx context.Context, m *minigpt.Model, vocab *minigpt.Vocab, o *options, gen minigpt.GenerateOptions, stdout, stderr io.Writer) error {
	tv := tokenView{vocab, cli.IsBPE(vocab)}
	gen.N, gen.Seed = o.samples, o.seed
	gen.Trace = true
	gen.TraceTopN = min(o.explainTop, vocab.Size())
	if o.logprobs > 0 {
		gen.TraceTopN = min(o.logprobs, vocab.Size())
	}
	if o.explain {
		fmt.Fprintf(stdout, "prompt %q; %s\n", o.prompt, describe(gen, tv.unit(), o.formatLabel))
		fmt.Fprintf(stdout, "%s  %-6s %7s %7s | %s\n", sampleCol(o, -1), tv.unit(), "p", "raw p", "candidates by raw probability: raw% → p% after the filters, or the stage that cut it (* = chosen)")
		gen.Stream = func(c *minigpt.Completion) error {
			for _, s := range c.Steps {
				if _, err := fmt.Fprintln(stdout, explainLine(o, tv, c.Index, &s)); err != nil {
					return err
				}
			}
			return nil
		}
	} else {
		enc := json.NewEncoder(stdout)
		gen.Stream = func(c *minigpt.Completion) error {
			for _, s := range c.Steps {
				if err := enc.Encode(logprobLine(tv, c.Index, &s)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	res, err := m.Complete(ctx, vocab, o.prompt, gen)
	if err != nil {
		return err
	}
	for _, c := range res {
		if o.explain {
			fmt.Fprintf(stdout, "%stext %q (%s)\n", sampleCol(o, c.Index), o.prompt+c.Text, c.Finish)
		} else {
			line := struct {
				Sample int    `json:"sample"`
				Seed   uint64 `json:"seed"`
				Text   string `json:"text"`
				Finish string `json:"finish"`
			}{c.Index, sampleSeed(gen, c.Index), o.prompt + c.Text, c.Finish}
			if err := json.NewEncoder(stdout).Encode(line); err != nil {
				return err
			}
		}
	}
	return noteIncomplete(stderr, res, o.samples > 1)
}

// sampleSeed is the seed sample i of a call with options g draws from
// (GenerateOptions.Seed's rule: Seed+i), or 0 when nothing is drawn.
func sampleSeed(g minigpt.GenerateOptions, i int) uint64 {
	if g.Greedy || g.NumBeams > 1 {
		return 0
	}
	return g.Seed + uint64(i)
}

// describe names the stages that are on, in pipeline order; unit is
// what a token is ("char" or "token"), format the output format's label
// ("" for none), which greedy decoding applies too.
func describe(g minigpt.GenerateOptions, unit, format string) string {
	if g.Greedy {
		what := "character"
		if unit == "token" {
			what = "token"
		}
		if format != "" {
			return fmt.Sprintf("greedy: the most probable %s the format allows (grammar: %s), no filters", what, format)
		}
		return fmt.Sprintf("greedy: the most probable %s, no filters", what)
	}
	var on []string
	if format != "" {
		on = append(on, "grammar: "+format)
	}
	if len(g.LogitBias) > 0 {
		on = append(on, "logit-bias")
	}
	if g.PresencePenalty != 0 || g.FrequencyPenalty != 0 {
		on = append(on, fmt.Sprintf("penalties presence %g frequency %g", g.PresencePenalty, g.FrequencyPenalty))
	}
	if g.Temperature != 1 && g.Temperature != 0 {
		on = append(on, fmt.Sprintf("temperature %g", g.Temperature))
	}
	if g.RepetitionPenalty != 1 && g.RepetitionPenalty != 0 {
		on = append(on, fmt.Sprintf("repetition-penalty %g", g.RepetitionPenalty))
	}
	if g.NoRepeatNGramSize > 0 {
		on = append(on, fmt.Sprintf("no-repeat-ngram %d", g.NoRepeatNGramSize))
	}
	if g.TopK > 0 {
		on = append(on, fmt.Sprintf("top-k %d", g.TopK))
	}
	if g.TopP > 0 && g.TopP < 1 {
		on = append(on, fmt.Sprintf("top-p %g", g.TopP))
	}
	if g.MinP > 0 {
		on = append(on, fmt.Sprintf("min-p %g", g.MinP))
	}
	if len(on) == 0 {
		return "plain sampling at temperature 1"
	}
	return "stages: " + strings.Join(on, ", ")
}

func sampleCol(o *options, i int) string {
	if o.samples == 1 {
		if i < 0 {
			return "  pos"
		}
		return ""
	}
	if i < 0 {
		return "s     pos"
	}
	return fmt.Sprintf("%-3d ", i)
}

// tokenView shows a vocabulary's tokens: a character model's as rune
// literals ('e'), a BPE model's as string literals ("the", "\xe2\x80"
// for part of a character), so the two never read alike.
type tokenView struct {
	vocab *minigpt.Vocab
	bpe   bool
}

func (v tokenView) quote(id int) string { return cli.QuoteToken(v.vocab, v.bpe, id) }

// unit is what a token is called in headers.
func (v tokenView) unit() string {
	if v.bpe {
		return "token"
	}
	return "char"
}

// explainLine is one -explain row: position, token, its probability
// after the filters and under the raw distribution, then the top
// candidates, the chosen one marked * (after "…" when it is not among
// them).
func explainLine(o *options, tv tokenView, sample int, s *minigpt.Step) string {
	var b strings.Builder
	if o.samples > 1 {
		fmt.Fprintf(&b, "%-3d ", sample)
	}
	fmt.Fprintf(&b, "%5d  %-6s %7s %7s |", s.Pos, tv.quote(s.Chosen.ID), pct(math.Exp(s.Logprob))+"%", pct(math.Exp(s.Chosen.Logprob))+"%")
	top := s.Top
	if !slices.ContainsFunc(top, func(c minigpt.Candidate) bool { return c.ID == s.Chosen.ID }) {
		// Drawn from outside the top N shown: listed after them, so that
		// every line marks its character (as the server's trace does).
		top = append(top[:len(top):len(top)], s.Chosen)
	}
	for i, c := range top {
		if i == len(s.Top) {
			b.WriteString(" …")
		}
		mark := " "
		if c.ID == s.Chosen.ID {
			mark = "*"
		}
		after := pct(c.Probs[len(c.Probs)-1])
		if c.CutBy != minigpt.StageRaw {
			after = c.CutBy.String()
		}
		fmt.Fprintf(&b, " %s%-4s%5s→%-5s", mark, tv.quote(c.ID), pct(c.Probs[minigpt.StageRaw]), after)
	}
	return strings.TrimRight(b.String(), " ")
}

// pct formats a probability as a percentage in at most 5 characters:
// one decimal from 0.1%, below that the order of magnitude (4e-3), so
// that the improbable characters a high temperature lets through show.
func pct(p float64) string {
	switch v := 100 * p; {
	case v >= 0.05:
		return fmt.Sprintf("%.1f", v)
	case v == 0:
		return "0"
	default:
		return strings.Replace(fmt.Sprintf("%.0e", v), "e-0", "e-", 1)
	}
}

// candidateJSON is one of -logprobs' top candidates: a character model's
// character (char), or a BPE model's token (its text, and its bytes,
// which a token that is part of a character needs).
type candidateJSON struct {
	Char       string   `json:"char,omitempty"`
	Token      string   `json:"token,omitempty"`
	Bytes      []int    `json:"bytes,omitempty"`
	ID         int      `json:"id"`
	RawLogprob float64  `json:"raw_logprob"`
	Logprob    *float64 `json:"logprob"`       // null once cut
	Cut        string   `json:"cut,omitempty"` // the stage that cut it
}

type stepJSON struct {
	Sample     int             `json:"sample"`
	Pos        int             `json:"pos"`
	Char       string          `json:"char,omitempty"`
	Token      string          `json:"token,omitempty"`
	Bytes      []int           `json:"bytes,omitempty"`
	ID         int             `json:"id"`
	Logprob    float64         `json:"logprob"`
	RawLogprob float64         `json:"raw_logprob"`
	Top        []candidateJSON `json:"top"`
}

func logprobLine(tv tokenView, sample int, s *minigpt.Step) stepJSON {
	out := stepJSON{Sample: sample, Pos: s.Pos, ID: s.Chosen.ID, Logprob: s.Logprob, RawLogprob: s.Chosen.Logprob}
	if t := tv.vocab.Token(s.Chosen.ID); tv.bpe {
		out.Token, out.Bytes = t, cli.TokenBytes(t)
	} else {
		out.Char = t
	}
	for _, c := range s.Top {
		cj := candidateJSON{ID: c.ID, RawLogprob: math.Log(c.Probs[minigpt.StageRaw])}
		if t := tv.vocab.Token(c.ID); tv.bpe {
			cj.Token, cj.Bytes = t, cli.TokenBytes(t)
		} else {
			cj.Char = t
		}
		if c.CutBy != minigpt.StageRaw {
			cj.Cut = c.CutBy.String()
		} else {
			lp := math.Log(c.Probs[len(c.Probs)-1])
			cj.Logprob = &lp
		}
		out.Top = append(out.Top, cj)
	}
	return out
}
