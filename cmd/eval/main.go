// Command eval scores a text under a MiniGPT: how surprised the model is
// by each of its tokens (a character model's tokens are its characters).
// It prints the mean loss (nats per token), the perplexity and the bits
// per token, with the bits per byte for a BPE model (and for a character
// model on a text beyond ASCII): the surprisal of the scored tokens over
// their bytes, the figure on which models over different tokens compare.
// On request it writes every token's surprisal as JSON lines.
//
//	go run ./cmd/eval -text notes.txt                        # the embedded Lantern Bay model
//	go run ./cmd/eval -model shakespeare.ckpt -text val.txt -stride 64
//	go run ./cmd/eval -text notes.txt -jsonl -top 3 > surprisal.jsonl
//	echo -n "the lamp keeper" | go run ./cmd/eval -text -
//
// Every character but the first is predicted from the ones before it, as
// many as the model's context window holds. A text longer than the window
// is read in windows that move by -stride characters (Hugging Face's
// perplexity stride): the default, the window's own length, lays the
// windows side by side (the cheapest; the mean loss is then exactly the
// mean cross-entropy of those windows), and -stride 1 gives every character
// the most context the model can see. Each character is scored once, in
// the first window that predicts it (minigpt.Model.Score, called on
// pieces of the text so that a long one can show its progress and the
// time left on a terminal, or anywhere with -progress; pieces.go).
// -model takes minigpt's checkpoints and safetensors files alike.
//
// With -jsonl, standard output gets one JSON object per scored character,
//
//	{"pos":1,"token":"h","logprob":-0.0123,"bits":0.0177,"context":1,"top":[{"token":"h","logprob":-0.0123}]}
//
// (pos counts characters from 0; logprob is the natural log of the
// character's probability; bits is its surprisal, -logprob/ln 2; context
// is how many characters the prediction saw; top, with -top N, the N
// most probable characters there), and the summary goes to standard
// error. A BPE model's lines count tokens, and give each token's bytes
// (its "token" is no JSON string when it holds part of a character: there
// it has U+FFFD) and the character of the text that holds its first byte:
//
//	{"pos":9,"token":"�","bytes":[195],"text_offset":19,"logprob":-2.19,"bits":3.16,"context":9}
//
// Exit status (cli.ExitRule): 0 done; 2 refused before any work (a bad
// flag, a text or model that cannot be read, a character the model does
// not know); 1 failed while scoring or writing; 130 interrupted.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("eval", run) }

// maxTextBytes bounds -text: Score keeps every character's score, about
// 50 bytes each, so 8 MiB of text needs some 400 MB.
const maxTextBytes = 8 << 20

// maxTop bounds -top, as the server's logprobs.
const maxTop = 20

// stdin is what -text - reads; a variable so that tests can set it.
var stdin io.Reader = os.Stdin

type options struct {
	model, text     string
	stride, top     int
	jsonl, progress bool
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.StringVar(&o.text, "text", "", "score the UTF-8 text in this `file` (required); - reads standard input")
	fs.StringVar(&o.model, "model", "", "the model to score with: a checkpoint `file`, minigpt's own or a .safetensors one (told by its content; default: the embedded Lantern Bay model)")
	fs.IntVar(&o.stride, "stride", 0, "move the context window by this many tokens (characters, for a character model) over a text longer than it, 1 to the context length; 0 = the context length (windows side by side)")
	fs.BoolVar(&o.jsonl, "jsonl", false, "write every scored token's surprisal to standard output as a JSON line, and the summary to standard error")
	fs.IntVar(&o.top, "top", 0, fmt.Sprintf("with -jsonl, also list the `N` most probable tokens at each position (0..%d)", maxTop))
	fs.BoolVar(&o.progress, "progress", false, cli.ProgressUsage)
	return fs
}

// summary heads -h.
const summary = `Scores a text under a MiniGPT checkpoint (default: the embedded Lantern Bay
model): the mean loss in nats per token (a character model's tokens are its
characters), the perplexity and the bits per token, and for a BPE model or a
text beyond ASCII the bits per byte, the figure models over different tokens
compare on; with -jsonl, every token's surprisal as JSON lines.`

// run checks every write: output that did not arrive is a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.RunChecked(ctx, args, stdout, stderr, eval)
}

