// The cache: emptied past its budget, it gives the same answers; shared by
// goroutines, it gives each the answers it would give alone.

package grammar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func lantern() [][]byte {
	var out [][]byte
	for _, r := range " .abcdefghiklmnoprstuwy" {
		out = append(out, []byte(string(r)))
	}
	return out
}

// trace walks m from seed and records every mask and the text.
func trace(t *testing.T, m *Matcher, toks [][]byte, seed uint64, steps int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	mask := make([]bool, len(toks))
	var out []byte
	s := m.Start()
	for range steps {
		if err := m.Allowed(s, mask); err != nil {
			t.Fatal(err)
		}
		var ids []int
		for i, ok := range mask {
			if ok {
				ids = append(ids, i)
				out = append(out, byte(i))
			}
		}
		out = append(out, 0xFF, byte(m.Remaining(s)), boolByte(m.Complete(s)), boolByte(m.MustEnd(s)))
		if len(ids) == 0 {
			break
		}
		next, err := m.Advance(s, ids[r.IntN(len(ids))])
		if err != nil {
			t.Fatal(err)
		}
		s = next
	}
	return out
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

var flushCases = []struct {
	gbnf  bool
	src   string
	steps int
}{
	{false, `(a|b)*a(a|b){20}`, 300},
	{true, "root ::= \"a\" root \"a\" | \"b\" root \"b\" | \"a\" | \"b\" | \"\"", 200},
	{true, "root ::= expr\nexpr ::= term (\"p\" term)*\nterm ::= factor (\"m\" factor)*\nfactor ::= \"n\" | \"l\" expr \"r\"", 300},
}

func compileCase(t *testing.T, gbnf bool, src string) *Grammar {
	var g *Grammar
	var err error
	if gbnf {
		g, err = GBNF(src)
	} else {
		g, err = Regex(src)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFlush walks with a cache budget so small that it is emptied at
// almost every step, and with the full budget: every answer is the same.
func TestFlush(t *testing.T) {
	toks := lantern()
	for _, tc := range flushCases {
		g := compileCase(t, tc.gbnf, tc.src)
		big, err := g.Bind(toks)
		if err != nil {
			t.Fatal(err)
		}
		small, err := g.bindBudget(toks, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(20) {
			if a, b := trace(t, big, toks, seed, tc.steps), trace(t, small, toks, seed, tc.steps); !slices.Equal(a, b) {
				t.Fatalf("%s, seed %d: the flushed cache answers differently", tc.src, seed)
			}
		}
		if small.c.gen < 10 {
			t.Fatalf("%s: only %d flushes", tc.src, small.c.gen)
		}
	}
}

// TestConcurrent runs walks on goroutines sharing one matcher (with a
// small budget, so flushes happen while others walk) and compares each
// with the same walk alone.
func TestConcurrent(t *testing.T) {
	toks := lantern()
	for _, tc := range flushCases {
		g := compileCase(t, tc.gbnf, tc.src)
		alone, err := g.Bind(toks)
		if err != nil {
			t.Fatal(err)
		}
		shared, err := g.bindBudget(toks, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		got := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = trace(t, shared, toks, uint64(i), tc.steps)
			}()
		}
		wg.Wait()
		for i := range n {
			if want := trace(t, alone, toks, uint64(i), tc.steps); !slices.Equal(got[i], want) {
				t.Fatalf("%s: walk %d differs on the shared matcher", tc.src, i)
			}
		}
	}
}

// TestTooComplex lowers the item cap to see the error, which depends on
// the state alone.
func TestTooComplex(t *testing.T) {
	old := maxItems
	defer func() { maxItems = old }()
	maxItems = 40
	g, err := GBNF("root ::= \"a\" root \"a\" | \"b\" root \"b\" | \"a\" | \"b\" | \"\"")
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Bind(lantern())
	if err != nil {
		t.Fatal(err)
	}
	s := m.Start()
	a := slices.IndexFunc(lantern(), func(b []byte) bool { return b[0] == 'a' })
	var steps int
	for steps = 0; steps < 100; steps++ {
		if s, err = m.Advance(s, a); err != nil {
			break
		}
	}
	if !isTooComplex(err) {
		t.Fatalf("after %d a: %v, want ErrTooComplex", steps, err)
	}
}

func isTooComplex(err error) bool { return errors.Is(err, ErrTooComplex) }

// TestStateIsBounded walks far into texts whose states repeat: a regex,
// and right recursion, which a tail call keeps flat. The cache stops
// growing once every state has been met, so a step costs the same after
// 20,000 tokens as after 200.
func TestStateIsBounded(t *testing.T) {
	toks := lantern()
	for _, tc := range []struct {
		gbnf bool
		src  string
	}{
		{false, `((the|a) (lamp|boat|keeper) (walks|rings) )*`},
		{true, "root ::= \"a\" root | \"b\" root | \".\""},
		{true, "root ::= item (\" \" item)*\nitem ::= \"keep\" \"er\"? | \"lamp\""},
	} {
		g := compileCase(t, tc.gbnf, tc.src)
		m, err := g.Bind(toks)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		mask := make([]bool, len(toks))
		s := m.Start()
		var nodes []int
		for step := range 20000 {
			if err := m.Allowed(s, mask); err != nil {
				t.Fatal(err)
			}
			var ids []int
			for i, ok := range mask {
				// Never the closing dot, so the walk goes on.
				if ok && toks[i][0] != '.' {
					ids = append(ids, i)
				}
			}
			if s, err = m.Advance(s, ids[r.IntN(len(ids))]); err != nil {
				t.Fatal(err)
			}
			if step == 199 || step == 19999 {
				nodes = append(nodes, len(m.c.all))
			}
		}
		if nodes[0] != nodes[1] {
			t.Errorf("%s: %d states after 200 tokens, %d after 20,000", tc.src, nodes[0], nodes[1])
		}
	}
}
