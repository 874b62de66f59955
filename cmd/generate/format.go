package main

// This file holds generate's output formats (-regex, -choice, -grammar,
// -json-schema, -json): the flags, and the minigpt.Constraint they make.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// formatFlags are the output-format flags; at most one is given.
type formatFlags struct {
	regex, grammarFile, schemaFile string
	choices                        []string
	json                           bool
}

// formatNames are the format flags, in the order -h lists them.
var formatNames = []string{"regex", "choice", "grammar", "json-schema", "json"}

// maxFormatBytes bounds a -grammar or -json-schema file as read; the
// library refuses a source past its own cap (64 KiB) with the sizes.
const maxFormatBytes = 1 << 20

func (f *formatFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.regex, "regex", "", "hold the generated text to this `pattern` (Go's RE2 syntax), matched by the whole text")
	fs.Func("choice", "the generated text is exactly one of these `text`s; repeatable", func(s string) error {
		f.choices = append(f.choices, s)
		return nil
	})
	fs.StringVar(&f.grammarFile, "grammar", "", "hold the generated text to the grammar in this `file` (llama.cpp's GBNF; the rule root is the whole text)")
	fs.StringVar(&f.schemaFile, "json-schema", "", "the generated text is JSON valid under the JSON Schema in this `file` (the subset docs/sampling.md lists)")
	fs.BoolVar(&f.json, "json", false, "the generated text is one JSON object")
}

// validate checks what it can before the model is loaded: one format at
// most, and no empty pattern or file name.
func (f *formatFlags) validate(set map[string]bool) error {
	var given []string
	for _, name := range formatNames {
		if set[name] {
			given = append(given, "-"+name)
		}
	}
	switch {
	case len(given) > 1:
		return fmt.Errorf("%s: give one output format, not %d", strings.Join(given, " and "), len(given))
	case set["regex"] && f.regex == "":
		return fmt.Errorf("-regex is empty: give a pattern")
	case set["grammar"] && f.grammarFile == "":
		return fmt.Errorf("-grammar is empty: give a file name")
	case set["json-schema"] && f.schemaFile == "":
		return fmt.Errorf("-json-schema is empty: give a file name")
	case set["json"] && !f.json:
		return fmt.Errorf("-json=false: leave the flag out for no format")
	}
	return nil
}

// constraint compiles the format for vocab, or returns nil when none was
// given, with a label for -explain's header. A refusal names the flag.
func (f *formatFlags) constraint(vocab *minigpt.Vocab) (*minigpt.Constraint, string, error) {
	var kind, flagName, label string
	var src []string
	switch {
	case f.regex != "":
		kind, flagName, src, label = "regex", "-regex", []string{f.regex}, fmt.Sprintf("regex %q", f.regex)
	case len(f.choices) > 0:
		kind, flagName, src, label = "choice", "-choice", f.choices, fmt.Sprintf("one of %d choices", len(f.choices))
	case f.grammarFile != "":
		text, err := cli.ReadFile(f.grammarFile, maxFormatBytes)
		if err != nil {
			return nil, "", fmt.Errorf("-grammar %w", err)
		}
		kind, flagName, src, label = "grammar", "-grammar "+f.grammarFile, []string{text}, "grammar "+f.grammarFile
	case f.schemaFile != "":
		text, err := cli.ReadFile(f.schemaFile, maxFormatBytes)
		if err != nil {
			return nil, "", fmt.Errorf("-json-schema %w", err)
		}
		kind, flagName, src, label = "json-schema", "-json-schema "+f.schemaFile, []string{text}, "JSON schema "+f.schemaFile
	case f.json:
		kind, flagName, label = "json-object", "-json", "a JSON object"
	default:
		return nil, "", nil
	}
	c, err := minigpt.NewConstraint(vocab, kind, src...)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", flagName, err)
	}
	return c, label, nil
}

// errIncomplete reports samples a stop string or an interruption cut
// before their format was complete; their text is written all the same.
var errIncomplete = errors.New("the format is not complete")

// noteIncomplete writes one line on stderr for each sample whose text
// ended before its format did, and returns errIncomplete if there was one.
func noteIncomplete(stderr io.Writer, res []minigpt.Completion, many bool) error {
	var n int
	for _, c := range res {
		if !c.Incomplete {
			continue
		}
		n++
		if many {
			fmt.Fprintf(stderr, "sample %d: a stop string cut the text before its format was complete\n", c.Index)
		} else {
			fmt.Fprintln(stderr, "a stop string cut the text before its format was complete")
		}
	}
	if n > 0 {
		return fmt.Errorf("%w in %d of %d samples (the text is written as it ended)", errIncomplete, n, len(res))
	}
	return nil
}