func eval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	if _, err := command.Parse(fs, args, stdout); err != nil {
		return err
	}
	switch {
	case o.text == "":
		return cli.Usagef("-text is required: the file to score (- reads standard input)")
	case o.stride < 0:
		return cli.BadValue(fs, "stride", "it must be 0 (the context length) or positive")
	case o.top < 0 || o.top > maxTop:
		return cli.BadValue(fs, "top", fmt.Sprintf("it must be in [0, %d]", maxTop))
	case o.top > 0 && !o.jsonl:
		return cli.Usagef("-top lists predictions in the JSON lines: give -jsonl too")
	}
	text, textName, err := readText(ctx, o.text)
	if err != nil {
		return err
	}
	po := cli.ProgressTo(stderr, o.progress)
	m, vocab, modelName, err := loadModel(o.model, po)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	isBPE := cli.IsBPE(vocab)
	unit := "characters"
	if isBPE {
		unit = "tokens"
	}
	block := m.Config().BlockSize
	if o.stride > block {
		return cli.BadValue(fs, "stride", fmt.Sprintf("the model's context window holds %d %s: the stride must be at most that", block, unit))
	}
	ids, err := vocab.Encode(text)
	if err != nil {
		return cli.Usagef("-text %s: %w", textName, cli.CheckText(text, vocab))
	}
	if len(ids) < 2 {
		return cli.Usagef("-text %s: scoring needs at least 2 %s (the first has nothing to be predicted from), it has %d", textName, unit, len(ids))
	}
	p := po.Start("scoring "+textName, unit, int64(len(ids)-1))
	scores, err := scoreInPieces(ctx, m, ids, o.stride, o.top, p)
	p.Done()
	if err != nil {
		return err
	}
	loss := meanLoss(scores)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return fmt.Errorf("the model gave a non-finite loss (%v): its weights are not usable", loss)
	}
	report := stdout
	if o.jsonl {
		if err := writeJSONL(stdout, scores, vocab, isBPE, ids, text); err != nil {
			return err
		}
		report = stderr
	}
	stride := cmp.Or(o.stride, block)
	scoredBytes := 0
	for _, s := range scores {
		scoredBytes += len(vocab.Token(s.Chosen.ID))
	}
	bitsPerByte := bitsPerByte(scores, scoredBytes)
	if !isBPE {
		fmt.Fprintf(report, "text:       %s, %d characters; %d scored (the first has no context)\n", textName, len(ids), len(scores))
		fmt.Fprintf(report, "model:      %s, %d parameters, context window %d, stride %d\n", modelName, m.Config().NumParams(), block, stride)
		fmt.Fprintf(report, "loss:       %.6f nats per character (the mean of -ln p)\n", loss)
		fmt.Fprintf(report, "perplexity: %.6f\n", math.Exp(loss))
		fmt.Fprintf(report, "bits/char:  %.6f\n", loss/math.Ln2)
		if scoredBytes != len(scores) {
			// Beyond ASCII a character is several bytes: the figure
			// a BPE model's compares with.
			fmt.Fprintf(report, "bits/byte:  %.6f (over the %d bytes of the scored characters)\n", bitsPerByte, scoredBytes)
		}
		return nil
	}
	fmt.Fprintf(report, "text:       %s, %d characters, %d bytes, %d tokens (%s, %.2f characters per token); %d scored (the first has no context)\n",
		textName, utf8.RuneCountInString(text), len(text), len(ids), vocab, float64(utf8.RuneCountInString(text))/float64(len(ids)), len(scores))
	fmt.Fprintf(report, "model:      %s, %d parameters, context window %d tokens, stride %d\n", modelName, m.Config().NumParams(), block, stride)
	fmt.Fprintf(report, "loss:       %.6f nats per token (the mean of -ln p)\n", loss)
	fmt.Fprintf(report, "perplexity: %.6f (per token)\n", math.Exp(loss))
	fmt.Fprintf(report, "bits/token: %.6f\n", loss/math.Ln2)
	fmt.Fprintf(report, "bits/byte:  %.6f (over the %d bytes of the scored tokens)\n", bitsPerByte, scoredBytes)
	return nil
}

// bitsPerByte is the surprisal of the scored tokens in bits, summed in
// order, over the bytes of their text: a figure that does not depend on
// how the text is cut into tokens.
func bitsPerByte(scores []minigpt.Step, bytes int) float64 {
	total := 0.0
	for _, s := range scores {
		total -= s.Logprob
	}
	return total / math.Ln2 / float64(bytes)
}

