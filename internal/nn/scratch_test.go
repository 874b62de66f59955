package nn

import (
	"sync"
	"testing"
)

// TestScratchPool: a buffer is the caller's alone until put back (two
// holders never share one, also when many goroutines take and return
// buffers at once), has the length asked for, and once the pool holds
// buffers large enough, taking and returning one allocates nothing.
func TestScratchPool(t *testing.T) {
	var p scratchPool
	a, b := p.get(10), p.get(20)
	if len(*a) != 10 || len(*b) != 20 || &(*a)[0] == &(*b)[0] {
		t.Fatalf("two holders: lengths %d and %d, shared %v", len(*a), len(*b), &(*a)[0] == &(*b)[0])
	}
	p.put(a)
	p.put(b)
	if c := p.get(15); len(*c) != 15 {
		t.Fatalf("length %d, want 15", len(*c))
	} else {
		p.put(c)
	}
	x, y := p.get(10), p.get(10)
	if &(*x)[0] == &(*y)[0] {
		t.Fatal("two holders of buffers taken from the pool share one")
	}
	p.put(x)
	p.put(y)
	if allocs := testing.AllocsPerRun(100, func() { p.put(p.get(8)) }); allocs != 0 {
		t.Errorf("get and put of a buffer the pool holds: %v allocations, want 0", allocs)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				buf := p.get(4 + (g+i)%30)
				for k := range *buf {
					(*buf)[k] = float64(g)
				}
				for k, v := range *buf {
					if v != float64(g) {
						t.Errorf("goroutine %d: element %d is %v: another holder wrote it", g, k, v)
						return
					}
				}
				p.put(buf)
			}
		}(g)
	}
	wg.Wait()
}
