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
// reports go to standard error. Bad flags exit with status 2, an
// unreadable model with status 1.
package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("generate", run) }

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode): 0 done, 1 runtime error, 2 bad flags, 130 interrupted.
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("generate", err, stderr) }

// maxPromptBytes bounds -prompt-file.
const maxPromptBytes = 1 << 20

// readPrompt reads a prompt file: a regular file of valid UTF-8, at most
// maxPromptBytes, without a leading byte-order mark.
func readPrompt(path string) (string, error) {
	bad := func(why string) error { return cli.UsageError{Err: fmt.Errorf("-prompt-file %s: %s", path, why)} }
	text, err := cli.ReadFile(path, maxPromptBytes)
	switch {
	case err != nil:
		return "", cli.UsageError{Err: fmt.Errorf("-prompt-file %w", err)}
	case !utf8.ValidString(text):
		return "", bad("not valid UTF-8")
	case text == "":
		return "", bad("is empty")
	}
	return text, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := cli.Parse(fs, args, "Generates text with a MiniGPT checkpoint (default: the embedded Lantern Bay model).\n\n"+pipelineHelp, stdout)
	if err != nil {
		return err
	}
	if o.info {
		return printInfo(o.model, stdout)
	}
	if err := o.validate(set); err != nil {
		return cli.UsageError{Err: err}
	}
	promptFlag := fmt.Sprintf("-prompt %q", o.prompt)
	if o.promptFile != "" {
		p, err := readPrompt(o.promptFile)
		if err != nil {
			return err
		}
		o.prompt, promptFlag = p, "-prompt-file "+o.promptFile
	}
	m, vocab, err := loadModel(o.model)
	if err != nil {
		return err
	}
	if _, err := vocab.Encode(o.prompt); err != nil {
		return cli.UsageError{Err: fmt.Errorf("%s: %w", promptFlag, err)}
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
	switch {
	case o.explain || o.logprobs > 0:
		return traced(ctx, m, vocab, &o, gen, stdout, stderr)
	case o.samples > 1 || o.beams > 0:
		return many(ctx, m, vocab, &o, gen, stdout, stderr)
	}
	gen.Rand = minigpt.SampleRand(o.seed, 0)
	var out strings.Builder // the whole text, kept only for -loops
	if o.loops {
		out.WriteString(o.prompt)
	}
	if _, err := io.WriteString(stdout, o.prompt); err != nil {
		return err
	}
	chars := vocab.Chars()
	count := 0
	gen.OnToken = func(id int) error {
		count++
		_, err := io.WriteString(stdout, string(chars[id]))
		if o.loops {
			out.WriteRune(chars[id])
		}
		return err
	}
	start := time.Now()
	_, err = m.GenerateText(ctx, vocab, o.prompt, gen)
	elapsed := time.Since(start)
	fmt.Fprintln(stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d characters in %v (%.0f characters/s)\n", count, elapsed.Round(time.Microsecond), float64(count)/elapsed.Seconds())
	if o.loops {
		if i := minigpt.LoopOnset(out.String(), o.loopWindow); i >= 0 {
			fmt.Fprintf(stderr, "loop onset: the %d-character window at character %d repeats later\n", o.loopWindow, i)
		} else {
			fmt.Fprintf(stderr, "loop onset: no %d-character window repeats\n", o.loopWindow)
		}
	}
	return nil
}

// pipelineHelp is the order of the sampling stages, for -h.
const pipelineHelp = `A sampled character goes through, in order: -logit-bias, -presence-penalty
and -frequency-penalty, -temperature, -repetition-penalty, -no-repeat-ngram,
-top-k, -top-p, -min-p; then one draw. -greedy (or -temperature 0) skips
them all; -beams applies the bias, the penalties and -no-repeat-ngram to
each beam's log-probabilities and skips the rest, as Hugging Face does.`

func loadModel(path string) (*minigpt.Model, *minigpt.Vocab, error) {
	if path == "" {
		return minigpt.DefaultModel()
	}
	c, err := minigpt.LoadCheckpoint(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-model: %w", err)
	}
	return c.Model, c.Vocab, nil
}

// compare prints the seed's Stage 3 table: one prompt through five
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
	fmt.Fprintf(stdout, "prompt: %q\n", prompt)
	for _, r := range rows {
		r.o.MaxNewTokens = n
		r.o.Rand = minigpt.SampleRand(seed, 0)
		text, err := m.GenerateText(ctx, vocab, prompt, r.o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-15s: %q\n", r.label, text)
	}
	return nil
}
