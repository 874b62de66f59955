// Test helpers: the vocabularies, the random walk, and an oracle of
// liveness built on the standard library's compiled regexp program.

package grammar_test

import (
	"errors"
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	minigpt "example.org/minigpt"
	"example.org/minigpt/internal/grammar"
)

// lanternTokens is the embedded model's vocabulary: the distinct
// characters of minigpt.LanternBay in id order, as minigpt.NewVocab makes
// it (24 of them).
func lanternTokens(t testing.TB) [][]byte {
	t.Helper()
	v, err := minigpt.NewVocab(minigpt.LanternBay)
	if err != nil {
		t.Fatal(err)
	}
	var toks [][]byte
	for id := range v.Size() {
		toks = append(toks, []byte(v.Token(id)))
	}
	return toks
}

// charTokens is a character vocabulary: one token per character of s.
func charTokens(s string) [][]byte {
	var out [][]byte
	for _, r := range s {
		out = append(out, []byte(string(r)))
	}
	return out
}

// asciiTokens is every printable ASCII character and newline: a
// vocabulary that can write JSON.
func asciiTokens() [][]byte {
	var b strings.Builder
	for r := rune(' '); r < 127; r++ {
		b.WriteRune(r)
	}
	b.WriteString("\n")
	return charTokens(b.String())
}

// byteTokens is a byte-level vocabulary as byte-level BPE makes one: the
// 256 single bytes, then merges of 2 to 5 bytes of text cut at random
// offsets, so many of them begin or end inside a character.
func byteTokens(text string, merges int, seed uint64) [][]byte {
	var toks [][]byte
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	r := rand.New(rand.NewPCG(seed, 7))
	seen := map[string]bool{}
	for len(toks) < 256+merges {
		n := 2 + r.IntN(4)
		at := r.IntN(len(text) - n)
		s := text[at : at+n]
		if !seen[s] {
			seen[s] = true
			toks = append(toks, []byte(s))
		}
	}
	return toks
}

