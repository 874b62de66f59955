// Package testutil holds the checks the packages' tests share: bit
// equality of float64 slices, guard zones around a kernel's output, a
// directory's listing, the files that are not regular files for the
// file-safety tests, and the process's CPU time for benchmarks. Only
// tests import it.
package testutil

import (
	"math"
	"os"
	"testing"
)

// SameBits returns the first index where x and y differ in their bits
// (NaNs of any payload count as equal: payloads are not part of the
// contract), and whether they are the same, lengths included.
func SameBits(x, y []float64) (int, bool) {
	for i := range x {
		if i >= len(y) || math.Float64bits(x[i]) != math.Float64bits(y[i]) && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
			return i, false
		}
	}
	return -1, len(x) == len(y)
}

// BitsEqual is SameBits as a condition.
func BitsEqual(x, y []float64) bool {
	_, ok := SameBits(x, y)
	return ok
}

// GuardLen is the number of guard elements Guarded places before and
// after a buffer; GuardBits is their value, a NaN no kernel computes.
const (
	GuardLen  = 16
	GuardBits = 0x7ff8dead0000beef
)

// Guarded returns a copy of x inside guard zones: x's part is
// g[GuardLen:GuardLen+len(x)]. A slice of it handed to a kernel keeps
// the trailing zone within its capacity, so that a store past the
// logical end lands in the zone instead of in unrelated memory.
func Guarded(x []float64) []float64 {
	g := make([]float64, len(x)+2*GuardLen)
	for i := range g {
		g[i] = math.Float64frombits(GuardBits)
	}
	copy(g[GuardLen:], x)
	return g
}

// CheckGuards reports the first guard element of g (around n values)
// that is not intact, as an index relative to the values.
func CheckGuards(g []float64, n int) (int, bool) {
	for i, v := range g {
		if (i < GuardLen || i >= GuardLen+n) && math.Float64bits(v) != GuardBits {
			return i - GuardLen, false
		}
	}
	return 0, true
}

// DirNames lists a directory's entries, hidden files included, sorted:
// what a refused or failed write must leave as it found it.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
