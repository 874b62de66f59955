// Static analyses of a Grammar: what it takes to finish each rule from
// each state (nesting, characters, missing characters), computed once.

package grammar

import (
	"container/heap"
	"math"
)

const inf = math.MaxInt64

// costs defines one analysis. The value of a state is the least, over the
// ways to finish its rule from there, of a cost built up from its edges:
// 0 at a final state, v(t) along an eps edge to t, rune(set, v(t)) along a
// character edge (unusable when it returns inf) and call(v(callee's
// start), v(t), tail) along a call. Both functions must be non-decreasing
// and never below their inputs, so Knuth's generalization of Dijkstra's
// algorithm finds the least values in one pass.
type costs struct {
	rune func(set int32, rest int64) int64
	call func(callee, rest int64, tail bool) int64
}

// how records the edge that gave a state its value, for witnesses.
const (
	howFinal = iota
	howEps
	howRune
	howRef
)

type how struct {
	kind uint8
	idx  int32 // index of the edge in the state's list of its kind
}

// solve computes the value of every state under c, and how each got it.
func (g *Grammar) solve(c costs) ([]int64, []how) {
	n := len(g.states)
	val := make([]int64, n)
	ways := make([]how, n)
	for i := range val {
		val[i] = inf
	}
	done := make([]bool, n)
	// in[t]: the edges (state, kind, index) that have t as an input.
	type use struct {
		s    int32
		kind uint8
		idx  int32
	}
	in := make([][]use, n)
	callers := make([][]use, len(g.rules))
	for s := range g.states {
		st := &g.states[s]
		for i, t := range st.eps {
			in[t] = append(in[t], use{int32(s), howEps, int32(i)})
		}
		for i, e := range st.runes {
			in[e.to] = append(in[e.to], use{int32(s), howRune, int32(i)})
		}
		for i, e := range st.refs {
			in[e.to] = append(in[e.to], use{int32(s), howRef, int32(i)})
			callers[e.rule] = append(callers[e.rule], use{int32(s), howRef, int32(i)})
		}
	}
	var q valueHeap
	offer := func(s int32, v int64, w how) {
		if v < val[s] && !done[s] {
			val[s], ways[s] = v, w
			heap.Push(&q, valued{v, s})
		}
	}
	for s := range g.states {
		if g.states[s].final {
			offer(int32(s), 0, how{howFinal, 0})
		}
	}
	relax := func(u use) {
		st := &g.states[u.s]
		switch u.kind {
		case howEps:
			if t := st.eps[u.idx]; done[t] {
				offer(u.s, val[t], how{howEps, u.idx})
			}
		case howRune:
			e := st.runes[u.idx]
			if done[e.to] {
				if v := c.rune(e.set, val[e.to]); v != inf {
					offer(u.s, v, how{howRune, u.idx})
				}
			}
		case howRef:
			e := st.refs[u.idx]
			start := g.rules[e.rule].start
			if done[e.to] && done[start] && val[e.to] != inf && val[start] != inf {
				offer(u.s, c.call(val[start], val[e.to], g.states[e.to].tail), how{howRef, u.idx})
			}
		}
	}
	for q.Len() > 0 {
		top := heap.Pop(&q).(valued)
		if done[top.s] || top.v != val[top.s] {
			continue
		}
		done[top.s] = true
		for _, u := range in[top.s] {
			relax(u)
		}
		for _, r := range g.rulesStartingAt(top.s) {
			for _, u := range callers[r] {
				relax(u)
			}
		}
	}
	return val, ways
}

