package main

// This file holds generate's options, its flag set and the parsing of
// -bias.

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

type options struct {
	prompt, promptFile, model string
	n                         int
	greedy, compare, loops    bool
	info                      bool
	temperature, topP, rep    float64
	topK, loopWindow          int
	seed                      uint64

	minP, presence, frequency, lengthPenalty float64
	noRepeat, samples, beams                 int
	bias                                     []biasFlag
	stop                                     []string
	explain                                  bool
	explainTop, logprobs                     int
	format                                   formatFlags
	formatLabel                              string // the format, for -explain's header
}

// biasFlag is one -logit-bias value: a token's text or #id, and a bias.
type biasFlag struct {
	text  string // the token's text, when given by text
	id    int    // -1 when given by text
	value float64
	arg   string
}

// The library's limits on GenerateOptions (its Stop, N and NumBeams),
// checked here first so that the error names the flag.
const (
	maxStops   = 4
	maxSamples = 128
	maxBeams   = 64
)

// maxN bounds -n, as the server bounds max_tokens: a generation must be
// able to finish. Every sample and beam keeps its text until the end (a
// beam search writes nothing before it), and a million characters is some
// minutes of the embedded model's output on two cores, hours of a
// larger one's.
const maxN = 1 << 20

// parseBias reads TEXT=BIAS or #ID=BIAS; which token TEXT names is
// found once the model is loaded (biasID).
func parseBias(arg string) (biasFlag, error) {
	i := strings.LastIndex(arg, "=")
	if i <= 0 {
		return biasFlag{}, fmt.Errorf("want CHAR=BIAS or TEXT=BIAS (a token's text) or #ID=BIAS, e.g. e=-100")
	}
	key, val := arg[:i], arg[i+1:]
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return biasFlag{}, fmt.Errorf("bias %q is not a number", val)
	}
	b := biasFlag{text: key, id: -1, value: v, arg: arg}
	if digits, ok := strings.CutPrefix(key, "#"); ok && digits != "" {
		id, err := strconv.Atoi(digits)
		if err != nil || id < 0 {
			return biasFlag{}, fmt.Errorf("%q is not #ID: want # and a token id from 0", key)
		}
		b.text, b.id = "", id
	}
	return b, nil
}

