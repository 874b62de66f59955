// Command generate writes text with a MiniGPT: by default the model
// trained on the Lantern Bay corpus that is embedded in the package.
//
//	go run ./cmd/generate -greedy
//	go run ./cmd/generate -temperature 0.8 -top-k 10 -prompt "the keeper "
//	go run ./cmd/generate -compare
//	go run ./cmd/generate -explain -top-k 5 -temperature 1.5 -n 20
//	go run ./cmd/generate -logprobs 3 -n 10
//	go run ./cmd/generate -samples 4 -min-p 0.05 -stop . -seed 7
//	go run ./cmd/generate -beams 4 -n 40
//	go run ./cmd/generate -model shakespeare.ckpt -prompt-file prompt.txt
//	go run ./cmd/generate -model shakespeare.ckpt -info
//
// The text streams to standard output as it is generated; timings and
// reports go to standard error. -h lists the flags by purpose, and
// -version says what the binary was built from. Exit status: 2 when
// nothing was done because a flag, its value or a file it names was
// refused; 1 when generating or writing the text failed; 130 when
// interrupted (usage.go words it for -h).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("generate", run) }

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode): 0 done, 1 failed while generating or writing, 2 refused
// before any work, 130 interrupted.
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("generate", err, stderr) }

// maxPromptBytes bounds -prompt-file.
const maxPromptBytes = 1 << 20

// stdin is what -prompt-file - reads; a variable so that tests can set it.
var stdin io.Reader = os.Stdin

// readPrompt reads a prompt file, or standard input for "-": valid UTF-8,
// at most maxPromptBytes, without a leading byte-order mark. Reading
// standard input gives up when ctx is done (Ctrl-C), which is then the
// error.
func readPrompt(ctx context.Context, path string) (string, error) {
	var text string
	var err error
	if path == "-" {
		var b []byte
		b, err = cli.ReadAllContext(ctx, stdin, maxPromptBytes)
		if ctx.Err() != nil {
			return "", err
		}
		text, err = strings.TrimPrefix(string(b), "\uFEFF"), cli.Prefix("standard input", err)
	} else {
		text, err = cli.ReadFile(path, maxPromptBytes)
	}
	bad := func(why string) error { return cli.Usagef("-prompt-file %s: %s", path, why) }
	switch {
	case err != nil:
		return "", cli.Usagef("-prompt-file %w", err)
	case !utf8.ValidString(text):
		return "", cli.Usagef("-prompt-file %s: %w", path, cli.CheckText(text, nil))
	case text == "":
		return "", bad("is empty")
	}
	return text, nil
}

// run checks every write to stdout and stderr: output that did not
// arrive (a full disk, a closed pipe) is a failure, exit status 1.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.RunChecked(ctx, args, stdout, stderr, generate)
}

func generate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := command.Parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if o.info {
		return printInfo(o.model, stdout)
	}
	if err := o.validate(set); err != nil {
		return cli.UsageError{Err: err}
	}
	promptFlag := "-prompt"
	if o.promptFile != "" {
		p, err := readPrompt(ctx, o.promptFile)
		if err != nil {
			return err
		}
		o.prompt, promptFlag = p, "-prompt-file "+o.promptFile
	}
	m, vocab, err := loadModel(o.model, stderr)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if err := checkPrompt(o.prompt, vocab); err != nil {
		return cli.Usagef("%s: %w", promptFlag, err)
	}
	if o.compare {
		n := o.n
		if !set["n"] {
			n = 80
		}
		return compare(ctx, m, vocab, o.prompt, n, o.seed, stdout)
	}
	gen, err := o.generateOptions(vocab)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if gen.Constraint, o.formatLabel, err = o.format.constraint(vocab); err != nil {
		return cli.UsageError{Err: err}
	}
	switch {
	case o.explain || o.logprobs > 0:
		err = traced(ctx, m, vocab, &o, gen, stdout, stderr)
	case o.samples > 1 || o.beams > 0:
		err = many(ctx, m, vocab, &o, gen, stdout, stderr)
	default:
		err = one(ctx, m, vocab, &o, gen, stdout, stderr)
	}
	if errors.Is(err, minigpt.ErrBadOption) {
		// Complete refuses before any token (-n below a format's
		// shortest match): nothing was generated.
		if gen.Constraint != nil {
			err = fmt.Errorf("-n %d with the format (%s): %w", o.n, o.formatLabel, err)
		}
		return cli.UsageError{Err: err}
	}
	return err
}

