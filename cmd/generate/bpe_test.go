package main

// This file holds the tests of generating with a BPE model: a
// version-3 checkpoint read and sampled, -explain and -logprobs with
// tokens that are part of a character, -logit-bias by a token's text,
// -info and the speed line.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/clitest"
)

// tokenID returns the id of the token whose text is text, or fails.
func tokenID(t *testing.T, vocab *minigpt.Vocab, text string) int {
	t.Helper()
	for id := range vocab.Size() {
		if vocab.Token(id) == text {
			return id
		}
	}
	t.Fatalf("no token %q in %s", text, vocab)
	return -1
}

// -explain on a BPE model: each line's token is the library's, quoted
// as a string ("\xc3" for the first byte of a character), with the
// library's probability; a sample at temperature 2 from a model as
// initialised draws many tokens that are part of a character.
func TestBPEExplain(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	out, errOut, code := runCLI(t, "-model", path, "-prompt", "naïve ", "-explain", "-explain-top", "3", "-temperature", "2", "-n", "40", "-seed", "7")
	if code != 0 {
		t.Fatal(errOut)
	}
	res, err := c.Model.Complete(context.Background(), c.Vocab, "naïve ", minigpt.GenerateOptions{MaxNewTokens: 40, Temperature: 2, Seed: 7, Trace: true, TraceTopN: 3})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2+40+1 || !strings.HasPrefix(lines[1], "  pos  token ") || lines[len(lines)-1] != fmt.Sprintf("text %q (length)", "naïve "+res[0].Text) {
		t.Fatalf("%d lines, header %q, last %q", len(lines), lines[1], lines[len(lines)-1])
	}
	partial := 0
	for i, s := range res[0].Steps {
		tok := c.Vocab.Token(s.Chosen.ID)
		prefix := fmt.Sprintf("%5d  %-6s %6.1f%%", s.Pos, strconv.Quote(tok), 100*math.Exp(s.Logprob))
		if !strings.HasPrefix(lines[2+i], prefix) {
			t.Errorf("line %d %q: want it to start %q", i, lines[2+i], prefix)
		}
		if strings.Contains(strconv.Quote(tok), `\x`) {
			partial++
		}
		for _, cand := range s.Top {
			if q := strconv.Quote(c.Vocab.Token(cand.ID)); !strings.Contains(lines[2+i], q) {
				t.Errorf("line %d %q lacks the candidate %s", i, lines[2+i], q)
			}
		}
	}
	if partial < 3 {
		t.Errorf("only %d of 40 tokens are part of a character: the case is not tested", partial)
	}
}

// -logprobs on a BPE model: each line gives the token's text and bytes
// (which a token that is part of a character needs) and no "char".
func TestBPELogprobs(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	out, errOut, code := runCLI(t, "-model", path, "-logprobs", "2", "-n", "12", "-temperature", "2", "-seed", "7")
	if code != 0 {
		t.Fatal(errOut)
	}
	res, err := c.Model.Complete(context.Background(), c.Vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 12, Temperature: 2, Seed: 7, Trace: true, TraceTopN: 2})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for i := 0; i < 12 && sc.Scan(); i++ {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		s := res[0].Steps[i]
		tok := c.Vocab.Token(s.Chosen.ID)
		var b []any
		for _, x := range []byte(tok) {
			b = append(b, float64(x))
		}
		if _, ok := line["char"]; ok || line["id"] != float64(s.Chosen.ID) || fmt.Sprint(line["bytes"]) != fmt.Sprint(b) {
			t.Errorf("line %d: %s; the library's token %d %q", i, sc.Text(), s.Chosen.ID, tok)
		}
	}
}

// -logit-bias TEXT=BIAS names the token whose text is exactly TEXT: +100
// forces it; -100 bans it as #ID does; text that no token has is refused
// with the tokens it encodes to.
func TestBPELogitBiasByText(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	keeper := tokenID(t, c.Vocab, " keeper")
	out, errOut, code := runCLI(t, "-model", path, "-logit-bias", " keeper=100", "-n", "3", "-prompt", "the")
	if code != 0 || out != "the keeper keeper keeper\n" {
		t.Errorf("forcing \" keeper\": exit %d, %q (%s)", code, out, errOut)
	}
	byID, _, _ := runCLI(t, "-model", path, "-logit-bias", fmt.Sprintf("#%d=100", keeper), "-n", "3", "-prompt", "the")
	if byID != out {
		t.Errorf("#%d=100 gave %q, \" keeper=100\" %q", keeper, byID, out)
	}
	// Banning: the CLI's text is the library's with the bias on the id.
	the := tokenID(t, c.Vocab, " the")
	got, errOut, code := runCLI(t, "-model", path, "-logit-bias", " the=-100", "-n", "30", "-greedy")
	res, err := c.Model.Complete(context.Background(), c.Vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 30, Greedy: true, LogitBias: map[int]float64{the: -100}})
	if err != nil || code != 0 || got != "the "+res[0].Text+"\n" {
		t.Errorf("banning \" the\": exit %d (%s), %q; library %q (%v)", code, errOut, got, res[0].Text, err)
	}
	for _, text := range []string{"é", "zzzq"} {
		ids, _ := c.Vocab.Encode(text)
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s #%d", strconv.Quote(c.Vocab.Token(id)), id))
		}
		want := fmt.Sprintf("-logit-bias %s=5: unusable text: no token's text is exactly %q; it encodes as %d tokens: %s", text, text, len(ids), strings.Join(parts, ", "))
		out, errOut, code := runCLI(t, "-model", path, "-logit-bias", text+"=5")
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("-logit-bias %s=5: exit %d, %q; want 2 and %q", text, code, errOut, want)
		}
	}
}

// -info names the tokenizer of a version-3 checkpoint; the speed line
// counts tokens and the characters they make.
func TestBPEInfoAndSpeed(t *testing.T) {
	path, c := clitest.BPECheckpoint(t)
	out, errOut, code := runCLI(t, "-model", path, "-info")
	want := "vocabulary: byte-level BPE, 300 tokens (44 merges) (tokenize -model " + path + " -merges lists them)\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("-info: exit %d (%s):\n%s\nwant the line %q", code, errOut, out, want)
	}
	out, errOut, code = runCLI(t, "-model", path, "-n", "25", "-seed", "2")
	res, err := c.Model.Complete(context.Background(), c.Vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 25, Seed: 2})
	if err != nil || code != 0 || out != "the "+res[0].Text+"\n" {
		t.Fatalf("exit %d, %q; the library's %q (%v)", code, out, res[0].Text, err)
	}
	wantSpeed := fmt.Sprintf("25 tokens, %d characters, in ", len([]rune(res[0].Text)))
	if !strings.HasPrefix(errOut, wantSpeed) || !strings.Contains(errOut, " tokens/s, ") || !strings.HasSuffix(errOut, " characters/s)\n") {
		t.Errorf("speed line %q, want %q…", errOut, wantSpeed)
	}
}
