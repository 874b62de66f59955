package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// runEval runs the command and returns its stdout, stderr and exit status.
func runEval(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := cli.ExitCode("eval", err, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// figures reads the summary's loss, perplexity and bits per character.
func figures(t *testing.T, out string) (loss, ppl, bpc float64) {
	t.Helper()
	get := func(label string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `\s+([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q line in:\n%s", label, out)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return get("loss:"), get("perplexity:"), get("bits/char:")
}

func decodeLines(t *testing.T, out string) []tokenJSON {
	t.Helper()
	var toks []tokenJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var tk tokenJSON
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tk); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		toks = append(toks, tk)
	}
	return toks
}

// biasOnlyModel is a model whose every parameter is zero but the head's
// bias: every LayerNorm then outputs zeros, so the logits at every
// position are the bias, whatever the context, and each character's
// probability is softmax(bias) by hand.
func biasOnlyModel(t *testing.T, vocab string, bias []float64) string {
	t.Helper()
	v, err := minigpt.NewVocab(vocab)
	if err != nil {
		t.Fatal(err)
	}
	m, err := minigpt.NewModel(minigpt.Config{VocabSize: v.Size(), BlockSize: 4, EmbedDim: 4, Heads: 1, Layers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Params()
	clear(p)
	copy(p[len(p)-v.Size():], bias) // head_bias, the slab's last tensor (docs/checkpoint-format.md)
	path := filepath.Join(t.TempDir(), "bias.ckpt")
	if err := minigpt.SaveCheckpoint(path, &minigpt.Checkpoint{Model: m, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHandCheckedTinyCase scores "abcabca" under a model whose
// distribution is fixed at a:b:c = 1:2:4 at every position (the head bias
// 0, ln 2, ln 4): the six scored characters b c a b c a have probabilities
// 2/7, 4/7, 1/7 twice each, so the loss is ln 7 − (ln 1 + ln 2 + ln 4)/3 =
// ln 7 − ln 2 = ln 3.5, the perplexity exactly 3.5 and the bits per
// character log2 3.5 = 1.807355; each line's bits is −log2 of its
// probability. The text (7 characters) is longer than the block (4), so
// the windows slide too.
func TestHandCheckedTinyCase(t *testing.T) {
	model := biasOnlyModel(t, "abc", []float64{0, math.Ln2, 2 * math.Ln2})
	text := writeFile(t, "t.txt", "abcabca")
	for _, stride := range []string{"0", "1", "3"} {
		stdout, stderr, code := runEval(t, "-model", model, "-text", text, "-stride", stride, "-jsonl", "-top", "3")
		if code != 0 {
			t.Fatalf("stride %s: exit %d: %s", stride, code, stderr)
		}
		loss, ppl, bpc := figures(t, stderr)
		if math.Abs(loss-math.Log(3.5)) > 1e-6 || math.Abs(ppl-3.5) > 1e-6 || math.Abs(bpc-1.807355) > 1e-6 {
			t.Errorf("stride %s: loss %v perplexity %v bits %v; want ln 3.5 = 1.252763, 3.5, 1.807355", stride, loss, ppl, bpc)
		}
		toks := decodeLines(t, stdout)
		prob := map[string]float64{"a": 1.0 / 7, "b": 2.0 / 7, "c": 4.0 / 7}
		if len(toks) != 6 {
			t.Fatalf("stride %s: %d lines, want 6", stride, len(toks))
		}
		for i, tk := range toks {
			want := "abcabca"[i+1 : i+2]
			if tk.Pos != i+1 || tk.Token != want {
				t.Errorf("line %d: pos %d token %q, want %d %q", i, tk.Pos, tk.Token, i+1, want)
			}
			p := prob[want]
			if math.Abs(tk.Logprob-math.Log(p)) > 1e-12 || math.Abs(tk.Bits+math.Log2(p)) > 1e-12 {
				t.Errorf("line %d %q: logprob %v bits %v, want %v %v", i, want, tk.Logprob, tk.Bits, math.Log(p), -math.Log2(p))
			}
			if len(tk.Top) != 3 || tk.Top[0].Token != "c" || tk.Top[1].Token != "b" || tk.Top[2].Token != "a" {
				t.Errorf("line %d: top %+v, want c, b, a", i, tk.Top)
			}
		}
		// The context: windows of 4 moving by the stride; a character is
		// scored in the first window that predicts it.
		wantCtx := map[string][]int{"0": {1, 2, 3, 4, 1, 2}, "1": {1, 2, 3, 4, 4, 4}, "3": {1, 2, 3, 4, 2, 3}}[stride]
		for i, tk := range toks {
			if tk.Context != wantCtx[i] {
				t.Errorf("stride %s, line %d: context %d, want %d", stride, i, tk.Context, wantCtx[i])
			}
		}
	}
}

// TestFiguresMatchScoreAndLoss checks the command's figures and lines
// against the library on the embedded model: Score for every stride,
// and, with the default stride over a text of whole windows, the loss of
// those windows laid side by side (Model.Gradients).
func TestFiguresMatchScoreAndLoss(t *testing.T) {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	T := m.Config().BlockSize
	text := []rune(minigpt.LanternBay)[:4*T+1]
	path := writeFile(t, "lb.txt", string(text))
	ids, _ := vocab.Encode(string(text))
	for _, stride := range []int{0, 1, 7, T} {
		stdout, stderr, code := runEval(t, "-text", path, "-stride", strconv.Itoa(stride), "-jsonl")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		scores, err := m.Score(context.Background(), ids, stride, 0)
		if err != nil {
			t.Fatal(err)
		}
		mean := 0.0
		for _, s := range scores {
			mean -= s.Logprob / float64(len(scores))
		}
		loss, ppl, bpc := figures(t, stderr)
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"loss", loss, mean}, {"perplexity", ppl, math.Exp(mean)}, {"bits/char", bpc, mean / math.Ln2}} {
			if math.Abs(f.got-f.want) > 5e-7 { // printed with 6 decimals
				t.Errorf("stride %d: %s %v, from Score %v", stride, f.name, f.got, f.want)
			}
		}
		toks := decodeLines(t, stdout)
		if len(toks) != len(scores) {
			t.Fatalf("stride %d: %d lines, %d scores", stride, len(toks), len(scores))
		}
		for i, tk := range toks {
			s := scores[i]
			if tk.Pos != s.Pos || tk.Token != string(text[s.Pos]) || tk.Logprob != s.Logprob || tk.Context != s.Context {
				t.Fatalf("stride %d, line %d: %+v, Score %+v", stride, i, tk, s)
			}
		}
		if stride != 0 {
			continue
		}
		// The mean loss over the four windows side by side.
		x, y := make([]int, 4*T), make([]int, 4*T)
		copy(x, ids[:4*T])
		copy(y, ids[1:])
		want, _, err := m.Gradients(x, y, 4, T)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(loss-want) > 5e-7 {
			t.Errorf("loss %v, Model.Gradients' loss %v", loss, want)
		}
	}
}

func TestSummaryWithoutJSONL(t *testing.T) {
	path := writeFile(t, "lb.txt", "the lamp keeper walks the harbour wall")
	stdout, stderr, code := runEval(t, "-text", path)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, s := range []string{"38 characters; 37 scored", "the embedded Lantern Bay model", "context window 32, stride 32", "nats per character"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("summary lacks %q:\n%s", s, stdout)
		}
	}
	figures(t, stdout)

	stdin = strings.NewReader("the lamp keeper walks the harbour wall")
	defer func() { stdin = os.Stdin }()
	piped, _, code := runEval(t, "-text", "-")
	if code != 0 || strings.Replace(piped, "standard input", path, 1) != stdout {
		t.Errorf("-text - (exit %d):\n%s\nwant as the file:\n%s", code, piped, stdout)
	}
}

func TestRefusals(t *testing.T) {
	ok := writeFile(t, "ok.txt", "the lamp")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no text", nil, "-text is required"},
		{"unknown char", []string{"-text", writeFile(t, "q.txt", "the Quay")}, `'Q' (U+0051) at character 4 (counting from 0) is not in the model's vocabulary, in "the Quay"; the model knows`},
		{"one char", []string{"-text", writeFile(t, "one.txt", "t")}, "needs at least 2 characters (the first has nothing to be predicted from), it has 1"},
		{"empty", []string{"-text", writeFile(t, "empty.txt", "")}, "it has 0"},
		{"bad utf8", []string{"-text", writeFile(t, "bad.txt", "the \xff")}, "not valid UTF-8"},
		{"negative stride", []string{"-text", ok, "-stride", "-1"}, `invalid value "-1" for flag -stride`},
		{"stride past the block", []string{"-text", ok, "-stride", "33"}, "context window holds 32 characters"},
		{"top without jsonl", []string{"-text", ok, "-top", "3"}, "give -jsonl too"},
		{"top too large", []string{"-text", ok, "-jsonl", "-top", "21"}, "[0, 20]"},
		{"missing file", []string{"-text", filepath.Join(t.TempDir(), "nope.txt")}, "no such file"},
		{"directory", []string{"-text", t.TempDir()}, "not a regular file"},
		{"bad model", []string{"-text", ok, "-model", ok}, "-model"},
		{"argument", []string{"-text", ok, "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runEval(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	stdout, _, code := runEval(t, "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"Usage: eval", "-stride", "-jsonl", "Exit status"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("-h lacks %q", s)
		}
	}
}

// -model takes a safetensors file as it comes (told by its content, not
// its name), and a file of neither format is refused naming the flag,
// the path and what each format starts with.
func TestModelAsItComes(t *testing.T) {
	m, v, _ := minigpt.DefaultModel()
	var buf bytes.Buffer
	if err := minigpt.WriteSafetensors(&buf, &minigpt.Checkpoint{Model: m, Vocab: v, Step: 1200}, "F64"); err != nil {
		t.Fatal(err)
	}
	st := writeFile(t, "lb.weights", buf.String())
	text := writeFile(t, "t.txt", "the lamp keeper walks the harbour wall")
	want, _, _ := runEval(t, "-text", text)
	got, errOut, code := runEval(t, "-text", text, "-model", st)
	if code != 0 || strings.SplitN(got, "\n", 3)[2] != strings.SplitN(want, "\n", 3)[2] {
		t.Errorf("-model %s: exit %d (%s):\n%s\nwant the embedded model's figures:\n%s", st, code, errOut, got, want)
	}
	junk := writeFile(t, "junk.ckpt", "PK\x03\x04 a zip file")
	_, errOut, code = runEval(t, "-text", text, "-model", junk)
	if code != 2 || !strings.HasPrefix(errOut, "eval: -model "+junk+": bad checkpoint: ") || !strings.Contains(errOut, `want "\x89GPT\r\n\x1a\n"`) || !strings.Contains(errOut, "safetensors file (an 8-byte header length, then '{')") {
		t.Errorf("-model %s: exit %d, %q", junk, code, errOut)
	}
}

// Progress goes to standard error only when asked for (or to a
// terminal), and never changes what standard output gets.
func TestProgress(t *testing.T) {
	// 40,080 characters: 20 pieces of 2,048 at the embedded model's block.
	text := writeFile(t, "bay.txt", strings.Repeat(minigpt.LanternBay, 4))
	plain, plainErr, code := runEval(t, "-text", text, "-jsonl")
	if code != 0 || strings.Contains(plainErr, "scoring") {
		t.Fatalf("without -progress: exit %d, stderr %q", code, plainErr)
	}
	out, errOut, code := runEval(t, "-text", text, "-jsonl", "-progress")
	if code != 0 || out != plain {
		t.Fatalf("-progress changed standard output (exit %d, %s)", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	n := 4*len([]rune(minigpt.LanternBay)) - 1
	// A line a tenth of the work, the last one done, then the summary.
	if len(lines) != 10+5 || !strings.HasPrefix(lines[0], "scoring "+text+": 1") ||
		!strings.HasPrefix(lines[9], "scoring "+text+": 100% ("+strconv.Itoa(n)+" of "+strconv.Itoa(n)+" characters)") ||
		!strings.HasSuffix(lines[9], ", done") || errOut[len(errOut)-len(plainErr):] != plainErr {
		t.Errorf("-progress wrote to standard error:\n%s", errOut)
	}
	for _, l := range lines[1:9] {
		if !strings.Contains(l, " left") {
			t.Errorf("a progress line without the time left: %q", l)
		}
	}
}

// A text of several lines: the position of a character the model does
// not know is also its line and column.
func TestUnknownCharLineAndColumn(t *testing.T) {
	text := writeFile(t, "play.txt", "ROMEO:\nBut soft, what light\nthrough yonder window {breaks}")
	_, errOut, code := runEval(t, "-text", text, "-model", "../../models/shakespeare.ckpt")
	want := `'{' (U+007B) at character 50 (counting from 0), line 3, column 23 is not in the model's vocabulary`
	if code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, %q; want %q", code, errOut, want)
	}
}
