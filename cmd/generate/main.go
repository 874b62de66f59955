// Command generate writes text with a MiniGPT: by default the model
// trained on the Lantern Bay corpus that is embedded in the package.
//
//	go run ./cmd/generate -greedy
//	go run ./cmd/generate -temperature 0.8 -top-k 10 -prompt "the keeper "
//	go run ./cmd/generate -compare
//	go run ./cmd/generate -model shakespeare.ckpt -prompt-file prompt.txt
//	go run ./cmd/generate -model shakespeare.ckpt -info
//
// The text streams to standard output as it is generated; timings and
// reports go to standard error. Exit status (cli.ExitRule): 2 when
// nothing was done because a flag, its value or a file it names was
// refused; 1 when generating or writing the text failed; 130 when
// interrupted.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
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
	info                      bool
	temperature, topP, rep    float64
	topK, loopWindow          int
	seed                      uint64
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.StringVar(&o.prompt, "prompt", "the ", "text to continue (every character must be in the model's vocabulary)")
	fs.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from this `file` instead of -prompt (keeps newlines); - reads standard input")
	fs.IntVar(&o.n, "n", 200, "number of characters to generate (-compare defaults to 80, as in the seed)")
	fs.BoolVar(&o.greedy, "greedy", false, "always take the most likely character (ignores the sampling flags)")
	fs.Float64Var(&o.temperature, "temperature", 1.0, fmt.Sprintf("divide logits by this before sampling: 0 means greedy, otherwise at least %g", minTemperature))
	fs.IntVar(&o.topK, "top-k", 0, "sample only from the k most likely characters; 0 = off")
	fs.Float64Var(&o.topP, "top-p", 1.0, "sample from the smallest set of characters with this much probability, in (0, 1]; 1 = off")
	fs.Float64Var(&o.rep, "repetition-penalty", 1.0, "penalise characters already in the text, > 0; 1 = off, above 1 discourages repeats")
	fs.Uint64Var(&o.seed, "seed", 42, "seed of the sampling generator (PCG)")
	fs.StringVar(&o.model, "model", "", "checkpoint file to load (default: the embedded Lantern Bay model)")
	fs.BoolVar(&o.compare, "compare", false, "print the seed's comparison: greedy, temperature 0.8, top-k 5, top-p 0.9, temperature 1.5, one line each")
	fs.BoolVar(&o.info, "info", false, "print the -model checkpoint's config, vocabulary, step and training settings (without loading its weights) and exit")
	fs.BoolVar(&o.loops, "loops", false, "report on stderr where the output starts repeating itself (loop onset)")
	fs.IntVar(&o.loopWindow, "loop-window", 20, "window length, in characters, for -loops")
	fs.SetOutput(io.Discard)
	return fs
}

// summary heads -h.
const summary = "Generates text with a MiniGPT checkpoint (default: the embedded Lantern Bay model)."

// run checks every write to stdout and stderr: output that did not
// arrive (a full disk, a closed pipe) is a failure, exit status 1.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	out, errOut := cli.NewCheckedWriter(stdout), cli.NewCheckedWriter(stderr)
	err := generate(ctx, args, out, errOut)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		if werr := cmp.Or(out.Err(), errOut.Err()); werr != nil {
			return fmt.Errorf("writing the output: %w", werr)
		}
	}
	return err
}

func generate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := cli.Parse(fs, args, summary+"\n\n"+cli.ExitRule, stdout)
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
	m, vocab, err := loadModel(o.model)
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
	io.WriteString(stdout, "\n") // checked by run, with every other write
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

// minTemperature is the smallest temperature above 0 that -temperature
// takes. Sampling divides the logits by the temperature, and below about
// 1e-308 (1e-320 is a subnormal number) even a logit of 1 overflows to
// infinity; long before that, at 1e-6, a logit lead of 1e-5 already means
// odds of e¹⁰ to 1, so smaller values are greedy decoding in all but name:
// -temperature 0 says that exactly.
const minTemperature = 1e-6

// compareFlags are the flags -compare takes: it runs its own settings.
var compareFlags = []string{"compare", "prompt", "prompt-file", "n", "seed", "model"}

func (o *options) validate(set map[string]bool) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if o.compare {
		for name := range set {
			if !slices.Contains(compareFlags, name) {
				return fmt.Errorf("-compare runs its own five settings, so -%s has no effect there: -compare takes only -prompt, -prompt-file, -n, -seed and -model", name)
			}
		}
	}
	switch {
	case o.n < 0:
		return fmt.Errorf("-n %d: must be >= 0", o.n)
	case !finite(o.temperature) || o.temperature < 0:
		return fmt.Errorf("-temperature %v: must be finite and >= 0 (0 means greedy)", o.temperature)
	case o.temperature > 0 && o.temperature < minTemperature:
		return fmt.Errorf("-temperature %v: must be 0 (greedy) or at least %g (smaller values overflow the logits and would sample greedily anyway)", o.temperature, minTemperature)
	case o.topK < 0:
		return fmt.Errorf("-top-k %d: must be >= 0 (0 = off)", o.topK)
	case !(o.topP > 0 && o.topP <= 1):
		return fmt.Errorf("-top-p %v: must be in (0, 1]", o.topP)
	case !finite(o.rep) || o.rep <= 0:
		return fmt.Errorf("-repetition-penalty %v: must be finite and > 0", o.rep)
	case o.loopWindow < 1:
		return fmt.Errorf("-loop-window %d: must be >= 1", o.loopWindow)
	case set["prompt"] && set["prompt-file"]:
		return fmt.Errorf("-prompt and -prompt-file: give one, not both")
	case set["prompt-file"] && o.promptFile == "":
		return fmt.Errorf("-prompt-file is empty: give a file name, or - for standard input")
	case o.prompt == "" && o.promptFile == "":
		return fmt.Errorf("-prompt is empty")
	}
	return nil
}

// checkPrompt reports the first character of prompt outside vocab with
// its position and a short excerpt around it: the prompt may be a
// megabyte long, and the error is one line.
func checkPrompt(prompt string, vocab *minigpt.Vocab) error {
	_, err := vocab.Encode(prompt)
	if err == nil || !errors.Is(err, minigpt.ErrUnknownChar) {
		return err
	}
	known := map[rune]bool{}
	for _, c := range vocab.Chars() {
		known[c] = true
	}
	pos := 0
	for _, c := range prompt {
		if !known[c] {
			msg := fmt.Sprintf("%q at position %d (%U, counting from 0) in %s", c, pos, c, cli.Excerpt(prompt, pos, 20))
			if chars := vocab.Chars(); len(chars) <= 100 {
				msg += fmt.Sprintf("; the model knows %q", string(chars))
			}
			return fmt.Errorf("%w: %s", minigpt.ErrUnknownChar, msg)
		}
		pos++
	}
	return err
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
	if _, err := fmt.Fprintf(stdout, "prompt: %q\n", prompt); err != nil {
		return err
	}
	for _, r := range rows {
		r.o.MaxNewTokens = n
		r.o.Rand = rand.New(rand.NewPCG(seed, 0))
		text, err := m.GenerateText(ctx, vocab, prompt, r.o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(stdout, "%-15s: %q\n", r.label, text); err != nil {
			return err // stop at once: nobody reads the rest
		}
	}
	return nil
}