func bind(t testing.TB, g *grammar.Grammar, err error, toks [][]byte) *grammar.Matcher {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Bind(toks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// walker makes random walks: a random allowed token at each step.
type walker struct {
	m    *grammar.Matcher
	toks [][]byte
	r    *rand.Rand
	mask []bool
	full []bool
	ids  []int
	// step, when set, sees each state on the way with the text so far
	// and its mask.
	step func(s grammar.State, text []byte, mask []bool)
	// tolerant ends a walk (returning nil) at ErrTooComplex, the error a
	// state past the item cap gives, instead of failing.
	tolerant bool
}

func newWalker(m *grammar.Matcher, toks [][]byte, seed uint64) *walker {
	return &walker{m: m, toks: toks, r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		mask: make([]bool, len(toks)), full: make([]bool, len(toks))}
}

// walk makes one text. Half the walks take any allowed token for up to
// extra steps, then finish within Remaining more (plus a little); the
// other half keep to a budget of Remaining(Start()) + extra tokens from
// the start. Either way the text ends at random once complete (always when
// the state must end or the budget is spent). walk fails t when a state
// that is not complete allows no token, and checks that the budgeted mask
// is part of the full one and that MustEnd means no token is allowed.
func (w *walker) walk(t testing.TB, extra int) []byte {
	t.Helper()
	m := w.m
	s := m.Start()
	free, budget := extra, -1
	if w.r.IntN(2) == 0 {
		free, budget = 0, m.Remaining(s)+extra
	}
	text := []byte{}
	for n := 0; ; n++ {
		if n == free && budget < 0 {
			budget = n + m.Remaining(s) + w.r.IntN(5)
		}
		if err := m.Allowed(s, w.full); err != nil {
			t.Fatal(err)
		}
		left := -1
		if budget >= 0 {
			left = budget - n
		}
		if err := m.AllowedWithin(s, left, w.mask); err != nil {
			t.Fatal(err)
		}
		w.ids = w.ids[:0]
		for i, ok := range w.mask {
			if ok {
				if !w.full[i] {
					t.Fatalf("after %q: token %d within the budget but not allowed", text, i)
				}
				w.ids = append(w.ids, i)
			}
		}
		if w.step != nil {
			w.step(s, text, w.full)
		}
		if m.MustEnd(s) && slices.Contains(w.full, true) {
			t.Fatalf("after %q: MustEnd, yet a token is allowed", text)
		}
		if !m.Complete(s) && !slices.Contains(w.full, true) {
			t.Fatalf("after %q: no token allowed and the text is not complete", text)
		}
		if m.Complete(s) && (len(w.ids) == 0 || m.MustEnd(s) || w.r.IntN(3) == 0) {
			return text
		}
		if len(w.ids) == 0 {
			t.Fatalf("after %q (%d of %d tokens): no token within the budget and the text is not complete", text, n, budget)
		}
		id := w.ids[w.r.IntN(len(w.ids))]
		next, err := m.Advance(s, id)
		if w.tolerant && errors.Is(err, grammar.ErrTooComplex) {
			return nil
		}
		if err != nil {
			t.Fatalf("after %q: %v", text, err)
		}
		s = next
		text = append(text, w.toks[id]...)
	}
}

// progOracle decides, from the program regexp/syntax compiles for a
// pattern (the one package regexp runs), whether a text can still be
// completed into a whole match over an alphabet: independently of the
// engine under test, which compiles its own automaton.
type progOracle struct {
	prog  *syntax.Prog
	sigma func(in *syntax.Inst) bool // whether the alphabet meets in's characters
	onSig func(r rune) bool
	live  []bool // pc can reach Match reading characters of the alphabet, past the start
}

func newProgOracle(t testing.TB, pattern string, sigma []rune, allRunes bool) *progOracle {
	t.Helper()
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	o := &progOracle{prog: prog}
	if allRunes {
		o.onSig = func(r rune) bool { return utf8.ValidRune(r) }
		o.sigma = func(in *syntax.Inst) bool { return instMeetsValid(in) }
	} else {
		o.onSig = func(r rune) bool { return slices.Contains(sigma, r) }
		o.sigma = func(in *syntax.Inst) bool {
			for _, r := range sigma {
				if in.MatchRune(r) {
					return true
				}
			}
			return false
		}
	}
	o.live = make([]bool, len(prog.Inst))
	for changed := true; changed; {
		changed = false
		for pc := range prog.Inst {
			if !o.live[pc] && o.liveStep(pc) {
				o.live[pc], changed = true, true
			}
		}
	}
	return o
}

// instMeetsValid reports whether a rune instruction matches some valid
// code point.
func instMeetsValid(in *syntax.Inst) bool {
	switch in.Op {
	case syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		return true
	case syntax.InstRune1:
		return utf8.ValidRune(in.Rune[0])
	}
	for i := 0; i+1 < len(in.Rune); i += 2 {
		lo, hi := in.Rune[i], in.Rune[i+1]
		if utf8.ValidRune(lo) || utf8.ValidRune(hi) || lo < 0xD800 && hi > 0xDFFF {
			return true
		}
	}
	return len(in.Rune) == 1 && utf8.ValidRune(in.Rune[0])
}

func isRuneInst(op syntax.InstOp) bool {
	return op == syntax.InstRune || op == syntax.InstRune1 || op == syntax.InstRuneAny || op == syntax.InstRuneAnyNotNL
}

func (o *progOracle) liveStep(pc int) bool {
	in := &o.prog.Inst[pc]
	switch {
	case in.Op == syntax.InstMatch:
		return true
	case isRuneInst(in.Op):
		if !o.live[in.Out] || !o.sigma(in) {
			return false
		}
		if in.Op == syntax.InstRune1 || in.Op == syntax.InstRune {
			return o.anyMatch(in)
		}
		return true
	case in.Op == syntax.InstAlt || in.Op == syntax.InstAltMatch:
		return o.live[in.Out] || o.live[in.Arg]
	case in.Op == syntax.InstNop || in.Op == syntax.InstCapture:
		return o.live[in.Out]
	case in.Op == syntax.InstEmptyWidth && syntax.EmptyOp(in.Arg) == syntax.EmptyEndText:
		return o.ends(int(in.Out), false)
	}
	return false
}

// anyMatch reports whether in matches a character of the alphabet (sigma
// already said the alphabet meets it; for a list alphabet that is exact).
func (o *progOracle) anyMatch(in *syntax.Inst) bool { return o.sigma(in) }

// ends reports whether Match is reachable from pc without reading.
func (o *progOracle) ends(pc int, atStart bool) bool {
	seen := map[int]bool{}
	var visit func(pc int) bool
	visit = func(pc int) bool {
		if seen[pc] {
			return false
		}
		seen[pc] = true
		in := &o.prog.Inst[pc]
		switch in.Op {
		case syntax.InstMatch:
			return true
		case syntax.InstAlt, syntax.InstAltMatch:
			return visit(int(in.Out)) || visit(int(in.Arg))
		case syntax.InstNop, syntax.InstCapture:
			return visit(int(in.Out))
		case syntax.InstEmptyWidth:
			switch syntax.EmptyOp(in.Arg) {
			case syntax.EmptyEndText:
				return visit(int(in.Out))
			case syntax.EmptyBeginText:
				return atStart && visit(int(in.Out))
			}
		}
		return false
	}
	return visit(pc)
}

// oracleState is a set of program counters (rune instructions, Match,
// and \z waiting for the end) after some text.
type oracleState struct {
	pcs     []int
	atStart bool
}

func (o *progOracle) closure(seeds []int, atStart bool) oracleState {
	seen := map[int]bool{}
	var out []int
	var add func(pc int)
	add = func(pc int) {
		if seen[pc] {
			return
		}
		seen[pc] = true
		in := &o.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			add(int(in.Out))
			add(int(in.Arg))
		case syntax.InstNop, syntax.InstCapture:
			add(int(in.Out))
		case syntax.InstEmptyWidth:
			switch syntax.EmptyOp(in.Arg) {
			case syntax.EmptyBeginText:
				if atStart {
					add(int(in.Out))
				}
			case syntax.EmptyEndText:
				out = append(out, pc)
			}
		case syntax.InstMatch:
			out = append(out, pc)
		case syntax.InstFail:
		default:
			out = append(out, pc)
		}
	}
	for _, pc := range seeds {
		add(pc)
	}
	slices.Sort(out)
	return oracleState{out, atStart}
}

func (o *progOracle) start() oracleState { return o.closure([]int{o.prog.Start}, true) }

func (o *progOracle) step(s oracleState, r rune) oracleState {
	var seeds []int
	for _, pc := range s.pcs {
		if in := &o.prog.Inst[pc]; isRuneInst(in.Op) && in.MatchRune(r) {
			seeds = append(seeds, int(in.Out))
		}
	}
	return o.closure(seeds, false)
}

func (o *progOracle) complete(s oracleState) bool {
	for _, pc := range s.pcs {
		if in := &o.prog.Inst[pc]; in.Op == syntax.InstMatch || in.Op == syntax.InstEmptyWidth && o.ends(pc, s.atStart) {
			return true
		}
	}
	return false
}

// viable reports whether some text over the alphabet completes s
// (possibly the empty one).
func (o *progOracle) viable(s oracleState) bool {
	if o.complete(s) {
		return true
	}
	for _, pc := range s.pcs {
		if o.live[pc] {
			return true
		}
	}
	return false
}

// viablePartial reports whether s, followed by a character beginning with
// the bytes p, can be completed: some character whose UTF-8 form begins
// with p leads to a viable state.
func (o *progOracle) viablePartial(s oracleState, p []byte) bool {
	lo, hi := prefixRange(p)
	if lo < 0 {
		return false
	}
	// Membership only changes at the bounds of the instructions' ranges,
	// so trying those bounds (within lo..hi) tries every case.
	cands := []rune{lo, hi}
	for _, pc := range s.pcs {
		in := &o.prog.Inst[pc]
		if in.Op == syntax.InstRune {
			for _, r := range in.Rune {
				for _, c := range []rune{r - 1, r, r + 1} {
					if c >= lo && c <= hi {
						cands = append(cands, c)
					}
				}
			}
		}
		if in.Op == syntax.InstRune1 {
			cands = append(cands, in.Rune[0])
		}
	}
	for _, r := range cands {
		if r >= lo && r <= hi && utf8.ValidRune(r) && o.viable(o.step(s, r)) {
			return true
		}
	}
	return false
}

var (
	prefixOnce   sync.Once
	prefixRanges map[string][2]rune
)

// prefixRange returns the least and greatest code points whose UTF-8 form
// begins with p (a proper prefix), found once by encoding every code
// point; lo < 0 when none does.
func prefixRange(p []byte) (lo, hi rune) {
	prefixOnce.Do(func() {
		prefixRanges = map[string][2]rune{}
		var buf [4]byte
		for r := rune(0x80); r <= utf8.MaxRune; r++ {
			if !utf8.ValidRune(r) {
				continue
			}
			n := utf8.EncodeRune(buf[:], r)
			for k := 1; k < n; k++ {
				key := string(buf[:k])
				if v, ok := prefixRanges[key]; ok {
					prefixRanges[key] = [2]rune{min(v[0], r), max(v[1], r)}
				} else {
					prefixRanges[key] = [2]rune{r, r}
				}
			}
		}
	})
	v, ok := prefixRanges[string(p)]
	if !ok {
		return -1, -1
	}
	return v[0], v[1]
}
