package main

// This file holds the tests of scoring with a BPE model: bits per byte
// beside bits per token, against a hand calculation and against
// Model.Score, and the JSON lines' bytes and text offsets; and the bits
// per byte of a character model on a text beyond ASCII.

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
)

// bpeEvalText is longer than the test model's 16-token window and holds
// characters of two, three and four bytes, some of which the 300 tokens
// split.
const bpeEvalText = "the keeper rings the bell: naïve café, über straße — “quoted” 🙂; the boats come home when the lantern glows. ünïcödé"

// figure reads a summary line's first number.
func figure(t *testing.T, out, label string) float64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, label); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %q line in:\n%s", label, out)
	return 0
}

// A model whose every weight is zero gives every one of its 300 tokens
// the probability 1/300 wherever it is: each scored token costs log2 300
// bits, and the bits per byte are that times the tokens scored over
// their bytes (the text's, less the first token's).
func TestBPEBitsPerByteByHand(t *testing.T) {
	_, c := clitest.BPECheckpoint(t)
	clear(c.Model.Params())
	model := writeCheckpoint(t, c)
	text := writeFile(t, "t.txt", bpeEvalText)
	ids, _ := c.Vocab.Encode(bpeEvalText)
	first := len(c.Vocab.Token(ids[0]))
	stdout, stderr, code := runEval(t, "-model", model, "-text", text)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	perToken := math.Log2(300)
	perByte := float64(len(ids)-1) * perToken / float64(len(bpeEvalText)-first)
	for _, f := range []struct {
		label string
		want  float64
	}{{"bits/token:", perToken}, {"bits/byte:", perByte}, {"loss:", math.Log(300)}, {"perplexity:", 300}} {
		if got := figure(t, stdout, f.label); math.Abs(got-f.want) > 5e-6*max(1, f.want) {
			t.Errorf("%s %v, want %v", f.label, got, f.want)
		}
	}
	head := "text:       " + text + ", " + strconv.Itoa(utf8.RuneCountInString(bpeEvalText)) + " characters, " + strconv.Itoa(len(bpeEvalText)) + " bytes, " + strconv.Itoa(len(ids)) + " tokens (byte-level BPE, 300 tokens (44 merges), "
	if !strings.HasPrefix(stdout, head) || !strings.Contains(stdout, "context window 16 tokens") || strings.Contains(stdout, "bits/char") {
		t.Errorf("summary:\n%s\nwant it to start %q", stdout, head)
	}
}

// On a model with weights as initialised, the bits per token and per
// byte are Model.Score's surprisals over the tokens and over the bytes,
// at every stride.
func TestBPEBitsPerByteMatchScore(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	text := writeFile(t, "t.txt", bpeEvalText)
	ids, _ := c.Vocab.Encode(bpeEvalText)
	for _, stride := range []int{0, 1, 5} {
		stdout, stderr, code := runEval(t, "-model", path, "-text", text, "-stride", strconv.Itoa(stride))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		steps, err := c.Model.Score(context.Background(), ids, stride, 0)
		if err != nil {
			t.Fatal(err)
		}
		bits := 0.0
		for _, s := range steps {
			bits -= math.Log2(math.Exp(s.Chosen.Logprob))
		}
		bytes := len(bpeEvalText) - len(c.Vocab.Token(ids[0]))
		if got, want := figure(t, stdout, "bits/byte:"), bits/float64(bytes); math.Abs(got-want) > 5e-7 {
			t.Errorf("stride %d: bits/byte %v, from Score %v", stride, got, want)
		}
		if got, want := figure(t, stdout, "bits/token:"), bits/float64(len(steps)); math.Abs(got-want) > 5e-7 {
			t.Errorf("stride %d: bits/token %v, from Score %v", stride, got, want)
		}
	}
}

// -jsonl on a BPE model: the lines' bytes follow one another through the
// text after its first token, and each text_offset is the character that
// holds the token's first byte, found here from the text's characters.
func TestBPEJSONLOffsets(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	text := writeFile(t, "t.txt", bpeEvalText)
	stdout, stderr, code := runEval(t, "-model", path, "-text", text, "-jsonl", "-top", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	charOf := make([]int, len(bpeEvalText)) // byte -> the character that holds it
	n := 0
	for i, r := range bpeEvalText {
		for b := i; b < i+utf8.RuneLen(r); b++ {
			charOf[b] = n
		}
		n++
	}
	ids, _ := c.Vocab.Encode(bpeEvalText)
	at := len(c.Vocab.Token(ids[0]))
	inside := 0
	toks := decodeLines(t, stdout)
	if len(toks) != len(ids)-1 {
		t.Fatalf("%d lines for %d tokens", len(toks), len(ids))
	}
	for i, tk := range toks {
		b := make([]byte, len(tk.Bytes))
		for j, x := range tk.Bytes {
			b[j] = byte(x)
		}
		if tk.Pos != i+1 || !strings.HasPrefix(bpeEvalText[at:], string(b)) || tk.TextOffset == nil || *tk.TextOffset != charOf[at] {
			t.Fatalf("line %d: %+v; the text at byte %d (character %d) is %q", i, tk, at, charOf[at], bpeEvalText[at:min(at+8, len(bpeEvalText))])
		}
		if utf8.ValidString(string(b)) && tk.Token != string(b) {
			t.Errorf("line %d: token %q, bytes %q", i, tk.Token, b)
		}
		if !utf8.RuneStart(bpeEvalText[at]) {
			inside++
		}
		if len(tk.Top) != 2 || tk.Top[0].Bytes == nil {
			t.Errorf("line %d: top %+v", i, tk.Top)
		}
		at += len(b)
	}
	if at != len(bpeEvalText) || inside < 3 {
		t.Errorf("the lines cover %d of %d bytes; %d tokens start inside a character", at, len(bpeEvalText), inside)
	}
}

// A character model on a text beyond ASCII also reports bits per byte,
// by hand: "abéabéa" under a:b:é = 1:2:4 scores b é a b é a, 8 bytes.
func TestCharBitsPerByteBeyondASCII(t *testing.T) {
	model := biasOnlyModel(t, "abé", []float64{0, math.Ln2, 2 * math.Ln2})
	text := writeFile(t, "t.txt", "abéabéa")
	stdout, stderr, code := runEval(t, "-model", model, "-text", text)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	bits := -2 * (math.Log2(2.0/7) + math.Log2(4.0/7) + math.Log2(1.0/7))
	if got := figure(t, stdout, "bits/byte:"); math.Abs(got-bits/8) > 5e-7 {
		t.Errorf("bits/byte %v, want %v", got, bits/8)
	}
	if got := figure(t, stdout, "bits/char:"); math.Abs(got-bits/6) > 5e-7 {
		t.Errorf("bits/char %v, want %v", got, bits/6)
	}
}

func writeCheckpoint(t *testing.T, c *minigpt.Checkpoint) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := minigpt.SaveCheckpoint(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}
