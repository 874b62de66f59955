// Errors of the constraint engine: the sentinels callers branch on and the
// positioned error of a malformed constraint.

package grammar

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

var (
	// ErrSyntax is wrapped by the error of a malformed constraint: a
	// pattern RE2 refuses, a grammar or schema that does not parse.
	ErrSyntax = errors.New("malformed constraint")
	// ErrUnsupported is wrapped by the error of a well-formed constraint
	// this engine cannot hold exactly (a word boundary, an unknown JSON
	// Schema keyword).
	ErrUnsupported = errors.New("unsupported constraint")
	// ErrTooLarge is wrapped when a constraint exceeds one of the size
	// caps (text, nesting, repetition, automaton states, rules).
	ErrTooLarge = errors.New("constraint too large")
	// ErrUnsatisfiable is wrapped by Bind's error when no text over the
	// vocabulary completes the constraint; the message names what is
	// missing.
	ErrUnsatisfiable = errors.New("constraint cannot be satisfied over this vocabulary")
	// ErrTooComplex is wrapped when a state of a grammar would hold more
	// than MaxItems parse items (a highly ambiguous grammar).
	ErrTooComplex = errors.New("constraint too complex")
	// ErrNotAllowed is wrapped by Advance for a token the state does not
	// allow, and by the methods given a token id outside the vocabulary or
	// a state of another matcher.
	ErrNotAllowed = errors.New("token not allowed")
)

// Error is the error of a malformed, unsupported or oversized constraint:
// which kind of text, where in it, and what is wrong.
type Error struct {
	Source string // "regex", "grammar", "choice" or "json schema"
	// Offset is the character (code point) index, from 0, at which the
	// problem lies, or -1 when it has no single place.
	Offset int
	// Line and Column (from 1, in characters) locate Offset in text of
	// several lines; both are 0 for text of one line.
	Line, Column int
	Msg          string
	Kind         error // ErrSyntax, ErrUnsupported or ErrTooLarge
	Cause        error // the underlying error (a *syntax.Error), or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	b.WriteString(": ")
	switch {
	case e.Offset >= 0 && e.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d (character %d): ", e.Line, e.Column, e.Offset)
	case e.Offset >= 0:
		fmt.Fprintf(&b, "at character %d: ", e.Offset)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the kind and the cause, so errors.Is finds the sentinel
// and errors.As the cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// newError builds an Error at byte offset off of text (-1: no position),
// converting it to a character index and, for text of several lines, to a
// line and column.
func newError(source, text string, off int, kind error, format string, args ...any) *Error {
	e := &Error{Source: source, Offset: -1, Msg: fmt.Sprintf(format, args...), Kind: kind}
	if off < 0 {
		return e
	}
	off = min(off, len(text))
	e.Offset = utf8.RuneCountInString(text[:off])
	if strings.ContainsRune(text, '\n') {
		lineStart := strings.LastIndexByte(text[:off], '\n') + 1
		e.Line = strings.Count(text[:lineStart], "\n") + 1
		e.Column = utf8.RuneCountInString(text[lineStart:off]) + 1
	}
	return e
}