// meanLoss is the mean of -Logprob over scores, in nats, summed in order.
func meanLoss(scores []minigpt.Step) float64 {
	total := 0.0
	for _, s := range scores {
		total -= s.Logprob
	}
	return total / float64(len(scores))
}

// readText reads the -text file, or standard input for "-": valid UTF-8,
// at most maxTextBytes, without a leading byte-order mark.
func readText(ctx context.Context, path string) (text, name string, err error) {
	name = path
	if path == "-" {
		name = "standard input"
		b, rerr := cli.ReadAllContext(ctx, stdin, maxTextBytes)
		if ctx.Err() != nil {
			return "", "", rerr
		}
		if rerr != nil {
			return "", "", cli.Usagef("-text -: standard input: %w", rerr)
		}
		text = strings.TrimPrefix(string(b), "\uFEFF")
	} else if text, err = cli.ReadFile(path, maxTextBytes); err != nil {
		return "", "", cli.Usagef("-text %w", err)
	}
	if !utf8.ValidString(text) {
		return "", "", cli.Usagef("-text %s: %w", name, cli.CheckText(text, nil))
	}
	return text, name, nil
}

// loadModel loads the -model file, in either format, or the embedded
// model, and names it for the report.
func loadModel(path string, po cli.ProgressOut) (*minigpt.Model, *minigpt.Vocab, string, error) {
	if path == "" {
		m, v, err := minigpt.DefaultModel()
		return m, v, "the embedded Lantern Bay model", err
	}
	c, err := cli.LoadCheckpoint("model", path, po)
	if err != nil {
		return nil, nil, "", err
	}
	return c.Model, c.Vocab, path, nil
}

// tokenJSON is one scored token as a JSON line. A BPE model's token
// also has its bytes (a token that is part of a character is no JSON
// string) and its text offset, the character of the text that holds its
// first byte (counting from 0); a character model's token is the
// character at pos.
type tokenJSON struct {
	Pos        int       `json:"pos"`
	Token      string    `json:"token"`
	Bytes      []int     `json:"bytes,omitempty"`
	TextOffset *int      `json:"text_offset,omitempty"`
	Logprob    float64   `json:"logprob"`
	Bits       float64   `json:"bits"`
	Context    int       `json:"context"`
	Top        []topJSON `json:"top,omitempty"`
}

type topJSON struct {
	Token   string  `json:"token"`
	Bytes   []int   `json:"bytes,omitempty"`
	Logprob float64 `json:"logprob"`
}

// writeJSONL writes one JSON object per score; ids are the scored
// text's tokens.
func writeJSONL(w io.Writer, scores []minigpt.Step, vocab *minigpt.Vocab, isBPE bool, ids []int, text string) error {
	enc := json.NewEncoder(w)
	var offsets []int
	if isBPE {
		offsets = textOffsets(vocab, ids, text)
	}
	for _, s := range scores {
		tok := vocab.Token(s.Chosen.ID)
		t := tokenJSON{Pos: s.Pos, Token: tok, Logprob: s.Logprob, Bits: -s.Logprob / math.Ln2, Context: s.Context}
		if isBPE {
			t.Bytes, t.TextOffset = cli.TokenBytes(tok), &offsets[s.Pos]
		}
		for _, c := range s.Top {
			top := topJSON{Token: vocab.Token(c.ID), Logprob: c.Logprob}
			if isBPE {
				top.Bytes = cli.TokenBytes(top.Token)
			}
			t.Top = append(t.Top, top)
		}
		if err := enc.Encode(t); err != nil {
			return fmt.Errorf("the line of token %d (counting from 0): %w", s.Pos, err)
		}
	}
	return nil
}

// textOffsets returns, for each token of ids (text's tokens), the index
// in characters (from 0) of the character of text that holds the token's
// first byte: the characters that start at or before that byte, less one.
func textOffsets(vocab *minigpt.Vocab, ids []int, text string) []int {
	out := make([]int, len(ids))
	at, b, starts := 0, 0, 0 // the token's first byte; starts counts the characters that start in text[:b]
	for i, id := range ids {
		for ; b <= at && b < len(text); b++ {
			if utf8.RuneStart(text[b]) {
				starts++
			}
		}
		out[i] = starts - 1
		at += len(vocab.Token(id))
	}
	return out
}