// biasID returns the id of the token b names in vocab: #ID itself, or
// the token whose text is exactly b's (for a character model, one
// character).
func biasID(b biasFlag, vocab *minigpt.Vocab, tokenOf map[string]int) (int, error) {
	switch id, ok := tokenOf[b.text]; {
	case b.id >= vocab.Size():
		return 0, fmt.Errorf("-logit-bias %s: id %d is outside the vocabulary [0, %d)", b.arg, b.id, vocab.Size())
	case b.id >= 0:
		return b.id, nil
	case ok:
		return id, nil
	case !cli.IsBPE(vocab) && utf8.RuneCountInString(b.text) == 1:
		r, _ := utf8.DecodeRuneInString(b.text)
		return 0, fmt.Errorf("-logit-bias %s: %w: %q (%U) is not in the model's vocabulary", b.arg, minigpt.ErrBadText, r, r)
	case !cli.IsBPE(vocab):
		return 0, fmt.Errorf("-logit-bias %s: %q is neither one character nor #ID", b.arg, b.text)
	}
	ids, _ := vocab.Encode(b.text) // a BPE vocabulary encodes any text
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s #%d", cli.QuoteToken(vocab, true, id), id)
	}
	return 0, fmt.Errorf("-logit-bias %s: %w: no token's text is exactly %q; it encodes as %d tokens: %s", b.arg, minigpt.ErrBadText, b.text, len(ids), strings.Join(parts, ", "))
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.StringVar(&o.prompt, "prompt", "the ", "`text` to continue (every character must be in the model's vocabulary)")
	fs.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from this `file` instead of -prompt (keeps newlines); - reads standard input")
	fs.IntVar(&o.n, "n", 200, fmt.Sprintf("number of tokens to generate (characters, for a character model), at most %d (with -compare: 80 unless given)", maxN))
	fs.BoolVar(&o.greedy, "greedy", false, "always take the most likely character (ignores the sampling flags)")
	fs.Float64Var(&o.temperature, "temperature", 1.0, fmt.Sprintf("divide logits by this before sampling: 0 means greedy (the same as -greedy), otherwise at least %g", minTemperature))
	fs.IntVar(&o.topK, "top-k", 0, "sample only from the k most likely characters; 0 = off")
	fs.Float64Var(&o.topP, "top-p", 1.0, "sample from the smallest set of characters with this much probability, in (0, 1]; 1 = off")
	fs.Float64Var(&o.minP, "min-p", 0, "drop characters less probable than this times the most probable one (after top-p), in [0, 1]; 0 = off")
	fs.Float64Var(&o.rep, "repetition-penalty", 1.0, "penalise characters already in the text, > 0; 1 = off, above 1 discourages repeats")
	fs.Float64Var(&o.presence, "presence-penalty", 0, "subtract this from the logit of every character already generated, in [-2, 2] (OpenAI's)")
	fs.Float64Var(&o.frequency, "frequency-penalty", 0, "subtract this times its count from each generated character's logit, in [-2, 2] (OpenAI's)")
	fs.Func("logit-bias", "add a bias in [-100, 100] to a token's logit: `TEXT=BIAS` for the token whose text is exactly TEXT (a character, for a character model), or #ID=BIAS; repeatable; -100 bans, 100 forces", func(s string) error {
		b, err := parseBias(s)
		if err == nil {
			o.bias = append(o.bias, b)
		}
		return err
	})
	fs.IntVar(&o.noRepeat, "no-repeat-ngram", 0, "never repeat a sequence of this many characters; 0 = off")
	fs.Func("stop", fmt.Sprintf("stop before this `text` (not printed); repeatable, at most %d", maxStops), func(s string) error {
		o.stop = append(o.stop, s)
		return nil
	})
	fs.IntVar(&o.samples, "samples", 1, fmt.Sprintf("number of samples, generated together; sample i uses seed -seed+i (1..%d)", maxSamples))
	fs.IntVar(&o.beams, "beams", 0, fmt.Sprintf("beam search with this many beams, 2..%d (deterministic: applies -logit-bias, the penalties and -no-repeat-ngram, ignores -temperature, -top-k, -top-p, -min-p); 0 = off", maxBeams))
	fs.Float64Var(&o.lengthPenalty, "length-penalty", 0, "beam search: divide a beam's log-probability by its length to this power (matters with -stop); 0 = off")
	o.format.register(fs)
	fs.Uint64Var(&o.seed, "seed", 42, "seed of the sampling generator (PCG)")
	fs.StringVar(&o.model, "model", "", "the model to load: a checkpoint `file`, minigpt's own or a .safetensors one (told by its content; default: the embedded Lantern Bay model)")
	fs.BoolVar(&o.info, "info", false, "print the -model checkpoint's config, vocabulary, step and training settings (after checking every byte of it) and exit")
	fs.BoolVar(&o.compare, "compare", false, "print the sampling lesson's comparison of decoders: greedy, temperature 0.8, top-k 5, top-p 0.9, temperature 1.5, one line each")
	fs.BoolVar(&o.explain, "explain", false, "for each generated token (character, for a character model), print its probability and the top candidates before and after the filters, with the stage that cut each")
	fs.IntVar(&o.explainTop, "explain-top", 6, "candidates per line for -explain")
	fs.IntVar(&o.logprobs, "logprobs", 0, "print each generated token's log-probabilities and its top N candidates as JSON lines instead of the text; 0 = off")
	fs.BoolVar(&o.loops, "loops", false, "report on stderr where the output starts repeating itself (loop onset)")
	fs.IntVar(&o.loopWindow, "loop-window", 20, "window length, in characters, for -loops")
	return fs
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
	case o.n < 0 || o.n > maxN:
		return fmt.Errorf("-n %d: must be in [0, %d]", o.n, maxN)
	case !finite(o.temperature) || o.temperature < 0:
		return fmt.Errorf("-temperature %v: must be finite and >= 0 (0 means greedy)", o.temperature)
	case o.temperature > 0 && o.temperature < minTemperature:
		return fmt.Errorf("-temperature %v: must be 0 (greedy) or at least %g (smaller values overflow the logits and would sample greedily anyway)", o.temperature, minTemperature)
	case o.topK < 0:
		return fmt.Errorf("-top-k %d: must be >= 0 (0 = off)", o.topK)
	case !(o.topP > 0 && o.topP <= 1):
		return fmt.Errorf("-top-p %v: must be in (0, 1]", o.topP)
	case !(o.minP >= 0 && o.minP <= 1):
		return fmt.Errorf("-min-p %v: must be in [0, 1]", o.minP)
	case !finite(o.rep) || o.rep <= 0:
		return fmt.Errorf("-repetition-penalty %v: must be finite and > 0", o.rep)
	case !(o.presence >= -2 && o.presence <= 2):
		return fmt.Errorf("-presence-penalty %v: must be in [-2, 2]", o.presence)
	case !(o.frequency >= -2 && o.frequency <= 2):
		return fmt.Errorf("-frequency-penalty %v: must be in [-2, 2]", o.frequency)
	case o.noRepeat < 0:
		return fmt.Errorf("-no-repeat-ngram %d: must be >= 0 (0 = off)", o.noRepeat)
	case len(o.stop) > maxStops:
		return fmt.Errorf("-stop given %d times: at most %d", len(o.stop), maxStops)
	case o.samples < 1 || o.samples > maxSamples:
		return fmt.Errorf("-samples %d: must be in [1, %d]", o.samples, maxSamples)
	case o.beams == 1 || o.beams < 0 || o.beams > maxBeams:
		return fmt.Errorf("-beams %d: must be 0 (off) or in [2, %d]", o.beams, maxBeams)
	case o.beams > 0 && o.samples > o.beams:
		return fmt.Errorf("-samples %d: beam search returns at most -beams %d sequences", o.samples, o.beams)
	case !finite(o.lengthPenalty):
		return fmt.Errorf("-length-penalty %v: must be finite", o.lengthPenalty)
	case set["length-penalty"] && o.beams == 0:
		return fmt.Errorf("-length-penalty needs -beams")
	case o.explainTop < 1:
		return fmt.Errorf("-explain-top %d: must be >= 1", o.explainTop)
	case o.logprobs < 0:
		return fmt.Errorf("-logprobs %d: must be >= 0 (0 = off)", o.logprobs)
	case o.explain && o.logprobs > 0:
		return fmt.Errorf("-explain and -logprobs: give one, not both")
	case o.beams > 0 && (o.explain || o.logprobs > 0):
		return fmt.Errorf("-beams has no per-step probabilities for -explain or -logprobs")
	case o.loopWindow < 1:
		return fmt.Errorf("-loop-window %d: must be >= 1", o.loopWindow)
	case set["prompt"] && set["prompt-file"]:
		return fmt.Errorf("-prompt and -prompt-file: give one, not both")
	case set["prompt-file"] && o.promptFile == "":
		return fmt.Errorf("-prompt-file is empty: give a file name, or - for standard input")
	case o.prompt == "" && o.promptFile == "":
		return fmt.Errorf("-prompt is empty")
	}
	if err := o.format.validate(set); err != nil {
		return err
	}
	for i, s := range o.stop {
		if s == "" {
			return fmt.Errorf("-stop number %d is empty", i+1)
		}
	}
	for _, b := range o.bias {
		if !(b.value >= -100 && b.value <= 100) {
			return fmt.Errorf("-logit-bias %s: the bias must be in [-100, 100]", b.arg)
		}
	}
	return nil
}

