// Grammar: the compiled, vocabulary-free automaton every constraint
// becomes, and the caps that bound it.

package grammar

import (
	"slices"
	"strings"
)

// The caps. Each bounds a cost the engine would otherwise let a request
// choose: memory at compile time, or work and memory per generated token.
const (
	// MaxSource bounds the text of a pattern, grammar or schema, and of
	// all the options of a choice together, in bytes.
	MaxSource = 64 << 10
	// MaxNesting bounds groups nested inside groups (in a grammar or a
	// pattern, as RE2's own parser does) and schemas nested inside
	// schemas.
	MaxNesting = 1000
	// MaxRepeat bounds a count in a grammar's {m,n} (llama.cpp's own
	// limit) and JSON Schema's minLength, maxLength, minItems, maxItems.
	// RE2 bounds a pattern's counts at 1000 itself.
	MaxRepeat = 2000
	// MaxStates bounds the automaton states a constraint compiles to, so
	// a repetition of a repetition cannot make a huge automaton.
	MaxStates = 1 << 17
	// MaxRules bounds the rules of a grammar (a JSON schema's rules
	// included).
	MaxRules = 1 << 14
	// MaxStackDepth bounds how many rule calls may be open at once while
	// generating: outputs that would need deeper nesting are not offered,
	// and liveness accounts for the cap, so generation never reaches one.
	MaxStackDepth = 1024
	// MaxItems bounds the parse items (an automaton state at a nesting
	// depth) one step's closure visits: the cost of a new state. A step
	// that would visit more is ErrTooComplex.
	MaxItems = 1 << 14
	// MaxCacheBytes bounds a Matcher's cache of states, masks and
	// transitions; past it the cache is emptied and rebuilt on demand,
	// which changes speed, never a result.
	MaxCacheBytes = 64 << 20
	// MaxTokenBytes bounds the text of one token, and MaxVocab the
	// number of tokens.
	MaxTokenBytes = 1 << 12
	MaxVocab      = 1 << 21
)

// Grammar is a compiled constraint: a recursive transition network, one
// automaton over code points per rule, whose edges read a character,
// call a rule, or move without reading. It does not depend on any
// vocabulary; Bind ties it to one. A Grammar is immutable and safe for
// concurrent use.
type Grammar struct {
	source string // "regex", "grammar", "choice" or "json schema"
	noun   string // how messages name it: "the pattern", "the grammar", ...
	states []gstate
	sets   []runeSet // the labels of character edges
	rules  []grule
	root   int32

	// Character classes: every code point in one class takes the same
	// edges. bounds[c] is the first code point of class c.
	bounds []rune
	ascii  [128]int32
}

// gstate is one automaton state of one rule.
type gstate struct {
	eps   []int32 // states reached without reading
	runes []redge // edges that read one character
	refs  []fedge // edges that call a rule
	final bool    // the rule may end here
	// tail: from here the rule can only end, so a call returning here
	// needs no stack frame (the callee returns straight to our caller).
	tail bool
}

type redge struct{ set, to int32 }
type fedge struct{ rule, to int32 }

type grule struct {
	name  string
	start int32
	off   int // byte offset of the definition in the source, or -1
}

// class returns the character class of r.
func (g *Grammar) class(r rune) int32 {
	if r >= 0 && r < 128 {
		return g.ascii[r]
	}
	i, _ := slices.BinarySearch(g.bounds, r+1)
	return int32(i - 1)
}

// builder compiles rule bodies into states.
type builder struct {
	st    []bstate
	sets  []runeSet
	setID map[string]int32
}

// bstate is a state while it is built: anchors are edges that may only
// be taken where the rule's text begins or ends, until anchored removes
// them.
type bstate struct {
	gstate
	begin, end []int32
}

func (b *builder) newState() int32 {
	b.st = append(b.st, bstate{})
	return int32(len(b.st) - 1)
}

func (b *builder) set(s runeSet) int32 {
	var k strings.Builder
	for _, r := range s {
		k.WriteString(string([]rune{r.lo, r.hi}))
	}
	if id, ok := b.setID[k.String()]; ok {
		return id
	}
	b.sets = append(b.sets, s)
	id := int32(len(b.sets) - 1)
	b.setID[k.String()] = id
	return id
}

