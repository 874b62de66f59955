// impl_test.go tests the path list and switch.

package kernels

import (
	"slices"
	"strings"
	"testing"
)

// TestImpls checks the path list and switch: the Go twins come first (the
// reference every other path is compared with), the path in use is one
// of the list, SetPath switches to each and its restore switches back,
// and a path the list does not name is refused.
func TestImpls(t *testing.T) {
	impls := Impls()
	if len(impls) == 0 || impls[0] != "go" {
		t.Fatalf("Impls() = %v: the Go twins must come first", impls)
	}
	start := Path()
	t.Cleanup(SetPath(start))
	if !slices.Contains(impls, start) {
		t.Fatalf("Path() = %q, not among %v", start, impls)
	}
	for _, p := range impls {
		restore := SetPath(p)
		if Path() != p {
			t.Errorf("after SetPath(%q), Path() = %q", p, Path())
		}
		restore()
		if Path() != start {
			t.Errorf("after restoring from %q, Path() = %q, want %q", p, Path(), start)
		}
	}
	for _, bad := range []string{"", "sse", "avx512 "} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetPath(%q): no panic", bad)
				}
			}()
			SetPath(bad)
		}()
	}
	if Path() != start {
		t.Errorf("a refused SetPath changed the path to %q", Path())
	}
}

// TestReportKernelDispatch logs the path in use and the paths every
// kernel test here runs on: .ci/run prints the line, so that a green run
// on a CPU without the assembly's features (where only the Go twins run)
// is not mistaken for a check of the assembly.
func TestReportKernelDispatch(t *testing.T) {
	t.Logf("kernel dispatch: in use %s; kernel tests run on: %s", Path(), strings.Join(Impls(), " "))
}
