package minigpt

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLanternBayIsTheSeedsCorpus(t *testing.T) {
	if n := len(LanternBay); n != 10020 {
		t.Fatalf("corpus has %d characters, the lessons' has 10020", n)
	}
	v, err := NewVocab(LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	// sorted(set(CORPUS)) of the lessons, printed by the NumPy reference.
	if got, want := string(v.chars), " .abcdefghiklmnoprstuvwy"; got != want {
		t.Fatalf("vocabulary %q, want %q", got, want)
	}
	d, err := NewDataset(LanternBay, nil, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 9018 || len(d.Val) != 1002 {
		t.Fatalf("split %d/%d, the lessons' int(len*0.9) gives 9018/1002", len(d.Train), len(d.Val))
	}
}

func TestVocabEncodeDecode(t *testing.T) {
	v, err := NewVocab("bca")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := v.Encode("abcab")
	if err != nil || len(ids) != 5 || ids[0] != 0 || ids[2] != 2 {
		t.Fatalf("Encode = %v, %v; want sorted ids [0 1 2 0 1]", ids, err)
	}
	_, err = v.Encode("abxc")
	if !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), `'x' (U+0078) at character 2 (counting from 0)`) {
		t.Fatalf("unknown character: %v", err)
	}
	if _, err := v.Decode([]int{0, 3}); !errors.Is(err, ErrBadText) || !strings.HasPrefix(err.Error(), "decode: ") || !strings.Contains(err.Error(), "token id 3 at index 1 (counting from 0)") {
		t.Fatalf("Decode of an out-of-range id: %v", err)
	}
	if _, err := v.Decode([]int{-1}); !errors.Is(err, ErrBadText) {
		t.Fatal("Decode accepted -1")
	}
}

// Fine-tuning encodes new text with a model's vocabulary: the first
// character outside it is named with its byte offset (here after
// multi-byte characters, so the byte offset 6 differs from the character
// position 4).
func TestDatasetWithVocabNamesUnknownCharacter(t *testing.T) {
	v, err := NewVocab("aéb ")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewDataset("éé aZb"+strings.Repeat("ab ", 40), v, 4)
	if !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), "'Z' (U+005A) at character 4 (counting from 0)") {
		t.Fatalf("NewDatasetWithVocab = %v, want ErrBadText naming 'Z' at character 4", err)
	}
	if _, err := NewDataset("éé ab"+strings.Repeat("ab ", 40), v, 4); err != nil {
		t.Fatalf("text within the vocabulary: %v", err)
	}
}

func TestBadCorpora(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string
	}{
		{"empty", "", "empty text"},
		{"invalid UTF-8", "hello \xff world", "not valid UTF-8 (byte offset 6) at character 6 (counting from 0)"},
		{"truncated rune", strings.Repeat("ab", 40) + "\xe6\x97", "not valid UTF-8 (byte offset 80) at character 80 (counting from 0)"},
		{"too short", "abcdefgh", "block size 32 needs at least 34"},
		{"shorter than block size + 2", strings.Repeat("xy", 16), "needs at least 34"},
		{"one distinct character", strings.Repeat("a", 1000), "only 1 distinct character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDataset(tc.text, nil, 32)
			if !errors.Is(err, ErrBadText) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewDataset error = %v, want ErrBadText mentioning %q", err, tc.want)
			}
		})
	}
}

// A corpus of accented and CJK characters goes through the vocabulary,
// training, a checkpoint and generation without losing a character.
func TestNonASCIICorpusRoundTrip(t *testing.T) {
	text := strings.Repeat("café crème, 東京の夜。naïve œuvre — 日本語テキスト. ", 30)
	d, err := NewDataset(text, nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	chars := d.Vocab.chars
	if !utf8.ValidString(string(chars)) || d.Vocab.Size() != len(runeSet(text)) {
		t.Fatalf("vocabulary %q does not hold each distinct character once", string(chars))
	}
	ids, _ := d.Vocab.Encode(text)
	if back, _ := d.Vocab.Decode(ids); back != text {
		t.Fatal("encode/decode does not round-trip")
	}
	cfg := Config{VocabSize: d.Vocab.Size(), BlockSize: 16, EmbedDim: 16, Heads: 2, Layers: 1}
	m, _ := NewModel(cfg, 3)
	tc := DefaultTrainConfig()
	tc.Steps, tc.BatchSize = 5, 4
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCheckpoint(&buf, tr.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCheckpoint(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Vocab.chars) != string(chars) {
		t.Fatalf("checkpoint vocabulary %q, want %q", string(c.Vocab.chars), string(chars))
	}
	out := completed(t, c.Model, c.Vocab, "東京の", GenerateOptions{MaxNewTokens: 30, Temperature: 1, Seed: 1})
	if !strings.HasPrefix(out, "東京の") || utf8.RuneCountInString(out) != 33 || !utf8.ValidString(out) {
		t.Fatalf("generated %q: want the prompt and 30 valid characters", out)
	}
	for _, r := range out {
		if !strings.ContainsRune(text, r) {
			t.Fatalf("generated %q, which is not in the corpus", r)
		}
	}
}

func runeSet(s string) map[rune]bool {
	m := map[rune]bool{}
	for _, r := range s {
		m[r] = true
	}
	return m
}

func TestVocabFromCharsValidates(t *testing.T) {
	for _, chars := range [][]rune{{}, {'b', 'a'}, {'a', 'a'}, {'a', 0xD800}, {'a', -1}} {
		if _, err := vocabFromChars(chars); err == nil {
			t.Errorf("vocabFromChars(%q) accepted", chars)
		}
	}
}

// FuzzNewDataset feeds arbitrary bytes as a corpus: it must never panic,
// must refuse invalid UTF-8, and whatever it accepts must decode back to
// the text.
func FuzzNewDataset(f *testing.F) {
	f.Add("the lamp keeper walks the shore at dusk. ", 4)
	f.Add("héllo wörld 日本語 ", 3)
	f.Add("a\xffb", 1)
	f.Add("", 2)
	f.Fuzz(func(t *testing.T, text string, block int) {
		d, err := NewDataset(text, nil, block)
		if err != nil {
			return
		}
		if !utf8.ValidString(text) {
			t.Fatalf("accepted invalid UTF-8 %q", text)
		}
		ids := make([]int, 0, len(d.Train)+len(d.Val))
		for _, id := range append(append([]int32(nil), d.Train...), d.Val...) {
			ids = append(ids, int(id))
		}
		back, err := d.Vocab.Decode(ids)
		if err != nil || back != text {
			t.Fatalf("round trip: %q, %v", back, err)
		}
	})
}
