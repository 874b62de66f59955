//go:build amd64 && gc && !purego

// impl_amd64_test.go tests the amd64 path choice and MINIGPT_KERNELS' cap on it.

package kernels

import (
	"os"
	"testing"
)

// TestKernelLevelLimit checks MINIGPT_KERNELS: it caps the path, never
// raises it past what the CPU and OS support, and is ignored when unknown.
func TestKernelLevelLimit(t *testing.T) {
	best := levelGo
	if hasAVX2FMA {
		best = levelAVX2
	}
	if hasAVX512 {
		best = levelAVX512
	}
	for _, tc := range []struct {
		limit string
		want  int
	}{
		{"", best}, {"avx512", best}, {"bogus", best},
		{"avx2", min(best, levelAVX2)}, {"go", levelGo},
	} {
		if got := chooseLevel(tc.limit); got != tc.want {
			t.Errorf("MINIGPT_KERNELS=%q: level %d, want %d", tc.limit, got, tc.want)
		}
	}
	if hasAVX512 && !hasAVX2FMA {
		t.Error("AVX-512 detected without AVX2+FMA")
	}
}

// TestPathHonorsEnvironment checks that the path in use is the one
// MINIGPT_KERNELS chose at start-up (CI runs the package under each cap),
// which also catches a test that switched the path and did not restore it.
func TestPathHonorsEnvironment(t *testing.T) {
	if got, want := Path(), pathNames[chooseLevel(os.Getenv("MINIGPT_KERNELS"))]; got != want {
		t.Fatalf("MINIGPT_KERNELS=%q: path %q, want %q", os.Getenv("MINIGPT_KERNELS"), got, want)
	}
}
