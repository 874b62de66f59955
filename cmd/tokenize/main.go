// Command tokenize trains a byte-level BPE tokenizer, or loads one, and
// shows how text becomes tokens.
//
//	go run ./cmd/tokenize -corpus data/tinyshakespeare.txt -vocab-size 1024 -out shakespeare.bpe
//	go run ./cmd/tokenize -tokenizer shakespeare.bpe -text "To be, or not to be"
//	go run ./cmd/tokenize -tokenizer shakespeare.bpe -text-file notes.txt -ids
//	go run ./cmd/tokenize -gpt2 DIR -text "The keeper's lamp"    # DIR holds encoder.json and vocab.bpe
//	go run ./cmd/tokenize -gpt2 DIR -decode "464 28356 338 20450"    # "The keeper's lamp"
//	go run ./cmd/tokenize -tokenizer shakespeare.bpe -merges
//	go run ./cmd/tokenize -model bpe.ckpt -text "To be, or not to be"    # a model's own tokenizer
//
// Training prints what it learnt and the compression on the corpus (bytes
// per token) to standard error. Encoding lists each token, one a line:
// its position, its id and its bytes quoted ("\xe2" for part of a
// character), then the compression; -ids prints only the ids. -decode
// writes the tokens' bytes exactly as they are.
//
// Everything is checked before any work: an existing -out file is
// replaced only with -force, and a device, FIFO, socket, symbolic link or
// directory never. Exit status (usage.go words it for -h): 0 done; 2
// refused before any work; 1 failed while writing; 130 interrupted.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/internal/bpe"
)

func main() { cli.Main("tokenize", run) }

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode).
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("tokenize", err, stderr) }

// Bounds on what the command reads: training keeps every distinct piece
// of its corpus in memory, some 50 bytes each.
const (
	maxCorpusBytes = 256 << 20
	maxTextBytes   = 64 << 20
)

// stdin is what -text-file - reads; a variable so that tests can set it.
var stdin io.Reader = os.Stdin

// run checks every write: output that did not arrive is a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.RunChecked(ctx, args, stdout, stderr, tokenize)
}

