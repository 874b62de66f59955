package main

// This file holds train's report on standard error: the run's description
// and the progress of its steps.

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// describe summarises the model and the run in one line; text is the
// corpus, whose characters a BPE model's tokens are counted against.
func describe(tr *minigpt.Trainer, data *minigpt.Dataset, corpusName, text string) string {
	c, tc := tr.Model().Config(), tr.Config()
	head := "untied"
	if c.TiedHead {
		head = "tied"
	}
	parts := fmt.Sprintf("%d training, %d validation characters", len(data.Train), len(data.Val))
	if cli.IsBPE(data.Vocab) {
		tokens := len(data.Train) + len(data.Val)
		parts = fmt.Sprintf("%d training, %d validation tokens; %s, %.2f characters per token",
			len(data.Train), len(data.Val), data.Vocab, float64(utf8.RuneCountInString(text))/float64(tokens))
	}
	s := fmt.Sprintf("%d parameters (vocab %d, block %d, width %d, %d heads, %d layers, %s head) on %s (%s); %d steps of batch %d, lr %g",
		tr.Model().Config().NumParams(), c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, head,
		corpusName, parts, tc.Steps, tc.BatchSize, tc.LR)
	if tc.WarmupSteps > 0 {
		s += fmt.Sprintf(", warmup %d", tc.WarmupSteps)
	}
	if tc.CosineDecay {
		s += fmt.Sprintf(", cosine to %g", tc.MinLR)
	}
	if tc.GradClip > 0 {
		s += fmt.Sprintf(", clip %g", tc.GradClip)
	}
	if tc.WeightDecay > 0 {
		s += fmt.Sprintf(", weight decay %g", tc.WeightDecay)
	}
	return s
}

// reporter prints progress: on a terminal one live line rewritten with
// \r (evaluations stay on screen), otherwise a plain line every
// max(1, steps/20) steps and at every evaluation.
type reporter struct {
	w           io.Writer
	live        bool
	every       int
	firstStep   int // step the run (or resumed part) started at
	steps       int // the run's steps
	start       time.Time
	lastDraw    time.Time
	drawn       int // length of the live line on screen; 0 = none
	losses      [50]float64
	nLosses     int
	lastVal     float64
	lastValStep int
	stepWidth   int
}

func newReporter(w io.Writer, firstStep, steps int) *reporter {
	return &reporter{
		w: w, live: cli.IsTerminal(w), every: max(1, steps/20), firstStep: firstStep, steps: steps, start: time.Now(),
		lastVal: math.NaN(), lastValStep: -1, stepWidth: len(fmt.Sprint(steps)),
	}
}

func (r *reporter) step(p minigpt.Progress) {
	r.losses[r.nLosses%len(r.losses)] = p.Loss
	r.nLosses++
	evaluated := !math.IsNaN(p.ValLoss)
	if evaluated {
		r.lastVal, r.lastValStep = p.ValLoss, p.Step
	}
	line := fmt.Sprintf("step %*d/%d  loss %.4f", r.stepWidth, p.Step, r.steps, p.Loss)
	if evaluated {
		line += fmt.Sprintf("  val %.4f", p.ValLoss)
	}
	line += fmt.Sprintf("  lr %.2e", p.LR)
	if secs := time.Since(r.start).Seconds(); secs > 0 {
		rate := float64(p.Step-r.firstStep) / secs
		eta := time.Duration(float64(r.steps-p.Step) / rate * float64(time.Second))
		line += fmt.Sprintf("  %.1f steps/s  ETA %s", rate, eta.Round(time.Second))
	}
	if !r.live {
		if p.Step%r.every == 0 || evaluated || p.Step == r.steps {
			fmt.Fprintln(r.w, line)
		}
		return
	}
	now := time.Now()
	if !evaluated && p.Step != r.steps && now.Sub(r.lastDraw) < 100*time.Millisecond {
		return
	}
	r.lastDraw = now
	pad := strings.Repeat(" ", max(0, r.drawn-len(line)))
	if evaluated {
		fmt.Fprintf(r.w, "\r%s%s\n", line, pad)
		r.drawn = 0
		return
	}
	fmt.Fprintf(r.w, "\r%s%s", line, pad)
	r.drawn = len(line)
}

// finishLine ends a live line left on screen.
func (r *reporter) finishLine() {
	if r.drawn > 0 {
		fmt.Fprintln(r.w)
		r.drawn = 0
	}
}

// meanLoss returns the mean training loss of the last (up to) 50 steps and
// how many steps that is.
func (r *reporter) meanLoss() (float64, int) {
	n := min(r.nLosses, len(r.losses))
	if n == 0 {
		return math.NaN(), 0
	}
	sum := 0.0
	for i := r.nLosses - n; i < r.nLosses; i++ { // oldest first
		sum += r.losses[i%len(r.losses)]
	}
	return sum / float64(n), n
}
