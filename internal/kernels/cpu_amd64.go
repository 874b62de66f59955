//go:build amd64 && gc && !purego

// cpu_amd64.go owns the CPU feature detection (CPUID, XGETBV) that picks the kernel paths.

package kernels

// cpuid executes CPUID with EAX=leaf and ECX=subleaf.
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// xgetbv reads extended control register 0 (XCR0). Call it only when
// CPUID reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// hasAVX2FMA reports, once at start-up, whether the CPU has AVX2 and FMA
// and the OS saves the YMM registers: the requirements of the avx2 kernels.
// hasAVX512 reports whether it also has AVX-512 Foundation and the OS
// saves the opmask and ZMM registers: the requirements of the avx512
// kernels, which use AVX512F instructions only.
var hasAVX2FMA, hasAVX512 = detectCPU()

func detectCPU() (avx2fma, avx512 bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false, false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false, false
	}
	// XCR0 bit 1: SSE (XMM) state, bit 2: AVX (upper YMM) state; bits
	// 5-7: the opmask registers, the upper halves of ZMM0-15 and ZMM16-31.
	// A CPU may report AVX-512 while the OS does not save its state; then
	// using it would corrupt registers across context switches.
	xcr0, _ := xgetbv()
	if xcr0&6 != 6 {
		return false, false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const (
		avx2    = 1 << 5
		avx512f = 1 << 16
	)
	if ebx7&avx2 == 0 {
		return false, false
	}
	return true, ebx7&avx512f != 0 && xcr0&0xe0 == 0xe0
}
