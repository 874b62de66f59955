// impl.go owns the kernel paths' names, the path in use and the switch between them.

package kernels

import (
	"fmt"
	"slices"
)

// The kernel paths, in increasing order of what the CPU must support.
const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

// pathNames are the paths' names, indexed by level.
var pathNames = [...]string{"go", "avx2", "avx512"}

// Path names the kernel path in use: "go" (the Go twins), "avx2" or
// "avx512", for benchmarks and logs.
func Path() string { return pathNames[level] }

// SetPath switches every kernel to the named path, one of Impls, and
// returns a function that restores the previous one. It is for tests and
// benchmarks, which call it while no kernel runs; it panics on a name
// Impls does not list, a path this machine cannot run.
func SetPath(name string) (restore func()) {
	if !slices.Contains(Impls(), name) {
		panic(fmt.Sprintf("kernels: SetPath(%q): this machine runs %v", name, Impls()))
	}
	saved := level
	level = slices.Index(pathNames[:], name)
	return func() { level = saved }
}

// Peak is a loop of independent fused multiply-adds that measures the
// machine's floating-point peak on one core: Run(n) performs n rounds of
// Flops floating-point operations each.
type Peak struct {
	Name  string
	Flops int
	Run   func(rounds int)
}