// build adds to b paths from state from to state to that spell exactly
// the strings of e. It never adds an edge out of to or into from other
// than those paths, so alternatives may share both ends.
func (b *builder) build(e *expr, from, to int32) {
	switch e.op {
	case opEmpty:
		b.st[from].eps = append(b.st[from].eps, to)
	case opNone:
	case opClass:
		if !e.set.empty() {
			b.st[from].runes = append(b.st[from].runes, redge{b.set(e.set), to})
		}
	case opRef:
		b.st[from].refs = append(b.st[from].refs, fedge{int32(e.rule), to})
	case opBegin:
		b.st[from].begin = append(b.st[from].begin, to)
	case opEnd:
		b.st[from].end = append(b.st[from].end, to)
	case opConcat:
		if len(e.subs) == 0 {
			b.st[from].eps = append(b.st[from].eps, to)
			return
		}
		cur := from
		for i, s := range e.subs {
			next := to
			if i < len(e.subs)-1 {
				next = b.newState()
			}
			b.build(s, cur, next)
			cur = next
		}
	case opAlt:
		for _, s := range e.subs {
			b.build(s, from, to)
		}
	case opRepeat:
		x := e.subs[0]
		cur := from
		for i := range e.min {
			if i == e.min-1 && e.max < 0 {
				// x{m,}: the last copy runs from a to z, and z may go
				// back to a for another or on to the end.
				a, z := b.newState(), b.newState()
				b.st[cur].eps = append(b.st[cur].eps, a)
				b.build(x, a, z)
				b.st[z].eps = append(b.st[z].eps, a, to)
				cur = to
				break
			}
			next := to
			if i < e.min-1 || e.max != e.min {
				next = b.newState()
			}
			b.build(x, cur, next)
			cur = next
		}
		switch {
		case e.max == e.min:
			if e.min == 0 {
				b.st[from].eps = append(b.st[from].eps, to)
			}
		case e.max < 0 && e.min > 0:
			// The last required copy loops back on itself, so x+
			// holds one copy of x, not two, and nested pluses stay
			// linear.
		case e.max < 0:
			s := b.newState()
			b.st[cur].eps = append(b.st[cur].eps, s)
			b.build(x, s, s)
			b.st[s].eps = append(b.st[s].eps, to)
		default:
			for i := range e.max - e.min {
				b.st[cur].eps = append(b.st[cur].eps, to)
				next := to
				if i < e.max-e.min-1 {
					next = b.newState()
				}
				b.build(x, cur, next)
				cur = next
			}
		}
	}
}

// anchored rewrites a rule built from state 0 (its start) whose text may
// hold anchors into one without: each state is split by whether nothing
// has been read yet (where \A holds) and whether \z has been passed
// (after which nothing may be read). It returns the new states, the new
// start being 0.
func anchored(st []bstate) []bstate {
	type key struct {
		s             int32
		atStart, done bool
	}
	ids := map[key]int32{}
	var order []key
	id := func(k key) int32 {
		if i, ok := ids[k]; ok {
			return i
		}
		ids[k] = int32(len(order))
		order = append(order, k)
		return ids[k]
	}
	id(key{0, true, false})
	var out []bstate
	for i := 0; i < len(order); i++ {
		k := order[i]
		src := &st[k.s]
		var ns bstate
		ns.final = src.final
		for _, t := range src.eps {
			ns.eps = append(ns.eps, id(key{t, k.atStart, k.done}))
		}
		if k.atStart {
			for _, t := range src.begin {
				ns.eps = append(ns.eps, id(key{t, true, k.done}))
			}
		}
		for _, t := range src.end {
			ns.eps = append(ns.eps, id(key{t, k.atStart, true}))
		}
		if !k.done {
			for _, e := range src.runes {
				ns.runes = append(ns.runes, redge{e.set, id(key{e.to, false, false})})
			}
			for _, e := range src.refs {
				ns.refs = append(ns.refs, fedge{e.rule, id(key{e.to, false, false})})
			}
		}
		out = append(out, ns)
	}
	return out
}

// compile builds the Grammar of rules, starting at rules[root]. text is
// the source the rules came from, for the positions of errors.
func compile(source, noun, text string, rules []ruleDef, root int) (*Grammar, error) {
	if len(rules) > MaxRules {
		return nil, newError(source, text, -1, ErrTooLarge, "%d rules, more than the cap of %d", len(rules), MaxRules)
	}
	total := 0
	for _, r := range rules {
		total += r.body.size()
		if total > MaxStates {
			return nil, newError(source, text, r.off, ErrTooLarge, "the %s compiles to more than %d automaton states", source, MaxStates)
		}
	}
	g := &Grammar{source: source, noun: noun, root: int32(root)}
	b := &builder{setID: map[string]int32{}}
	for _, r := range rules {
		b.st = b.st[:0]
		b.newState() // 0: start
		b.newState() // 1: end
		b.st[1].final = true
		b.build(r.body, 0, 1)
		local := b.st
		if r.body.hasAnchors() {
			local = anchored(local)
		}
		base := int32(len(g.states))
		g.rules = append(g.rules, grule{name: r.name, start: base, off: r.off})
		for _, s := range local {
			ns := s.gstate
			ns.eps = offset(ns.eps, base)
			for i := range ns.runes {
				ns.runes[i].to += base
			}
			for i := range ns.refs {
				ns.refs[i].to += base
			}
			g.states = append(g.states, ns)
		}
		if len(g.states) > MaxStates {
			return nil, newError(source, text, r.off, ErrTooLarge, "the %s compiles to more than %d automaton states", source, MaxStates)
		}
	}
	g.sets = b.sets
	g.markTails()
	g.makeClasses()
	if err := g.checkLeftRecursion(text); err != nil {
		return nil, err
	}
	// A constraint no text at all satisfies is a mistake in it, whatever
	// the vocabulary: say so now rather than at Bind.
	if need := g.need(validRunes); need[g.rules[root].start] > MaxStackDepth {
		if g.depthFree(validRunes)[g.rules[root].start] {
			return nil, newError(source, text, -1, ErrTooLarge, "every text of %s nests rule calls deeper than the cap of %d", noun, MaxStackDepth)
		}
		return nil, newError(source, text, rules[root].off, ErrSyntax, "%s matches no text at all", noun)
	}
	return g, nil
}

