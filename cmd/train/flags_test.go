package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	stdout, _, err := runTrain(context.Background(), "-h")
	if !errors.Is(err, flag.ErrHelp) || exitCode(err, io.Discard) != 0 {
		t.Fatalf("-h: %v", err)
	}
	for _, name := range []string{"-corpus", "-steps", "-resume", "-keep-best", "-preset", "-weights-only", "(default 1200)"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("usage lacks %q", name)
		}
	}
}

func TestPreset(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want options
	}{
		{"defaults are the lessons' run", nil, options{steps: 1200, lr: 3e-3, batch: 32, block: 32, embd: 64, heads: 4, layers: 2, seed: 42, evalBatches: 8}},
		{"baby", []string{"-preset", "baby"}, options{steps: 2000, lr: 1e-3, batch: 12, block: 64, embd: 128, heads: 4, layers: 4, seed: 42, warmup: 100, cosine: true, minLR: 1e-4, gradClip: 1, weightDecay: 0.1, evalEvery: 100, evalBatches: 40}},
		{"explicit flags win", []string{"-layers", "2", "-preset", "baby", "-lr", "5e-4"}, options{steps: 2000, lr: 5e-4, batch: 12, block: 64, embd: 128, heads: 4, layers: 2, seed: 42, warmup: 100, cosine: true, minLR: 1e-4, gradClip: 1, weightDecay: 0.1, evalEvery: 100, evalBatches: 40}},
		// The values of nanoGPT's config/train_shakespeare_char.py and
		// its train.py defaults (grad_clip, weight_decay; its model ties
		// the head), and the quick look the preset's -h suggests.
		{"shakespeare-char", []string{"-preset", "shakespeare-char"}, options{steps: 5000, lr: 1e-3, batch: 64, block: 256, embd: 384, heads: 6, layers: 6, tied: true, seed: 42, warmup: 100, cosine: true, minLR: 1e-4, gradClip: 1, weightDecay: 0.1, evalEvery: 250, evalBatches: 200}},
		{"shakespeare-char quick look", []string{"-preset", "shakespeare-char", "-batch", "8", "-steps", "500", "-eval-every", "100", "-eval-batches", "20"}, options{steps: 500, lr: 1e-3, batch: 8, block: 256, embd: 384, heads: 6, layers: 6, tied: true, seed: 42, warmup: 100, cosine: true, minLR: 1e-4, gradClip: 1, weightDecay: 0.1, evalEvery: 100, evalBatches: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := *o
			if got.tokenizer != tokenizerChar || got.vocabSize != defaultVocabSize {
				t.Errorf("-tokenizer %q -vocab-size %d, want the defaults %q and %d", got.tokenizer, got.vocabSize, tokenizerChar, defaultVocabSize)
			}
			got.preset, got.out, got.tokenizer, got.vocabSize = "", "", "", 0
			if got != tc.want {
				t.Fatalf("options %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

// -preset's help is generated from the preset table: every value shows.
func TestPresetHelpListsValues(t *testing.T) {
	stdout, _, _ := runTrain(context.Background(), "-h")
	stdout = strings.Join(strings.Fields(stdout), " ") // -h wraps its lines
	for _, p := range presets {
		for _, kv := range p.values {
			want := "-" + kv[0] + " " + kv[1]
			if kv[1] == "true" {
				want = "-" + kv[0]
			}
			if !strings.Contains(stdout, want) {
				t.Errorf("-h lacks preset %s's %q", p.name, want)
			}
		}
		for _, line := range p.notes {
			if !strings.Contains(stdout, line) {
				t.Errorf("-h lacks preset %s's note %q", p.name, line)
			}
		}
	}
}

// The quick look that -preset shakespeare-char's -h suggests is the one
// TestPreset parses.
func TestPresetQuickLookParses(t *testing.T) {
	p, _ := findPreset("shakespeare-char")
	note := strings.Join(p.notes, " ")
	_, quick, ok := strings.Cut(note, "for a quick look: ")
	if !ok {
		t.Fatalf("no quick look in %q", note)
	}
	args := append([]string{"-preset", p.name}, strings.Fields(strings.TrimSuffix(quick, "."))...)
	if _, _, err := parseFlags(args, io.Discard); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if want := "-batch 8 -steps 500 -eval-every 100 -eval-batches 20."; quick != want {
		t.Errorf("the quick look is %q; TestPreset checks %q", quick, want)
	}
}
