package minigpt

// Models over BPE tokens: the vocabulary and dataset, checkpoints and
// safetensors files that carry the tokenizer, and generation where one
// token is several characters or part of one.

import (
	"bytes"
	"context"
	"encoding/binary"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// bpeText mixes Lantern Bay with words of two- and three-byte characters.
var bpeText = strings.Repeat(lanternBay1+"naïve café über straße — “quoted” ", 12)

// bpeModel returns a BPE vocabulary of 300 tokens learnt from bpeText, a
// model over it trained for steps steps, and the dataset.
var bpeModel = sync.OnceValues(func() (*Trainer, error) {
	v, err := NewBPEVocab(context.Background(), bpeText, 300)
	if err != nil {
		return nil, err
	}
	d, err := NewDataset(bpeText, v, 16)
	if err != nil {
		return nil, err
	}
	m, err := NewModel(Config{VocabSize: v.Size(), BlockSize: 16, EmbedDim: 32, Heads: 2, Layers: 2}, 3)
	if err != nil {
		return nil, err
	}
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches = 150, 8, 2
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		return nil, err
	}
	return tr, tr.Run(context.Background(), nil)
})

func trainedBPE(t *testing.T) (*Model, *Vocab, *Trainer) {
	t.Helper()
	tr, err := bpeModel()
	if err != nil {
		t.Fatal(err)
	}
	return tr.Model(), tr.data.Vocab, tr
}

