//go:build amd64 && gc && !purego

// impl_amd64.go owns the choice of the amd64 kernel path (CPU features capped by MINIGPT_KERNELS) and the peak loops.

package kernels

import "os"

// level is the kernel path in use: the best one this CPU and OS support,
// capped by the environment variable MINIGPT_KERNELS (go, avx2 or avx512;
// anything else is ignored), read once at start-up, so that CI can run
// the slower paths on a fast machine. SetPath switches it in tests.
var level = chooseLevel(os.Getenv("MINIGPT_KERNELS"))

// chooseLevel is the best level of this CPU, capped by limit.
func chooseLevel(limit string) int {
	level := levelGo
	if hasAVX2FMA {
		level = levelAVX2
	}
	if hasAVX512 {
		level = levelAVX512
	}
	switch limit {
	case "go":
		level = levelGo
	case "avx2":
		level = min(level, levelAVX2)
	}
	return level
}

// Impls lists every kernel path this machine can run, "go" (the Go
// twins, the reference) first; tests and benchmarks compare them.
func Impls() []string {
	impls := []string{"go"}
	if hasAVX2FMA {
		impls = append(impls, "avx2")
	}
	if hasAVX512 {
		impls = append(impls, "avx512")
	}
	return impls
}

// Peaks lists the peak loops this machine can run (peak_amd64.s).
func Peaks() []Peak {
	var peaks []Peak
	if hasAVX2FMA {
		peaks = append(peaks, Peak{"avx2", 12 * 4 * 2, peakFMAAVX2})
	}
	if hasAVX512 {
		peaks = append(peaks, Peak{"avx512", 24 * 8 * 2, peakFMAAVX512})
	}
	return peaks
}

// peakFMAAVX2 runs n rounds of 12 independent four-lane FMAs (96 flops):
//
//	for r := 0; r < n; r++ {
//		for i := 0; i < 12; i++ {
//			for l := 0; l < 4; l++ {
//				acc[i][l] = math.FMA(x[l], y[l], acc[i][l])
//			}
//		}
//	}
//
//go:noescape
func peakFMAAVX2(n int)

// peakFMAAVX512 runs n rounds of 24 independent eight-lane FMAs (384
// flops):
//
//	for r := 0; r < n; r++ {
//		for i := 0; i < 24; i++ {
//			for l := 0; l < 8; l++ {
//				acc[i][l] = math.FMA(x[l], y[l], acc[i][l])
//			}
//		}
//	}
//
//go:noescape
func peakFMAAVX512(n int)