// generateOptions maps the flags to the library's options (without the
// seed, the sample count and callbacks); a -logit-bias character outside
// the vocabulary is an error naming the flag.
func (o *options) generateOptions(vocab *minigpt.Vocab) (minigpt.GenerateOptions, error) {
	g := minigpt.GenerateOptions{
		MaxNewTokens:      o.n,
		Greedy:            o.greedy || o.temperature == 0, // the library's zero Temperature means 1
		Temperature:       o.temperature,
		TopK:              o.topK,
		TopP:              o.topP,
		MinP:              o.minP,
		RepetitionPenalty: o.rep,
		PresencePenalty:   o.presence,
		FrequencyPenalty:  o.frequency,
		NoRepeatNGramSize: o.noRepeat,
		NumBeams:          o.beams,
		LengthPenalty:     o.lengthPenalty,
		Stop:              o.stop,
	}
	if len(o.bias) > 0 {
		tokenOf := make(map[string]int, vocab.Size())
		for id := range vocab.Size() {
			if _, dup := tokenOf[vocab.Token(id)]; !dup {
				tokenOf[vocab.Token(id)] = id
			}
		}
		g.LogitBias = map[int]float64{}
		for _, b := range o.bias {
			id, err := biasID(b, vocab, tokenOf)
			if err != nil {
				return g, err
			}
			g.LogitBias[id] = b.value
		}
	}
	if err := g.Validate(); err != nil {
		return g, err // the checks above should have caught it first
	}
	return g, nil
}
