package main

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt"
)

func TestProgressLines(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.ckpt")
	_, stderr, err := runTrain(context.Background(), tinyArgs(out, "-steps", "40", "-eval-every", "15")...)
	if err != nil {
		t.Fatal(err)
	}
	// Not a terminal: a line every 40/20 = 2 steps and at every evaluation.
	for _, want := range []string{"step  2/40  loss", "step 15/40  loss", "val ", "steps/s", "ETA"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q", want)
		}
	}
	for _, unwanted := range []string{"step  1/40", "step 13/40", "\r"} {
		if strings.Contains(stderr, unwanted) {
			t.Errorf("progress has %q", unwanted)
		}
	}

	// On a terminal the line is rewritten in place; evaluations stay.
	var live bytes.Buffer
	r := newReporter(&live, 0, 3)
	r.live = true
	for step := 1; step <= 3; step++ {
		val := math.NaN()
		if step == 3 {
			val = 1.5
		}
		r.step(minigpt.Progress{Step: step, Loss: 2, ValLoss: val, LR: 1e-3})
	}
	r.finishLine()
	if s := live.String(); !strings.HasPrefix(s, "\rstep 1/3") || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 || !strings.Contains(s, "val 1.5000") {
		t.Fatalf("live output %q", s)
	}
}