// one generates a single sample, streaming its text to stdout after the
// prompt; the prompt waits for the first piece, so that a refusal writes
// nothing.
func one(ctx context.Context, m *minigpt.Model, vocab *minigpt.Vocab, o *options, gen minigpt.GenerateOptions, stdout, stderr io.Writer) error {
	gen.Seed = o.seed
	var out strings.Builder // the whole text, kept only for -loops
	if o.loops {
		out.WriteString(o.prompt)
	}
	wrote := false
	writePrompt := func() error {
		if wrote {
			return nil
		}
		wrote = true
		_, err := io.WriteString(stdout, o.prompt)
		return err
	}
	count, chars := 0, 0
	gen.Stream = func(c *minigpt.Completion) error {
		if err := writePrompt(); err != nil {
			return err
		}
		count += len(c.IDs)
		chars += utf8.RuneCountInString(c.Text)
		_, err := io.WriteString(stdout, c.Text)
		if o.loops {
			out.WriteString(c.Text)
		}
		return err
	}
	start := time.Now()
	res, err := m.Complete(ctx, vocab, o.prompt, gen)
	elapsed := time.Since(start)
	if err != nil && errors.Is(err, minigpt.ErrBadOption) {
		return err
	}
	if werr := writePrompt(); err == nil {
		err = werr
	}
	io.WriteString(stdout, "\n") // checked by run, with every other write
	if err != nil {
		return err
	}
	reportSpeed(stderr, vocab, count, chars, elapsed)
	if o.loops {
		if i := loopOnset(out.String(), o.loopWindow); i >= 0 {
			fmt.Fprintf(stderr, "loop onset: the %d-character window at character %d repeats later\n", o.loopWindow, i)
		} else {
			fmt.Fprintf(stderr, "loop onset: no %d-character window repeats\n", o.loopWindow)
		}
	}
	return noteIncomplete(stderr, res, false)
}

// checkPrompt reports the first character of prompt outside vocab with
// its position and a short excerpt around it (cli.CheckText): the prompt
// may be a megabyte long, and the error is one line.
func checkPrompt(prompt string, vocab *minigpt.Vocab) error {
	if _, err := vocab.Encode(prompt); err == nil || !errors.Is(err, minigpt.ErrBadText) {
		return err
	}
	return cli.CheckText(prompt, vocab)
}

// loadModel loads the -model file, in either format, or the embedded
// model; a large file shows its reading on a terminal.
func loadModel(path string, stderr io.Writer) (*minigpt.Model, *minigpt.Vocab, error) {
	if path == "" {
		return minigpt.DefaultModel()
	}
	c, err := cli.LoadCheckpoint("model", path, cli.ProgressTo(stderr, false))
	if err != nil {
		return nil, nil, err
	}
	return c.Model, c.Vocab, nil
}

// compare prints the sampling lesson's comparison table: one prompt through five
// settings, each sampled line with its own generator seeded from seed.
func compare(ctx context.Context, m *minigpt.Model, vocab *minigpt.Vocab, prompt string, n int, seed uint64, stdout io.Writer) error {
	rows := []struct {
		label string
		o     minigpt.GenerateOptions
	}{
		{"greedy", minigpt.GenerateOptions{Greedy: true}},
		{"temperature=0.8", minigpt.GenerateOptions{Temperature: 0.8}},
		{"top_k=5", minigpt.GenerateOptions{Temperature: 1, TopK: 5}},
		{"top_p=0.9", minigpt.GenerateOptions{Temperature: 1, TopP: 0.9}},
		{"temperature=1.5", minigpt.GenerateOptions{Temperature: 1.5}},
	}
	if _, err := fmt.Fprintf(stdout, "prompt: %q\n", prompt); err != nil {
		return err
	}
	for _, r := range rows {
		r.o.MaxNewTokens = n
		r.o.Seed = seed
		res, err := m.Complete(ctx, vocab, prompt, r.o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(stdout, "%-15s: %q\n", r.label, prompt+res[0].Text); err != nil {
			return err // stop at once: nobody reads the rest
		}
	}
	return nil
}

// loopOnset returns the first index i (in characters) at which the
// w-character window text[i:i+w] appears again later in text, starting at
// or after i+w; or -1 if none does: the loop detector of the sampling
// lesson's third exercise ("loop onset").
func loopOnset(text string, w int) int {
	if w <= 0 {
		return -1
	}
	// Byte offsets of every character, so windows are whole runes.
	offs := make([]int, 0, len(text)+1)
	for i := range text {
		offs = append(offs, i)
	}
	n := len(offs)
	offs = append(offs, len(text))
	for i := 0; i+2*w <= n; i++ {
		window := text[offs[i]:offs[i+w]]
		if strings.Contains(text[offs[i+w]:], window) {
			return i
		}
	}
	return -1
}
