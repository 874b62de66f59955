// Matcher: a Grammar bound to a vocabulary, with the per-sample State and
// the masks of allowed tokens.

package grammar

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
)

// Matcher is a Grammar bound to one vocabulary. It is immutable in what it
// answers and safe for concurrent use: its cache of states, masks and
// transitions sits behind a mutex, and every answer is a function of the
// State asked about alone, whatever else ran before or at the same time.
type Matcher struct {
	g    *Grammar
	v    *vocab
	need []int32 // per state: frames finishing its rule must open (analysis.go)
	dist []int64 // per state: fewest base units that finish its rule

	mu     sync.Mutex
	c      *cache
	sc     scratch
	one    [1]frameRef
	start  *node
	budget int // cache bytes before a flush (MaxCacheBytes; tests lower it)
}

// State is where one sample stands in the constraint: a small value the
// sampler owns and replaces with each Advance. The zero State is not
// valid; Start gives the first.
type State struct{ n *node }

// Bind ties g to a vocabulary: tokens[i] is the text of token i, as
// bytes. A token may be one character, several, or part of one (a
// byte-level BPE token); a token of no bytes is never allowed (pass nil
// for special tokens the constraint must never allow). Bind refuses, with
// an error wrapping ErrUnsatisfiable that names the missing characters, a
// constraint that no text over the vocabulary completes. It is
// NewVocabulary then BindVocabulary; a server binding many constraints to
// one model prepares the vocabulary once.
func (g *Grammar) Bind(tokens [][]byte) (*Matcher, error) {
	v, err := NewVocabulary(tokens)
	if err != nil {
		return nil, err
	}
	return g.BindVocabulary(v)
}