func tokenize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := command.Parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := o.validate(fs, set); err != nil {
		return err
	}
	var out *cli.Output
	if o.out != "" {
		out = &cli.Output{Flag: "out", Path: o.out, Replace: o.force}
		if cli.SamePath(o.out, o.corpus) {
			return cli.Usagef("-out and -corpus both name %s: training would overwrite its corpus", o.out)
		}
		if err := out.Check(); err != nil {
			return err
		}
	}
	// The inputs, all read before any work.
	var corpus, text string
	var tok *bpe.Tokenizer
	switch {
	case o.corpus != "":
		if corpus, err = cli.ReadFile(o.corpus, maxCorpusBytes); err != nil {
			return cli.Usagef("-corpus %w", err)
		}
	case o.tokenizer != "":
		if tok, err = readTokenizer(o.tokenizer); err != nil {
			return cli.Usagef("-tokenizer %w", err)
		}
	case o.model != "":
		if tok, err = modelTokenizer(o.model, cli.ProgressTo(stderr, false)); err != nil {
			return cli.UsageError{Err: err}
		}
	default:
		if tok, err = readGPT2(o.gpt2); err != nil {
			return cli.Usagef("-gpt2 %w", err)
		}
	}
	if o.textGiven {
		text = o.text
	} else if o.textFile != "" {
		if text, err = readText(ctx, o.textFile); err != nil {
			return err
		}
	}
	if tok != nil && o.decodeIDs != nil {
		if err := checkIDs(tok, o.decodeIDs); err != nil {
			return cli.BadValue(fs, "decode", err.Error())
		}
	}

	if o.corpus != "" {
		start := time.Now()
		tok, err = bpe.Train(ctx, corpus, o.vocabSize)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w while training; nothing written", cli.ErrInterrupted)
		} else if err != nil {
			return err
		}
		elapsed := time.Since(start)
		n := len(tok.Encode(corpus))
		fmt.Fprintf(stderr, "trained on %s: %d bytes, %d merges to %d tokens in %v", o.corpus, len(corpus), tok.NumMerges(), tok.VocabSize(), elapsed.Round(time.Millisecond))
		if tok.VocabSize() < o.vocabSize {
			fmt.Fprintf(stderr, " (every piece of the corpus is one token: no pair was left to merge)")
		}
		fmt.Fprintf(stderr, "\ncompression on the corpus: %d tokens, %s bytes per token\n", n, perToken(len(corpus), n))
		if o.decodeIDs != nil {
			if err := checkIDs(tok, o.decodeIDs); err != nil {
				return cli.BadValue(fs, "decode", err.Error())
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w before writing; nothing written", cli.ErrInterrupted)
		}
		if out != nil {
			data, err := tok.MarshalBinary()
			if err != nil {
				return err
			}
			if err := out.Save(func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "wrote %s: %d bytes\n", o.out, len(data))
		}
	}

	w := bufio.NewWriter(stdout)
	switch {
	case o.textGiven || o.textFile != "":
		writeTokens(w, stderr, tok, text, o.ids)
	case o.decodeIDs != nil:
		b, _ := tok.AppendDecode(nil, o.decodeIDs) // checked above
		w.Write(b)
	case o.merges:
		writeMerges(w, tok)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

// readTokenizer reads a file written by -out.
func readTokenizer(path string) (*bpe.Tokenizer, error) {
	f, err := cli.OpenRegular(path) // a FIFO is refused, not waited on
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, bpe.MaxBinarySize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tok, err := bpe.ReadBinary(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
}

// modelTokenizer returns the BPE tokenizer of the checkpoint at path, in
// either format; a character model has none.
func modelTokenizer(path string, po cli.ProgressOut) (*bpe.Tokenizer, error) {
	c, err := cli.LoadCheckpoint("model", path, po)
	if err != nil {
		return nil, err
	}
	if !cli.IsBPE(c.Vocab) {
		return nil, fmt.Errorf("-model %s: the model reads %s, one token each, not a BPE tokenizer's", path, c.Vocab)
	}
	tok, err := cli.Tokenizer(c.Vocab)
	if err != nil {
		return nil, fmt.Errorf("-model %s: %w", path, err)
	}
	return tok, nil
}

// readGPT2 loads GPT-2's tokenizer from encoder.json and vocab.bpe in dir.
func readGPT2(dir string) (*bpe.Tokenizer, error) {
	var files [2]*os.File
	for i, name := range []string{"encoder.json", "vocab.bpe"} {
		f, err := cli.OpenRegular(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files[i] = f
	}
	tok, err := bpe.LoadGPT2(files[0], files[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return tok, nil
}

// readText reads the -text-file file, or standard input for "-", at most
// maxTextBytes, without a leading byte-order mark.
func readText(ctx context.Context, path string) (string, error) {
	if path != "-" {
		text, err := cli.ReadFile(path, maxTextBytes)
		if err != nil {
			return "", cli.Usagef("-text-file %w", err)
		}
		return text, nil
	}
	b, err := cli.ReadAllContext(ctx, stdin, maxTextBytes)
	if ctx.Err() != nil {
		return "", err
	}
	if err != nil {
		return "", cli.Usagef("-text-file -: standard input: %w", err)
	}
	return strings.TrimPrefix(string(b), "\uFEFF"), nil
}

// checkIDs names the first id outside tok's vocabulary.
func checkIDs(tok *bpe.Tokenizer, ids []int) error {
	for i, id := range ids {
		if id >= tok.VocabSize() {
			return fmt.Errorf("id %d, %d, is outside the vocabulary (0 to %d)", i+1, id, tok.VocabSize()-1)
		}
	}
	return nil
}

// writeTokens lists text's tokens, one a line (or only their ids), then
// the compression.
func writeTokens(w, stderr io.Writer, tok *bpe.Tokenizer, text string, idsOnly bool) {
	ids := tok.Encode(text)
	summary := w
	if idsOnly {
		for i, id := range ids {
			if i > 0 {
				io.WriteString(w, " ")
			}
			io.WriteString(w, strconv.Itoa(id))
		}
		io.WriteString(w, "\n")
		summary = stderr
	} else {
		width := len(strconv.Itoa(max(len(ids)-1, 0)))
		idWidth := len(strconv.Itoa(tok.VocabSize() - 1))
		for i, id := range ids {
			fmt.Fprintf(w, "%*d  %*d  %s\n", width, i, idWidth, id, strconv.Quote(tok.Token(id)))
		}
	}
	fmt.Fprintf(summary, "%d bytes, %d tokens: %s bytes per token\n", len(text), len(ids), perToken(len(text), len(ids)))
}

// perToken is bytes per token with two decimals, or "-" for no tokens.
func perToken(bytes, tokens int) string {
	if tokens == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(bytes)/float64(tokens), 'f', 2, 64)
}

// writeMerges lists the merges in rank order, each with the two tokens it
// joins, then the special tokens.
func writeMerges(w io.Writer, tok *bpe.Tokenizer) {
	fmt.Fprintf(w, "%s\n", tok)
	fmt.Fprintf(w, "rank  token = left + right  bytes\n")
	for r, m := range tok.Merges() {
		id := bpe.NumBytes + r
		fmt.Fprintf(w, "%d  %d = %d + %d  %s + %s = %s\n", r, id, m.Left, m.Right,
			strconv.Quote(tok.Token(m.Left)), strconv.Quote(tok.Token(m.Right)), strconv.Quote(tok.Token(id)))
	}
	for _, s := range tok.Specials() {
		id, _ := tok.SpecialID(s)
		fmt.Fprintf(w, "special  %d  %s\n", id, strconv.Quote(s))
	}
}
