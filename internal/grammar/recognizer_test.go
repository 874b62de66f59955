// An independent recogniser of GBNF grammars for the tests: its own small
// parser (one rule per line) and a memoized backtracking matcher that
// computes the set of places where each rule can end.

package grammar_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

type rnode struct {
	kind     byte // '"' literal, '[' class, '.' any, '|' alternatives, ',' sequence, '*' repetition, 'r' rule
	lit      []rune
	ranges   [][2]rune
	negate   bool
	subs     []*rnode
	min, max int // '*': max < 0 is no bound
	name     string
}

type recogniser struct {
	rules map[string]*rnode
	text  []rune
	memo  map[string][]int
}

// newRecogniser parses src: one rule "name ::= body" per line, # comments.
func newRecogniser(src string) (*recogniser, error) {
	rc := &recogniser{rules: map[string]*rnode{}}
	for _, line := range strings.Split(src, "\n") {
		line = stripComment(line)
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, body, ok := strings.Cut(line, "::=")
		if !ok {
			return nil, fmt.Errorf("no ::= in %q", line)
		}
		p := &rparser{s: []rune(body)}
		n, err := p.alts()
		if err != nil {
			return nil, err
		}
		p.blank()
		if p.i != len(p.s) {
			return nil, fmt.Errorf("junk at %d in %q", p.i, body)
		}
		rc.rules[strings.TrimSpace(name)] = n
	}
	return rc, nil
}

func stripComment(line string) string {
	inStr, inClass := false, false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\':
			i++
		case inStr:
			inStr = c != '"'
		case inClass:
			inClass = c != ']'
		case c == '"':
			inStr = true
		case c == '[':
			inClass = true
		case c == '#':
			return line[:i]
		}
	}
	return line
}

type rparser struct {
	s []rune
	i int
}

func (p *rparser) blank() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *rparser) at(r rune) bool { p.blank(); return p.i < len(p.s) && p.s[p.i] == r }

func (p *rparser) alts() (*rnode, error) {
	n := &rnode{kind: '|'}
	for {
		seq, err := p.seq()
		if err != nil {
			return nil, err
		}
		n.subs = append(n.subs, seq)
		if !p.at('|') {
			return n, nil
		}
		p.i++
	}
}

func (p *rparser) seq() (*rnode, error) {
	n := &rnode{kind: ','}
	for {
		p.blank()
		if p.i == len(p.s) || p.s[p.i] == '|' || p.s[p.i] == ')' {
			return n, nil
		}
		a, err := p.atom()
		if err != nil {
			return nil, err
		}
		for p.i < len(p.s) {
			lo, hi := -1, 0
			switch p.s[p.i] {
			case '*':
				lo, hi = 0, -1
			case '+':
				lo, hi = 1, -1
			case '?':
				lo, hi = 0, 1
			case '{':
				end := slices.Index(p.s[p.i:], '}')
				a, b, comma := strings.Cut(string(p.s[p.i+1:p.i+end]), ",")
				lo, _ = strconv.Atoi(a)
				hi = lo
				if comma {
					hi = -1
					if b != "" {
						hi, _ = strconv.Atoi(b)
					}
				}
				p.i += end
			}
			if lo < 0 {
				break
			}
			p.i++
			a = &rnode{kind: '*', subs: []*rnode{a}, min: lo, max: hi}
		}
		n.subs = append(n.subs, a)
	}
}

func (p *rparser) char() rune {
	r := p.s[p.i]
	p.i++
	if r != '\\' {
		return r
	}
	r = p.s[p.i]
	p.i++
	switch r {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	}
	return r
}

func (p *rparser) atom() (*rnode, error) {
	switch c := p.s[p.i]; {
	case c == '"':
		p.i++
		n := &rnode{kind: '"'}
		for p.s[p.i] != '"' {
			n.lit = append(n.lit, p.char())
		}
		p.i++
		return n, nil
	case c == '[':
		p.i++
		n := &rnode{kind: '['}
		if p.s[p.i] == '^' {
			n.negate = true
			p.i++
		}
		for p.s[p.i] != ']' {
			lo := p.char()
			hi := lo
			if p.s[p.i] == '-' && p.s[p.i+1] != ']' {
				p.i++
				hi = p.char()
			}
			n.ranges = append(n.ranges, [2]rune{lo, hi})
		}
		p.i++
		return n, nil
	case c == '.':
		p.i++
		return &rnode{kind: '.'}, nil
	case c == '(':
		p.i++
		n, err := p.alts()
		if err != nil {
			return nil, err
		}
		if !p.at(')') {
			return nil, fmt.Errorf("no ) at %d", p.i)
		}
		p.i++
		return n, nil
	case c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] == '-' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
			p.i++
		}
		return &rnode{kind: 'r', name: string(p.s[start:p.i])}, nil
	}
	return nil, fmt.Errorf("unexpected %q at %d", p.s[p.i], p.i)
}

// accepts reports whether the whole of text is in the language of root.
func (rc *recogniser) accepts(text string) bool {
	if !utf8.ValidString(text) {
		return false
	}
	rc.text = []rune(text)
	rc.memo = map[string][]int{}
	return slices.Contains(rc.ends(rc.rules["root"], 0), len(rc.text))
}

// ends returns, sorted, every position at which n can end when it begins
// at i.
func (rc *recogniser) ends(n *rnode, i int) []int {
	switch n.kind {
	case '"':
		if i+len(n.lit) <= len(rc.text) && slices.Equal(rc.text[i:i+len(n.lit)], n.lit) {
			return []int{i + len(n.lit)}
		}
		return nil
	case '[', '.':
		if i >= len(rc.text) {
			return nil
		}
		r := rc.text[i]
		in := n.kind == '.'
		for _, rg := range n.ranges {
			in = in || rg[0] <= r && r <= rg[1]
		}
		if in != n.negate {
			return []int{i + 1}
		}
		return nil
	case 'r':
		key := n.name + "@" + strconv.Itoa(i)
		if e, ok := rc.memo[key]; ok {
			return e
		}
		rc.memo[key] = nil // no left recursion in the test grammars
		e := rc.ends(rc.rules[n.name], i)
		rc.memo[key] = e
		return e
	case '|':
		var out []int
		for _, s := range n.subs {
			out = append(out, rc.ends(s, i)...)
		}
		slices.Sort(out)
		return slices.Compact(out)
	case ',':
		cur := []int{i}
		for _, s := range n.subs {
			var next []int
			for _, j := range cur {
				next = append(next, rc.ends(s, j)...)
			}
			slices.Sort(next)
			cur = slices.Compact(next)
		}
		return cur
	case '*':
		cur := []int{i}
		var out []int
		if n.min == 0 {
			out = append(out, i)
		}
		seen := map[int]bool{}
		for k := 1; n.max < 0 || k <= n.max; k++ {
			var next []int
			for _, j := range cur {
				next = append(next, rc.ends(n.subs[0], j)...)
			}
			slices.Sort(next)
			next = slices.Compact(next)
			if n.max < 0 && k > n.min {
				// Past the minimum only new positions matter.
				next = slices.DeleteFunc(next, func(j int) bool { return seen[j] })
			}
			if len(next) == 0 {
				break
			}
			for _, j := range next {
				seen[j] = true
			}
			if k >= n.min {
				out = append(out, next...)
			}
			cur = next
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	panic("unknown node")
}