// rulesStartingAt lists the rules whose start is s (at most one, as each
// rule has its own start state).
func (g *Grammar) rulesStartingAt(s int32) []int32 {
	// Rules are laid out in order, each starting at its first state, so a
	// binary search finds the candidate.
	lo, hi := 0, len(g.rules)
	for lo < hi {
		m := (lo + hi) / 2
		if g.rules[m].start < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(g.rules) && g.rules[lo].start == s {
		return []int32{int32(lo)}
	}
	return nil
}

type valued struct {
	v int64
	s int32
}

type valueHeap []valued

func (h valueHeap) Len() int { return len(h) }
func (h valueHeap) Less(i, j int) bool {
	return h[i].v < h[j].v || h[i].v == h[j].v && h[i].s < h[j].s
}
func (h valueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *valueHeap) Push(x any)   { *h = append(*h, x.(valued)) }
func (h *valueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// need returns, for every state, the fewest stack frames that finishing
// its rule from there must open on top of the current ones, reading only
// characters of p: 0 with no call on the way, 1 + the callee's need for a
// call that leaves a frame, the callee's need for a tail call. A state at
// depth d (d frames below it) can finish within the cap if need <=
// MaxStackDepth - d. Values above MaxStackDepth are clipped to
// MaxStackDepth+1 (never possible).
func (g *Grammar) need(p runeSet) []int32 {
	usable := g.usableSets(p)
	val, _ := g.solve(costs{
		rune: func(set int32, rest int64) int64 {
			if !usable[set] {
				return inf
			}
			return rest
		},
		call: func(callee, rest int64, tail bool) int64 {
			if !tail {
				callee++
			}
			return max(callee, rest)
		},
	})
	out := make([]int32, len(val))
	for i, v := range val {
		out[i] = int32(min(v, MaxStackDepth+1))
	}
	return out
}

// depthFree reports, for every state, whether its rule can be finished
// from there reading only characters of p, at any depth.
func (g *Grammar) depthFree(p runeSet) []bool {
	usable := g.usableSets(p)
	val, _ := g.solve(costs{
		rune: func(set int32, rest int64) int64 {
			if !usable[set] {
				return inf
			}
			return rest
		},
		call: func(callee, rest int64, _ bool) int64 { return max(callee, rest) },
	})
	out := make([]bool, len(val))
	for i, v := range val {
		out[i] = v != inf
	}
	return out
}

// nullable reports, for every rule, whether it can end without reading.
func (g *Grammar) nullable() []bool {
	val, _ := g.solve(costs{
		rune: func(int32, int64) int64 { return inf },
		call: func(callee, rest int64, _ bool) int64 { return max(callee, rest) },
	})
	out := make([]bool, len(g.rules))
	for r, rule := range g.rules {
		out[r] = val[rule.start] != inf
	}
	return out
}

// distance returns, for every state, the fewest units (tokens of the
// vocabulary's base units) that finish its rule from there, unitCost[set]
// being the fewest units that write one character of the set (inf: none).
func (g *Grammar) distance(unitCost []int64) []int64 {
	val, _ := g.solve(costs{
		rune: func(set int32, rest int64) int64 {
			if unitCost[set] == inf {
				return inf
			}
			return satAdd(unitCost[set], rest)
		},
		call: func(callee, rest int64, _ bool) int64 { return satAdd(callee, rest) },
	})
	return val
}

func satAdd(a, b int64) int64 {
	if a == inf || b == inf || a > inf-b {
		return inf
	}
	return a + b
}

func (g *Grammar) usableSets(p runeSet) []bool {
	u := make([]bool, len(g.sets))
	for i, s := range g.sets {
		u[i] = s.intersects(p)
	}
	return u
}

// missing finds a way through g from the root that needs as few
// characters outside p as can be, and returns the sets of the edges on it
// that p cannot write (in order, each once, at most limit of them), more
// when it has other such sets beyond those, and how many edges of it p
// cannot write in all (0: the way needs none, so only the depth cap stands
// in the way).
func (g *Grammar) missing(p runeSet, limit int) (sets []runeSet, more bool, edges int) {
	usable := g.usableSets(p)
	const unit = 1 << 32 // cost = missing edges * unit + characters
	val, ways := g.solve(costs{
		rune: func(set int32, rest int64) int64 {
			c := int64(1)
			if !usable[set] {
				c += unit
			}
			return satAdd(c, rest)
		},
		call: func(callee, rest int64, _ bool) int64 { return satAdd(callee, rest) },
	})
	start := g.rules[g.root].start
	if val[start] == inf {
		return nil, false, 0
	}
	edges = int(val[start] / unit)
	var conts []int32 // states to continue at when the current rule ends
	s := start
	for steps := 0; steps < 1<<22; steps++ {
		w := ways[s]
		st := &g.states[s]
		switch w.kind {
		case howFinal:
			if len(conts) == 0 {
				return sets, more, edges
			}
			s, conts = conts[len(conts)-1], conts[:len(conts)-1]
			continue
		case howEps:
			s = st.eps[w.idx]
		case howRune:
			e := st.runes[w.idx]
			if !usable[e.set] && !containsSet(sets, g.sets[e.set]) {
				if len(sets) < limit {
					sets = append(sets, g.sets[e.set])
				} else {
					more = true
				}
			}
			s = e.to
		case howRef:
			e := st.refs[w.idx]
			conts = append(conts, e.to)
			s = g.rules[e.rule].start
		}
	}
	return sets, more, edges
}

func containsSet(list []runeSet, s runeSet) bool {
	for _, t := range list {
		if t.equal(s) {
			return true
		}
	}
	return false
}
