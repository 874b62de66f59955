package server

// Helpers for the tests of models over BPE tokens: a small model trained
// on text with two-, three- and four-byte characters, servers with it,
// and GPT-2's files in miniature.

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"example.org/minigpt"
)

// bpeText mixes Lantern Bay with words of two-, three- and four-byte
// characters, rare enough that 300 tokens leave most of them in pieces.
var bpeText = strings.Repeat("the lamp keeper walks the shore at dusk. the boats come home when the lantern glows. "+
	"a naïve gull ate the café’s bread — “quoted” 🙂 ", 16)

// bpeServed is a BPE vocabulary of 300 tokens learnt from bpeText, and a
// model over it trained for 150 steps.
var bpeServed = sync.OnceValues(func() (*minigpt.Model, *minigpt.Vocab) {
	v, err := minigpt.NewBPEVocab(context.Background(), bpeText, 300)
	if err != nil {
		panic(err)
	}
	d, err := minigpt.NewDataset(bpeText, v, 16)
	if err != nil {
		panic(err)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: v.Size(), BlockSize: 16, EmbedDim: 32, Heads: 2, Layers: 2}, 3)
	if err != nil {
		panic(err)
	}
	tc := minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.EvalBatches = 150, 8, 2
	tr, err := minigpt.NewTrainer(m, d, tc)
	if err != nil {
		panic(err)
	}
	if err := tr.Run(context.Background(), nil); err != nil {
		panic(err)
	}
	tr.Close()
	return m, v
})

// withBPE adds the BPE model, as "bpe", after the embedded one.
func withBPE(c *Config) {
	m, v := bpeServed()
	c.Models = append(c.Models, Model{Name: "bpe", Model: m, Vocab: v})
}

// tokenBytes reads a token's form in a per-token field back into its
// bytes: "bytes:" and \xNN escapes, or the text itself.
func tokenBytes(t testing.TB, form string) []byte {
	t.Helper()
	hexes, ok := strings.CutPrefix(form, "bytes:")
	if !ok {
		if !utf8.ValidString(form) {
			t.Fatalf("form %q is not valid UTF-8", form)
		}
		return []byte(form)
	}
	var out []byte
	for hexes != "" {
		if len(hexes) < 4 || hexes[:2] != `\x` {
			t.Fatalf("form %q: bad byte escape at %q", form, hexes)
		}
		b, err := strconv.ParseUint(hexes[2:4], 16, 8)
		if err != nil {
			t.Fatalf("form %q: %v", form, err)
		}
		out = append(out, byte(b))
		hexes = hexes[4:]
	}
	return out
}

// validUTF8 is b as a response writes it: each byte that begins no valid
// character replaced by U+FFFD.
func validUTF8(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.WriteRune(r) // RuneError is U+FFFD
		b = b[n:]
	}
	return s.String()
}

// gpt2Files is GPT-2's encoder.json and vocab.bpe in miniature: the 256
// bytes under GPT-2's ids (its byte-to-unicode table: the printable bytes
// '!'..'~', '¡'..'¬' and '®'..'ÿ' first, standing for themselves, then
// the others in byte order, standing for U+0100 on) and three merges,
// "Ġ t" (256), "h e" (257) and "Ġt he" (258).
func gpt2Files() fstest.MapFS {
	enc := map[string]int{}
	next, other := 0, rune(0x100)
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			enc[string(rune(b))] = next
			next++
		}
	}
	for b := range 256 {
		if !(b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae) {
			enc[string(other)] = next
			next, other = next+1, other+1
		}
	}
	enc["Ġt"], enc["he"], enc["Ġthe"] = 256, 257, 258
	j, _ := json.Marshal(enc)
	return fstest.MapFS{
		"encoder.json": {Data: j},
		"vocab.bpe":    {Data: []byte("#version: 0.2\nĠ t\nh e\nĠt he\n")},
	}
}
