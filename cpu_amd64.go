//go:build amd64 && gc && !purego

package minigpt

// cpuid executes CPUID with EAX=leaf and ECX=subleaf.
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// xgetbv reads extended control register 0 (XCR0). Call it only when
// CPUID reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// hasAVX2FMA reports, once at start-up, whether the CPU has AVX2 and FMA
// and the OS saves the YMM registers: the requirements of the avx2 kernels.
var hasAVX2FMA = detectAVX2FMA()

func detectAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	// XCR0 bit 1: SSE (XMM) state, bit 2: AVX (upper YMM) state.
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return ebx7&avx2 != 0
}
