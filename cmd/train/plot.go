package main

// This file holds the loss plot, an SVG of the training and validation
// curves.

import (
	"fmt"
	"io"
	"math"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// point is one (step, loss) sample of a curve.
type point struct {
	step int
	loss float64
}

// writeLossPlot draws the training and validation loss curves as an SVG
// document: steps on the x axis, loss on the y axis, with ticks, labels
// and a legend. Non-finite losses are skipped.
func writeLossPlot(w io.Writer, title string, train, val []point) error {
	const (
		width, height          = 800, 480
		left, right, top, bott = 70, 20, 40, 60
		plotW, plotH           = width - left - right, height - top - bott
	)
	maxStep, lo, hi := 1, math.Inf(1), math.Inf(-1)
	for _, c := range [][]point{train, val} {
		for _, p := range c {
			if math.IsNaN(p.loss) || math.IsInf(p.loss, 0) {
				continue
			}
			maxStep = max(maxStep, p.step)
			lo, hi = min(lo, p.loss), max(hi, p.loss)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	lo = math.Max(0, math.Floor(lo*2)/2-0.25)
	hi = math.Ceil(hi*2) / 2
	if hi <= lo {
		hi = lo + 1
	}
	x := func(step int) float64 { return left + float64(step)/float64(maxStep)*plotW }
	y := func(loss float64) float64 { return top + (hi-loss)/(hi-lo)*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" text-anchor="middle">%s</text>`+"\n", width/2, xmlEscape(title))
	// Grid and ticks.
	yStep := niceStep((hi - lo) / 6)
	for v := math.Ceil(lo/yStep) * yStep; v <= hi+1e-9; v += yStep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), left+plotW, y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%.2f</text>`+"\n", left-6, y(v), v)
	}
	xStep := int(niceStep(float64(maxStep) / 8))
	for s := 0; s <= maxStep; s += max(1, xStep) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x(s), top, x(s), top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(s), top+plotH+18, s)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">step</text>`+"\n", left+plotW/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">loss (cross-entropy, nats)</text>`+"\n", top+plotH/2)
	// Curves.
	curve := func(c []point, color string, widthPx float64) {
		var pts []string
		for _, p := range c {
			if math.IsNaN(p.loss) || math.IsInf(p.loss, 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.step), y(math.Min(math.Max(p.loss, lo), hi))))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", color, widthPx, strings.Join(pts, " "))
		}
	}
	curve(train, "#4a7fd0", 1)
	curve(val, "#e07020", 2.5)
	for _, p := range val {
		if !math.IsNaN(p.loss) && !math.IsInf(p.loss, 0) {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#e07020"/>`+"\n", x(p.step), y(p.loss))
		}
	}
	// Legend.
	lx, ly := left+plotW-190, top+14
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="180" height="44" fill="white" stroke="#999"/>`+"\n", lx-8, ly-12)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#4a7fd0" stroke-width="2"/><text x="%d" y="%d" dominant-baseline="middle">training loss (per step)</text>`+"\n", lx, ly, lx+24, ly, lx+30, ly)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#e07020" stroke-width="2.5"/><text x="%d" y="%d" dominant-baseline="middle">validation loss</text>`+"\n", lx, ly+20, lx+24, ly+20, lx+30, ly+20)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep rounds a raw tick interval up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// describeShape is the model and batch shape in a few words, for titles;
// vocab is the model's.
func describeShape(tr *minigpt.Trainer, vocab *minigpt.Vocab) string {
	c := tr.Model().Config()
	s := fmt.Sprintf("%d layers, %d heads, width %d, block %d, batch %d, lr %g",
		c.Layers, c.Heads, c.EmbedDim, c.BlockSize, tr.Config().BatchSize, tr.Config().LR)
	if cli.IsBPE(vocab) {
		s += fmt.Sprintf(", BPE of %d tokens", vocab.Size())
	}
	return s
}
