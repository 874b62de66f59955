// Command generate writes text with a MiniGPT: by default the model
// trained on the Lantern Bay corpus that is embedded in the package.
//
//	go run ./cmd/generate -greedy
//	go run ./cmd/generate -temperature 0.8 -top-k 10 -prompt "the keeper "
//	go run ./cmd/generate -compare
//	go run ./cmd/generate -model shakespeare.ckpt -prompt-file prompt.txt
//
// The text streams to standard output as it is generated; timings and
// reports go to standard error. Bad flags exit with status 2, an
// unreadable model with status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
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

type options struct {
	prompt, promptFile, model string
	n                         int
	greedy, compare, loops    bool
	temperature, topP, rep    float64
	topK, loopWindow          int
	seed                      uint64
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.StringVar(&o.prompt, "prompt", "the ", "text to continue (every character must be in the model's vocabulary)")
	fs.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from this file instead of -prompt (keeps newlines)")
	fs.IntVar(&o.n, "n", 200, "number of characters to generate (-compare defaults to 80, as in the seed)")
	fs.BoolVar(&o.greedy, "greedy", false, "always take the most likely character (ignores the sampling flags)")
	fs.Float64Var(&o.temperature, "temperature", 1.0, "divide logits by this before sampling; 0 means greedy")
	fs.IntVar(&o.topK, "top-k", 0, "sample only from the k most likely characters; 0 = off")
	fs.Float64Var(&o.topP, "top-p", 1.0, "sample from the smallest set of characters with this much probability, in (0, 1]; 1 = off")
	fs.Float64Var(&o.rep, "repetition-penalty", 1.0, "penalise characters already in the text, > 0; 1 = off, above 1 discourages repeats")
	fs.Uint64Var(&o.seed, "seed", 42, "seed of the sampling generator (PCG)")
	fs.StringVar(&o.model, "model", "", "checkpoint file to load (default: the embedded Lantern Bay model)")
	fs.BoolVar(&o.compare, "compare", false, "print the seed's comparison: greedy, temperature 0.8, top-k 5, top-p 0.9, temperature 1.5, one line each")
	fs.BoolVar(&o.loops, "loops", false, "report on stderr where the output starts repeating itself (loop onset)")
	fs.IntVar(&o.loopWindow, "loop-window", 20, "window length, in characters, for -loops")
	fs.SetOutput(io.Discard)
	return fs
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := cli.Parse(fs, args, "Generates text with a MiniGPT checkpoint (default: the embedded Lantern Bay model).", stdout)
	if err != nil {
		return err
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
	gen := minigpt.GenerateOptions{
		MaxNewTokens:      o.n,
		Greedy:            o.greedy,
		Temperature:       o.temperature,
		TopK:              o.topK,
		TopP:              o.topP,
		RepetitionPenalty: o.rep,
		Rand:              rand.New(rand.NewPCG(o.seed, 0)),
	}
	var out strings.Builder // the whole text, kept only for -loops
	if o.loops {
		out.WriteString(o.prompt)
	}
	if _, err := io.WriteString(stdout, o.prompt); err != nil {
		return err
	}
	chars := vocab.Chars()
	gen.OnToken = func(id int) error {
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
	fmt.Fprintf(stderr, "%d characters in %v (%.0f characters/s)\n", o.n, elapsed.Round(time.Microsecond), float64(o.n)/elapsed.Seconds())
	if o.loops {
		if i := minigpt.LoopOnset(out.String(), o.loopWindow); i >= 0 {
			fmt.Fprintf(stderr, "loop onset: the %d-character window at character %d repeats later\n", o.loopWindow, i)
		} else {
			fmt.Fprintf(stderr, "loop onset: no %d-character window repeats\n", o.loopWindow)
		}
	}
	return nil
}

func (o *options) validate(set map[string]bool) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.n < 0:
		return fmt.Errorf("-n %d: must be >= 0", o.n)
	case !finite(o.temperature) || o.temperature < 0:
		return fmt.Errorf("-temperature %v: must be finite and >= 0 (0 means greedy)", o.temperature)
	case o.topK < 0:
		return fmt.Errorf("-top-k %d: must be >= 0 (0 = off)", o.topK)
	case !(o.topP > 0 && o.topP <= 1):
		return fmt.Errorf("-top-p %v: must be in (0, 1]", o.topP)
	case !finite(o.rep) || o.rep <= 0:
		return fmt.Errorf("-repetition-penalty %v: must be finite and > 0", o.rep)
	case o.loopWindow < 1:
		return fmt.Errorf("-loop-window %d: must be >= 1", o.loopWindow)
	case o.compare && (set["greedy"] || set["temperature"] || set["top-k"] || set["top-p"] || set["repetition-penalty"] || set["loops"]):
		return fmt.Errorf("-compare runs its own five settings: it takes only -prompt, -prompt-file, -n, -seed and -model")
	case set["prompt"] && set["prompt-file"]:
		return fmt.Errorf("-prompt and -prompt-file: give one, not both")
	case o.prompt == "" && o.promptFile == "":
		return fmt.Errorf("-prompt is empty")
	}
	return nil
}

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
		r.o.Rand = rand.New(rand.NewPCG(seed, 0))
		text, err := m.GenerateText(ctx, vocab, prompt, r.o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-15s: %q\n", r.label, text)
	}
	return nil
}