// The merges are learnt from the training part only: a word that appears
// only in the last 10% of the text never becomes a token.
func TestNewBPEVocabLearnsFromTheTrainingPart(t *testing.T) {
	text := strings.Repeat(lanternBay1, 9) + strings.Repeat("zyx", 1307)[:len(lanternBay1)]
	if got := trainSplit(text); got != len(text)*9/10 {
		t.Fatalf("split at %d, want %d", got, len(text)*9/10)
	}
	v, err := NewBPEVocab(context.Background(), text, 280)
	if err != nil {
		t.Fatal(err)
	}
	for id := 256; id < v.Size(); id++ {
		if tok := v.Token(id); strings.ContainsAny(tok, "zyx") {
			t.Errorf("token %d %q holds a letter of the validation part", id, tok)
		}
	}
	if v.Size() != 280 || !strings.Contains(v.String(), "byte-level BPE, 280 tokens") {
		t.Errorf("String() = %q", v.String())
	}
	for _, size := range []int{255, 1<<17 + 1} {
		if _, err := NewBPEVocab(context.Background(), text, size); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}

// A BPE dataset's parts are the text split at its 90% character, each
// encoded apart: they decode back to the two halves exactly.
func TestBPEDatasetSplitsTheText(t *testing.T) {
	_, v, tr := trainedBPE(t)
	d := tr.data
	k := utf8.RuneCountInString(bpeText) * 9 / 10
	split := len(string([]rune(bpeText)[:k]))
	train, err := v.Decode(toInts(d.Train))
	if err != nil {
		t.Fatal(err)
	}
	val, err := v.Decode(toInts(d.Val))
	if err != nil {
		t.Fatal(err)
	}
	if train != bpeText[:split] || val != bpeText[split:] {
		t.Fatalf("the parts decode to %d and %d bytes; the text splits into %d and %d", len(train), len(val), split, len(bpeText)-split)
	}
	if len(d.Train) >= len([]rune(bpeText[:split])) {
		t.Errorf("%d tokens for %d characters: no compression", len(d.Train), k)
	}
	sum := hashText(bpeText)
	if got := (&Dataset{Vocab: v, Train: d.Train, Val: d.Val}).textSHA256(); got != sum {
		t.Error("the fingerprint from the tokens differs from the text's")
	}
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// A BPE model's checkpoint is format version 3 and reads back to the same
// tokenizer, weights and run; its safetensors file is format 2.
func TestBPECheckpointRoundTrips(t *testing.T) {
	m, v, tr := trainedBPE(t)
	var b bytes.Buffer
	if err := WriteCheckpoint(&b, tr.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(b.Bytes()[8:]); got != 3 {
		t.Errorf("format version %d, want 3", got)
	}
	c, err := ReadCheckpoint(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Vocab.equal(v) || !slices.Equal(c.Model.slab, m.slab) || c.Step != tr.Step() {
		t.Fatal("the checkpoint read back differs")
	}
	if _, err := ResumeTrainer(c, tr.data); err != nil {
		t.Errorf("resume: %v", err)
	}
	// Damage in the tokenizer's bytes is caught (by the checksum).
	bad := slices.Clone(b.Bytes())
	bad[headerSize+10] ^= 1
	if _, err := ReadCheckpoint(bytes.NewReader(bad)); err == nil {
		t.Error("a damaged tokenizer section was accepted")
	}
	b.Reset()
	if err := WriteSafetensors(&b, c.WeightsOnly(), ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`"minigpt.format":"2"`)) || !bytes.Contains(b.Bytes(), []byte(`"minigpt.tokenizer":`)) {
		t.Error("the safetensors header lacks format 2 and the tokenizer")
	}
	s, err := ReadCheckpoint(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Vocab.equal(v) || !slices.Equal(s.Model.slab, m.slab) {
		t.Fatal("the safetensors file read back differs")
	}
}

// Streamed text never ends inside a character; the parts join to the
// whole text; a seeded completion is the same alone and in a Batch.
func TestBPEStreamingAndBatching(t *testing.T) {
	m, v, _ := trainedBPE(t)
	b, err := NewBatch(m, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for seed := range uint64(6) {
		var parts []string
		o := GenerateOptions{MaxNewTokens: 60, N: 2, Seed: seed, Temperature: 1.3,
			Stream: func(c *Completion) error {
				if c.Index == 0 {
					parts = append(parts, c.Text)
				}
				return nil
			}}
		alone, err := m.Complete(context.Background(), v, "naïve ", o)
		if err != nil {
			t.Fatal(err)
		}
		// No boundary between parts falls inside a character that the
		// whole text holds (a lone lead byte is no character).
		full, at := alone[0].Text, 0
		for i, p := range parts[:len(parts)-1] {
			at += len(p)
			for start := max(0, at-utf8.UTFMax+1); start < at; start++ {
				if r, n := utf8.DecodeRuneInString(full[start:]); r != utf8.RuneError && start+n > at {
					t.Errorf("seed %d: streamed part %d %q ends inside %q", seed, i, p, r)
				}
			}
		}
		if got := strings.Join(parts, ""); got != full {
			t.Errorf("seed %d: the parts join to %q, the text is %q", seed, got, alone[0].Text)
		}
		if dec, _ := v.Decode(alone[0].IDs); dec != alone[0].Text {
			t.Errorf("seed %d: Text %q is not IDs decoded %q", seed, alone[0].Text, dec)
		}
		o.Stream = nil
		together, err := b.Complete(context.Background(), v, "naïve ", o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			if !slices.Equal(alone[i].IDs, together[i].IDs) || alone[i].Text != together[i].Text {
				t.Errorf("seed %d sample %d: batched %q, alone %q", seed, i, together[i].Text, alone[i].Text)
			}
		}
	}
}

// Stop strings are found in the text, across token boundaries and inside
// a token: the text ends right before the first occurrence, which the
// same sample without the stop string shows.
func TestBPEStopStringsMatchText(t *testing.T) {
	m, v, _ := trainedBPE(t)
	found := 0
	for _, stop := range []string{"he", "e k", "é", "r.", "a"} {
		for seed := range uint64(8) {
			o := GenerateOptions{MaxNewTokens: 80, Seed: seed, Temperature: 1.2}
			free, err := m.Complete(context.Background(), v, "the ", o)
			if err != nil {
				t.Fatal(err)
			}
			o.Stop = []string{stop}
			cut, err := m.Complete(context.Background(), v, "the ", o)
			if err != nil {
				t.Fatal(err)
			}
			want, finish := free[0].Text, "length"
			if i := strings.Index(want, stop); i >= 0 {
				want, finish = want[:i], "stop"
				found++
			}
			if cut[0].Text != want || cut[0].Finish != finish {
				t.Errorf("stop %q seed %d: %q (%s), want %q (%s)", stop, seed, cut[0].Text, cut[0].Finish, want, finish)
			}
			if dec, _ := v.Decode(cut[0].IDs); !strings.HasPrefix(want, dec) {
				t.Errorf("stop %q seed %d: IDs decode to %q, past the text %q", stop, seed, dec, want)
			}
		}
	}
	if found < 20 {
		t.Errorf("only %d of 40 samples met their stop string: the test checks little", found)
	}
}

// A constraint binds to the BPE tokens' bytes: samples match the pattern
// whatever tokens spell them.
func TestBPEConstraint(t *testing.T) {
	m, v, _ := trainedBPE(t)
	c, err := NewConstraint(v, "regex", `(the|a) (lamp|café|straße)( keeper)?\.`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Complete(context.Background(), v, "naïve ", GenerateOptions{MaxNewTokens: 30, N: 32, Temperature: 1.5, Constraint: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if !regexp.MustCompile(`^(the|a) (lamp|café|straße)( keeper)?\.$`).MatchString(g.Text) || g.Incomplete {
			t.Errorf("sample %d: %q", g.Index, g.Text)
		}
	}
}
