package minigpt

// This file holds output constraints: a format compiled to a model's
// vocabulary, and the mask and end each sample's place in it gives the
// sampler.

import (
	"errors"
	"fmt"
	"slices"

	"example.org/minigpt/internal/grammar"
)

// Constraint holds generated text to a format (GenerateOptions.Constraint),
// exactly: each step allows only the tokens after which the text can still
// be completed over the vocabulary within the tokens left. It is
// immutable and may serve any number of calls at once (docs/sampling.md).
type Constraint struct {
	m     *grammar.Matcher
	kind  string
	vocab *Vocab // the vocabulary it was bound to
	need  int    // the fewest tokens a whole match takes
}

// NewConstraint compiles a constraint for vocab: kind "regex" (src[0] in
// Go's RE2 syntax, matching the whole text), "choice" (one of src),
// "grammar" (src[0] in llama.cpp's GBNF), "json-schema" (src[0]: its
// common subset, written compactly, keys in the order of properties) or
// "json-object". Errors wrap ErrBadOption: a malformed source (naming the
// character index from 0, and line:column), one past the size caps, or one
// no text over vocab satisfies (naming the characters vocab lacks).
func NewConstraint(vocab *Vocab, kind string, src ...string) (*Constraint, error) {
	if vocab == nil {
		return nil, fmt.Errorf("%w: constraint: nil vocabulary", ErrBadOption)
	}
	one := func() (string, error) {
		if len(src) != 1 {
			return "", fmt.Errorf("%w: constraint: a %s takes one source, got %d", ErrBadOption, kind, len(src))
		}
		return src[0], nil
	}
	var g *grammar.Grammar
	var err error
	switch kind {
	case "regex", "grammar", "json-schema":
		var s string
		if s, err = one(); err != nil {
			return nil, err
		}
		switch kind {
		case "regex":
			g, err = grammar.Regex(s)
		case "grammar":
			g, err = grammar.GBNF(s)
		default:
			g, err = grammar.JSONSchema([]byte(s), grammar.JSONOptions{})
		}
	case "choice":
		g, err = grammar.Choice(src)
	case "json-object":
		if len(src) != 0 {
			return nil, fmt.Errorf("%w: constraint: a json-object takes no source, got %d", ErrBadOption, len(src))
		}
		g, err = grammar.JSONObject(grammar.JSONOptions{})
	default:
		return nil, fmt.Errorf("%w: constraint: unknown kind %q (regex, choice, grammar, json-schema or json-object)", ErrBadOption, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	m, err := g.Bind(vocab.tokenBytes())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	if m.MustEnd(m.Start()) {
		return nil, fmt.Errorf("%w: the %s constraint matches only the empty text", ErrBadOption, kind)
	}
	return &Constraint{m: m, kind: kind, vocab: vocab, need: m.Remaining(m.Start())}, nil
}

// place is one sample's (or beam's) place in its constraint.
type place struct {
	c *Constraint
	s grammar.State
}

func (p *place) start(c *Constraint) {
	p.c = c
	if c != nil {
		p.s = c.m.Start()
	}
}

// errFormatEnded says a sample's text is a whole match that no token
// may extend within the tokens left: the sample ends there.
var errFormatEnded = errors.New("format complete")

// allowed sets mask to the tokens that may come next with left tokens to
// go, this one included. When none may, the text is complete (the
// tokens chosen so far kept it completable within the budget) and the
// error is errFormatEnded.
func (p *place) allowed(left int, mask []bool) error {
	if err := p.c.m.AllowedWithin(p.s, left, mask); err != nil {
		return constraintError(err)
	}
	if slices.Contains(mask, true) {
		return nil
	}
	if p.c.m.Complete(p.s) {
		return errFormatEnded
	}
	return fmt.Errorf("minigpt: constraint: no token completes the text within %d tokens", left) // AllowedWithin's promise broken
}

// advance moves past token id, and reports whether the text must end
// there (a whole match nothing may extend).
func (p *place) advance(id int) (mustEnd bool, err error) {
	s, err := p.c.m.Advance(p.s, id)
	if err != nil {
		return false, constraintError(err)
	}
	p.s = s
	return p.c.m.MustEnd(s), nil
}

// incomplete reports whether ids, a sample's text as returned, falls
// short of a whole match: cut by MaxNewTokens, a stop string or
// cancellation before the format was complete.
func (c *Constraint) incomplete(ids []int) bool {
	s := c.m.Start()
	for _, id := range ids {
		var err error
		if s, err = c.m.Advance(s, id); err != nil {
			return true
		}
	}
	return !c.m.Complete(s)
}

// Matches reports whether ids, tokens generated under c, are a whole
// match of its format (false for a Constraint not made by NewConstraint).
// A caller that delivered only part of a sample's text judges that part.
func (c *Constraint) Matches(ids []int) bool { return c != nil && c.m != nil && !c.incomplete(ids) }

// constraintError words an error of the engine while generating: a state
// too ambiguous to follow is the option's fault, anything else a bug.
func constraintError(err error) error {
	if errors.Is(err, grammar.ErrTooComplex) {
		return fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	return fmt.Errorf("minigpt: constraint: %w", err)
}
