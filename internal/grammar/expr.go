// The expression tree every compiler (regex, choice, GBNF, JSON Schema)
// produces: rules whose bodies are regular expressions over code points
// that may call other rules.

package grammar

import (
	"fmt"
	"math"
)

type exprOp uint8

const (
	opEmpty  exprOp = iota // the empty string
	opNone                 // no string at all
	opClass                // one code point of set
	opConcat               // subs in order
	opAlt                  // any one of subs
	opRepeat               // subs[0] between min and max times (max < 0: no bound)
	opRef                  // a call of rule
	opBegin                // empty, but only where the rule's text begins (regex \A)
	opEnd                  // empty, but only where the rule's text ends (regex \z)
)

// expr is a node of a rule's body.
type expr struct {
	op       exprOp
	set      runeSet // opClass
	subs     []*expr // opConcat, opAlt; opRepeat: one
	min, max int     // opRepeat
	rule     int     // opRef: index into the grammar's rules
}

// ruleDef is one rule of a grammar before it is compiled.
type ruleDef struct {
	name string
	body *expr
	off  int // byte offset of its definition in the source, or -1
}

func empty() *expr               { return &expr{op: opEmpty} }
func none() *expr                { return &expr{op: opNone} }
func class(s runeSet) *expr      { return &expr{op: opClass, set: s} }
func char(r rune) *expr          { return class(single(r)) }
func ref(rule int) *expr         { return &expr{op: opRef, rule: rule} }
func concat(subs ...*expr) *expr { return &expr{op: opConcat, subs: subs} }
func alt(subs ...*expr) *expr    { return &expr{op: opAlt, subs: subs} }
func opt(e *expr) *expr          { return repeat(e, 0, 1) }
func star(e *expr) *expr         { return repeat(e, 0, -1) }
func repeat(e *expr, lo, hi int) *expr {
	return &expr{op: opRepeat, subs: []*expr{e}, min: lo, max: hi}
}

// literal is the concatenation of the code points of s.
func literal(s string) *expr {
	subs := make([]*expr, 0, len(s))
	for _, r := range s {
		subs = append(subs, char(r))
	}
	return concat(subs...)
}

// size estimates how many automaton states e compiles to, saturating at
// math.MaxInt32 so that nested repetitions cannot overflow it.
func (e *expr) size() int {
	sat := func(n int) int { return min(n, math.MaxInt32) }
	switch e.op {
	case opConcat, opAlt:
		n := 1
		for _, s := range e.subs {
			n = sat(n + s.size())
		}
		return n
	case opRepeat:
		k := e.max
		if k < 0 {
			k = max(e.min, 1)
		}
		// k copies of the body, one state between each.
		body := e.subs[0].size()
		if k > 0 && body > (math.MaxInt32-k-1)/k {
			return math.MaxInt32
		}
		return k*body + k + 1
	}
	return 1
}

// hasAnchors reports whether e holds opBegin or opEnd.
func (e *expr) hasAnchors() bool {
	if e.op == opBegin || e.op == opEnd {
		return true
	}
	for _, s := range e.subs {
		if s.hasAnchors() {
			return true
		}
	}
	return false
}

// String writes e in a GBNF-like notation, for tests and debugging.
func (e *expr) String() string {
	switch e.op {
	case opEmpty:
		return `""`
	case opNone:
		return "!"
	case opClass:
		return e.set.String()
	case opRef:
		return fmt.Sprintf("r%d", e.rule)
	case opBegin:
		return "^"
	case opEnd:
		return "$"
	case opRepeat:
		return fmt.Sprintf("(%v){%d,%d}", e.subs[0], e.min, e.max)
	}
	sep := " "
	if e.op == opAlt {
		sep = " | "
	}
	s := "("
	for i, sub := range e.subs {
		if i > 0 {
			s += sep
		}
		s += sub.String()
	}
	return s + ")"
}