// BindVocabulary is Bind for a prepared vocabulary.
func (g *Grammar) BindVocabulary(voc *Vocabulary) (*Matcher, error) {
	v := voc.v
	m := &Matcher{g: g, v: v, budget: MaxCacheBytes}
	m.need = g.need(v.prod)
	unit := make([]int64, len(g.sets))
	for i, s := range g.sets {
		unit[i] = v.unitCost(s)
	}
	m.dist = g.distance(unit)
	m.c = newCache(0)
	m.sc.init(len(g.states))
	if start := g.rules[g.root].start; int(m.need[start]) > MaxStackDepth {
		return nil, m.unsatisfiable()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.startNode()
	if err == nil && n == nil {
		err = m.unsatisfiable()
	}
	if err == nil {
		err = m.fillMask(n)
	}
	if err != nil {
		return nil, err
	}
	m.start = n
	return m, nil
}

// bindBudget is Bind with a cache budget of its own, for tests of the
// flush.
func (g *Grammar) bindBudget(tokens [][]byte, budget int) (*Matcher, error) {
	m, err := g.Bind(tokens)
	if m != nil {
		m.budget = budget
	}
	return m, err
}

// unsatisfiable explains why no text over the vocabulary completes g.
func (m *Matcher) unsatisfiable() error {
	g := m.g
	sets, more, total := g.missing(m.v.prod, 4)
	verb := "needs"
	if strings.HasSuffix(g.noun, "s") {
		verb = "need"
	}
	if total == 0 {
		return fmt.Errorf("%w: %s %s rule calls nested deeper than the cap of %d", ErrUnsatisfiable, g.noun, verb, MaxStackDepth)
	}
	var parts []string
	for _, s := range sets {
		if len(s) == 1 && s[0].lo == s[0].hi {
			parts = append(parts, s.String())
		} else {
			parts = append(parts, "one of "+s.String())
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("%w: %s %s characters the model never writes", ErrUnsatisfiable, g.noun, verb)
	}
	if more {
		parts = append(parts, "more")
	}
	list := parts[0]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return fmt.Errorf("%w: %s %s %s, which the model never writes", ErrUnsatisfiable, g.noun, verb, list)
}

// Start returns the state before any token.
func (m *Matcher) Start() State { return State{m.start} }

// VocabSize returns the number of tokens the matcher was bound to.
func (m *Matcher) VocabSize() int { return m.v.size }

// Complete reports whether the text of s is a whole match.
func (m *Matcher) Complete(s State) bool {
	return s.n != nil && s.n.owner == m && s.n.accept && s.n.npend == 0
}

// MustEnd reports whether the text of s is a whole match that no token
// may extend: the sampler then stops with finish reason "stop".
func (m *Matcher) MustEnd(s State) bool {
	if !m.Complete(s) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	return err == nil && n.count == 0
}

// Remaining returns the fewest tokens that complete the text of s: 0 when
// it is complete. It counts base units (tokens of one character or one
// byte), so a completion of that many tokens exists; one using longer
// tokens may be shorter. It ignores MaxStackDepth, which only a completion
// nesting rule calls past the cap could make wrong.
func (m *Matcher) Remaining(s State) int {
	if s.n == nil || s.n.owner != m || s.n.rem == inf {
		return -1
	}
	return int(min(s.n.rem, int64(^uint(0)>>1)))
}

// Allowed sets mask[i] to whether token i may come next: exactly the
// tokens after which the text can still be completed over the vocabulary
// (see the package documentation for when this is exact). mask must have
// VocabSize entries.
func (m *Matcher) Allowed(s State, mask []bool) error {
	return m.AllowedWithin(s, -1, mask)
}

// AllowedWithin is Allowed, less the tokens after which no completion of
// at most budget tokens in all (this one included) exists, by the count of
// Remaining; budget < 0 means no bound. A sampler that passes the tokens
// it has left completes the text by its last token whenever
// Remaining(Start()) fitted.
func (m *Matcher) AllowedWithin(s State, budget int, mask []bool) error {
	if len(mask) != m.v.size {
		return fmt.Errorf("%w: mask of %d entries for a vocabulary of %d", ErrNotAllowed, len(mask), m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return err
	}
	clear(mask)
	if budget == 0 {
		return nil
	}
	all := budget < 0 || int64(budget-1) >= n.most
	for w, word := range n.mask {
		for word != 0 {
			i := w<<6 + bits.TrailingZeros64(word)
			word &= word - 1
			mask[i] = all || n.after(int32(i)).rem <= int64(budget-1)
		}
	}
	return nil
}

// AllowedBits is Allowed into a bitset, for large vocabularies: bit
// i%64 of mask[i/64] is set when token i may come next. mask must have
// (VocabSize+63)/64 words.
func (m *Matcher) AllowedBits(s State, mask []uint64) error {
	if len(mask) != (m.v.size+63)/64 {
		return fmt.Errorf("%w: mask of %d words for a vocabulary of %d", ErrNotAllowed, len(mask), m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return err
	}
	copy(mask, n.mask)
	return nil
}

// Allows reports whether token tok may come next in s.
func (m *Matcher) Allows(s State, tok int) bool {
	if tok < 0 || tok >= m.v.size {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	return err == nil && n.mask[tok>>6]&(1<<(tok&63)) != 0
}

// Advance returns the state after token tok. A token Allowed does not
// allow is an error wrapping ErrNotAllowed. The error wraps ErrTooComplex
// when the next state, or one a token could lead to from it, would hold
// more than MaxItems items; that depends on the state alone.
func (m *Matcher) Advance(s State, tok int) (State, error) {
	if tok < 0 || tok >= m.v.size {
		return State{}, fmt.Errorf("%w: token %d outside the vocabulary of %d", ErrNotAllowed, tok, m.v.size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.ready(s)
	if err != nil {
		return State{}, err
	}
	if n.mask[tok>>6]&(1<<(tok&63)) == 0 {
		return State{}, fmt.Errorf("%w: token %d cannot follow here", ErrNotAllowed, tok)
	}
	next := n.after(int32(tok))
	// Compute the next mask now, so that an error surfaces here and
	// Allowed, MustEnd never meet one.
	if next.mask == nil {
		if err := m.fillMask(next); err != nil {
			return State{}, err
		}
	}
	return State{next}, nil
}

var errBadState = fmt.Errorf("%w: state of another matcher, or the zero State", ErrNotAllowed)

// ready returns the node of s in the current generation with its mask,
// flushing the cache first when it is over budget. m.mu is held.
func (m *Matcher) ready(s State) (*node, error) {
	if s.n == nil || s.n.owner != m {
		return nil, errBadState
	}
	if m.c.bytes > m.budget {
		m.flush()
	}
	n := m.resolve(s.n)
	if n.mask == nil {
		if err := m.fillMask(n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// live reports whether state q at depth d can still finish its rule, and
// so the whole text, within the stack cap using base units.
func (m *Matcher) live(q int32, d int32) bool {
	return int(m.need[q]) <= MaxStackDepth-int(d)
}

// startNode computes the node before any token; nil when dead.
func (m *Matcher) startNode() (*node, error) {
	m.sc.begin()
	if err := m.add(m.g.rules[m.g.root].start, bottom); err != nil {
		return nil, err
	}
	return m.closeNode()
}