func offset(s []int32, base int32) []int32 {
	for i := range s {
		s[i] += base
	}
	return s
}

// markTails sets tail on the states from which only the end of the rule
// is reachable, without reading or calling: propagated backwards along
// eps edges from the final states, less those that can reach an edge.
func (g *Grammar) markTails() {
	n := len(g.states)
	rev := make([][]int32, n)
	for s := range g.states {
		for _, t := range g.states[s].eps {
			rev[t] = append(rev[t], int32(s))
		}
	}
	spread := func(seed func(int) bool) []bool {
		mark := make([]bool, n)
		var q []int32
		for s := range n {
			if seed(s) {
				mark[s] = true
				q = append(q, int32(s))
			}
		}
		for len(q) > 0 {
			s := q[len(q)-1]
			q = q[:len(q)-1]
			for _, p := range rev[s] {
				if !mark[p] {
					mark[p] = true
					q = append(q, p)
				}
			}
		}
		return mark
	}
	fin := spread(func(s int) bool { return g.states[s].final })
	busy := spread(func(s int) bool { return len(g.states[s].runes)+len(g.states[s].refs) > 0 })
	for s := range g.states {
		g.states[s].tail = fin[s] && !busy[s]
	}
}

// makeClasses splits the code points into the classes of g.
func (g *Grammar) makeClasses() {
	bounds := []rune{0}
	for _, s := range g.sets {
		for _, r := range s {
			bounds = append(bounds, r.lo, r.hi+1)
		}
	}
	slices.Sort(bounds)
	g.bounds = slices.Compact(bounds)
	for r := range rune(128) {
		i, _ := slices.BinarySearch(g.bounds, r+1)
		g.ascii[r] = int32(i - 1)
	}
}

// checkLeftRecursion refuses a rule that can call itself before reading
// a character: the parser would push frames forever (llama.cpp refuses it
// too). A call of a rule that can end without reading is passed over to
// see what follows it.
func (g *Grammar) checkLeftRecursion(text string) error {
	nullable := g.nullable()
	left := make([][]int32, len(g.rules)) // rules called before any character
	seen := make([]int32, len(g.states))
	for i := range seen {
		seen[i] = -1
	}
	for r, rule := range g.rules {
		stack := []int32{rule.start}
		seen[rule.start] = int32(r)
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			next := g.states[s].eps
			for _, e := range g.states[s].refs {
				if !slices.Contains(left[r], e.rule) {
					left[r] = append(left[r], e.rule)
				}
				if nullable[e.rule] {
					next = append(next[:len(next):len(next)], e.to)
				}
			}
			for _, t := range next {
				if seen[t] != int32(r) {
					seen[t] = int32(r)
					stack = append(stack, t)
				}
			}
		}
	}
	// Find a cycle by depth-first search, without recursion.
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.rules))
	for r0 := range g.rules {
		if color[r0] != white {
			continue
		}
		type frame struct{ r, i int32 }
		path := []frame{{int32(r0), 0}}
		color[r0] = grey
		for len(path) > 0 {
			top := &path[len(path)-1]
			if int(top.i) == len(left[top.r]) {
				color[top.r] = black
				path = path[:len(path)-1]
				continue
			}
			next := left[top.r][top.i]
			top.i++
			switch color[next] {
			case white:
				color[next] = grey
				path = append(path, frame{next, 0})
			case grey:
				var names []string
				from := slices.IndexFunc(path, func(f frame) bool { return f.r == next })
				for _, f := range path[from:] {
					names = append(names, g.rules[f.r].name)
				}
				names = append(names, g.rules[next].name)
				return newError(g.source, text, g.rules[next].off, ErrUnsupported,
					"rule %s is left-recursive (%s): it can call itself before reading a character",
					g.rules[next].name, strings.Join(names, " -> "))
			}
		}
	}
	return nil
}
