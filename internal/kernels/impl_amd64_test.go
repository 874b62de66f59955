//go:build amd64 && gc && !purego

// impl_amd64_test.go tests MINIGPT_KERNELS' cap on the amd64 path choice.

package kernels

import "testing"

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
