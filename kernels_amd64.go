//go:build amd64 && gc && !purego

package minigpt

import "os"

// The amd64 kernels: AVX-512 and AVX2+FMA assembly (kernels_avx512_amd64.s,
// kernels_amd64.s) for the hot loops, this file for the blocking and the
// bounds checks, and the portable Go kernels when the CPU has neither.
// All three compute the same bits, so the choice is only about speed.

// Kernel levels, in increasing order of what the CPU must support.
const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

// kernelLevel is the kernel path in use: the best one this CPU and OS
// support, capped by the environment variable MINIGPT_KERNELS (go, avx2
// or avx512) so that CI can run the slower paths on a fast machine.
// Tests switch it with setKernelPath; nothing else writes it.
var kernelLevel = chooseKernelLevel(os.Getenv("MINIGPT_KERNELS"))

func chooseKernelLevel(limit string) int {
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

func gemmNNImpl(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	switch kernelLevel {
	case levelAVX512:
		gemmNNAVX512(c, ldc, a, ai, ak, b, ldb, M, N, K)
	case levelAVX2:
		gemmNNAVX2(c, ldc, a, ai, ak, b, ldb, M, N, K)
	default:
		gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
	}
}

func gemmNTImpl(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	switch kernelLevel {
	case levelAVX512:
		gemmNTAVX512(c, ldc, a, lda, b, ldb, M, N, K)
	case levelAVX2:
		gemmNTAVX2(c, ldc, a, lda, b, ldb, M, N, K)
	default:
		gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
	}
}

// kernelPath names the kernel implementation in use, for benchmarks and logs.
func kernelPath() string {
	return [...]string{"go", "avx2", "avx512"}[kernelLevel]
}

// setKernelPath switches to the named kernel path (one of kernelImpls)
// and returns a function that restores the previous one. Only tests call
// it, while no kernel runs.
func setKernelPath(name string) (restore func()) {
	saved := kernelLevel
	for level, n := range [...]string{"go", "avx2", "avx512"} {
		if n == name {
			kernelLevel = level
		}
	}
	return func() { kernelLevel = saved }
}

// kernelImpls lists every kernel implementation this machine can run, the
// portable one first; tests and benchmarks compare them.
func kernelImpls() []kernelImpl {
	impls := []kernelImpl{{"go", gemmNNGo, gemmNTGo}}
	if hasAVX2FMA {
		impls = append(impls, kernelImpl{"avx2", gemmNNAVX2, gemmNTAVX2})
	}
	if hasAVX512 {
		impls = append(impls, kernelImpl{"avx512", gemmNNAVX512, gemmNTAVX512})
	}
	return impls
}

// peakImpls lists the peak loops this machine can run with the flops one
// round of each performs (BenchmarkPeakFMA).
func peakImpls() []peakImpl {
	var impls []peakImpl
	if hasAVX2FMA {
		impls = append(impls, peakImpl{"avx2", peakFMAAVX2, 12 * 4 * 2})
	}
	if hasAVX512 {
		impls = append(impls, peakImpl{"avx512", peakFMAAVX512, 24 * 8 * 2})
	}
	return impls
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

// nnKBlock is the depth of one pass of gemmNNAVX2 over C: a block of B
// (nnKBlock × N) then stays in L2 while every row block of A sweeps it.
// Splitting the k loop is exact: the chain continues from the stored c.
const nnKBlock = 128

// gemmNNAVX2 is gemmNN (M, N >= 1) in blocks of four rows of C.
func gemmNNAVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	if ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
		return
	}
	gemmNNAVX2Init(c, ldc, nil, 0, a, ai, ak, b, ldb, M, N, K)
}

// gemmNNAVX2Init is gemmNNAVX2 with the initial values of C taken from C
// itself (mode 0), from the row bias for every row (mode 1), or +0
// (mode 2) for the first block of k, as gemmNNAVX512Init.
func gemmNNAVX2Init(c []float64, ldc int, bias []float64, mode int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	if K <= 0 {
		return
	}
	// The assembly trusts its arguments (strides >= 0, checked by the
	// callers): check the last element each operand is read or written
	// at, as the Go kernel's indexing would.
	boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	if mode == 1 {
		bias = bias[:N]
	}
	for k0 := 0; k0 < K; k0 += nnKBlock {
		kn := min(nnKBlock, K-k0)
		ak0, bk0 := a[k0*ak:], b[k0*ldb:]
		i := 0
		for ; i+4 <= M; i += 4 {
			gemmNN4AVX2(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, mode)
		}
		for ; i < M; i++ {
			gemmNN1AVX2(c[i*ldc:], ak0[i*ai:], ak, bk0, ldb, N, kn, bias, mode)
		}
		mode = 0 // later blocks of k continue the chains stored in C
	}
}

// gemmNNAVX512 is gemmNN (M, N >= 1) in blocks of six and four rows of
// C, with the same k blocking as gemmNNAVX2.
func gemmNNAVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	if ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
		return
	}
	gemmNNAVX512Init(c, ldc, nil, 0, a, ai, ak, b, ldb, M, N, K, 0, nil)
}

// gemmNNAVX512Init is gemmNNAVX512 with the initial values of C taken
// from C itself (mode 0), from the row bias for every row (mode 1), or
// +0 (mode 2) for the first block of k: C = bias + A·B (or A·B) without
// a pass over C to set it first. K must be >= 1 for modes 1 and 2. On
// the last block of k the kernels apply epi (epiRelu, epiResidual with
// res laid out as C, epiMask with the mask in res, or 0) as they store.
// epiMask goes alone: the kernels read one operand, res, for both it and
// the residual, and no layer needs the mask after a ReLU.
func gemmNNAVX512Init(c []float64, ldc int, bias []float64, mode int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi int, res []float64) {
	if K <= 0 {
		return
	}
	if epi&epiMask != 0 && epi != epiMask {
		panic("minigpt: gemmNN's mask epilogue combined with another layer")
	}
	// The assembly trusts its arguments (strides >= 0, checked by the
	// callers): check the last element each operand is read or written at.
	boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	if mode == 1 {
		bias = bias[:N]
	}
	if epi&(epiResidual|epiMask) != 0 {
		_ = res[(M-1)*ldc+N-1]
	} else {
		res = nil
	}
	// Rows go six at a time (gemmNN6AVX512), then four, then one; 8 or
	// 9 rows left over go as two blocks of four (and one) rather than
	// six and two or three single rows, whose kernel is the slowest.
	n6 := M / 6
	if r := M % 6; (r == 2 || r == 3) && n6 > 0 {
		n6--
	}
	for k0 := 0; k0 < K; k0 += nnKBlock {
		kn := min(nnKBlock, K-k0)
		ak0, bk0 := a[k0*ak:], b[k0*ldb:]
		m := mode
		if k0+kn == K {
			m |= epi
		}
		var ri []float64
		i := 0
		for ; i < 6*n6; i += 6 {
			if res != nil {
				ri = res[i*ldc:]
			}
			gemmNN6AVX512(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, m, ri)
		}
		for ; i+4 <= M; i += 4 {
			if res != nil {
				ri = res[i*ldc:]
			}
			gemmNN4AVX512(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, m, ri)
		}
		for ; i < M; i++ {
			if res != nil {
				ri = res[i*ldc:]
			}
			gemmNN1AVX512(c[i*ldc:], ak0[i*ai:], ak, bk0, ldb, N, kn, bias, m, ri)
		}
		mode = 0 // later blocks of k continue the chains stored in C
	}
}

// gemmNNInitBlocks computes, for the first M rows of c (ldc = N), the
// chains of gemmNN started from bias (every row; +0 when bias is nil)
// instead of from C, and reports whether it did: the AVX-512 and AVX2
// kernels can (on the Go path gemmNNJob sets C first, the same bits).
// fused reports whether the kernels also applied epi (AVX-512 only);
// otherwise the caller runs those layers itself.
func gemmNNInitBlocks(c []float64, ldc int, bias []float64, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi int, res []float64) (ok, fused bool) {
	if kernelLevel < levelAVX2 || K <= 0 || M <= 0 || N <= 0 || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		return false, false
	}
	mode := 2
	if bias != nil {
		mode = 1
	}
	if kernelLevel == levelAVX512 {
		gemmNNAVX512Init(c, ldc, bias, mode, a, ai, ak, b, ldb, M, N, K, epi, res)
		return true, epi != 0
	}
	gemmNNAVX2Init(c, ldc, bias, mode, a, ai, ak, b, ldb, M, N, K)
	return true, false
}

// gemmNTAVX512 is gemmNT (M, N >= 1) in blocks of four rows of C.
func gemmNTAVX512(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	gemmNTAVX512From(c, ldc, a, lda, b, ldb, M, N, K, 0)
}

// gemmNTAVX512From is gemmNTAVX512 with the dot products added to C's
// old values (zero = 0) or to +0 (zero = 1: gemmNTSet).
func gemmNTAVX512From(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K, zero int) {
	if ldc < 0 || lda < 0 || ldb < 0 || K < 0 {
		if zero != 0 {
			clearRows(c, ldc, M, N)
		}
		gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
		return
	}
	boundsNT(c, ldc, a, lda, b, ldb, M, N, K)
	i := 0
	for ; i+4 <= M; i += 4 {
		gemmNT4AVX512(c[i*ldc:], ldc, a[i*lda:], lda, b, ldb, N, K, zero)
	}
	for ; i < M; i++ {
		gemmNT1AVX512(c[i*ldc:], a[i*lda:], b, ldb, N, K, zero)
	}
}

// gemmNTSetBlocks is gemmNTSet on AVX-512 and AVX2, where the kernels
// start the outputs from +0 without reading C; on the Go path it returns
// false and gemmNTSet clears C first.
func gemmNTSetBlocks(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) bool {
	switch kernelLevel {
	case levelAVX512:
		gemmNTAVX512From(c, ldc, a, lda, b, ldb, M, N, K, 1)
	case levelAVX2:
		gemmNTAVX2From(c, ldc, a, lda, b, ldb, M, N, K, 1)
	default:
		return false
	}
	return true
}

// gemmNTAVX2 is gemmNT (M, N >= 1) in blocks of two rows of C.
func gemmNTAVX2(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	gemmNTAVX2From(c, ldc, a, lda, b, ldb, M, N, K, 0)
}

// gemmNTAVX2From is gemmNTAVX2 with the dot products added to C's old
// values (zero = 0) or to +0 (zero = 1: gemmNTSet).
func gemmNTAVX2From(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K, zero int) {
	if ldc < 0 || lda < 0 || ldb < 0 || K < 0 {
		if zero != 0 {
			clearRows(c, ldc, M, N)
		}
		gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
		return
	}
	boundsNT(c, ldc, a, lda, b, ldb, M, N, K)
	i := 0
	for ; i+2 <= M; i += 2 {
		gemmNT2AVX2(c[i*ldc:], ldc, a[i*lda:], lda, b, ldb, N, K, zero)
	}
	if i < M {
		gemmNT1AVX2(c[i*ldc:], a[i*lda:], b, ldb, N, K, zero)
	}
}

// The assembly kernels, each documented by the Go loop it computes; the
// .s files say how.

// gemmNN4AVX2 is four rows of gemmNN (N, K >= 1), the chains started
// from x0 = c[i*ldc+j] (mode 0), bias[j] (mode 1) or 0 (mode 2):
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			x := x0(i, j)
//			for k := 0; k < K; k++ {
//				x = math.FMA(a[i*ai+k*ak], b[k*ldb+j], x)
//			}
//			c[i*ldc+j] = x
//		}
//	}
//
//go:noescape
func gemmNN4AVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int)

// gemmNN1AVX2 is one row of gemmNN (N, K >= 1), the chains started from
// x0 = c[j] (mode 0), bias[j] (mode 1) or 0 (mode 2):
//
//	for j := 0; j < N; j++ {
//		x := x0(j)
//		for k := 0; k < K; k++ {
//			x = math.FMA(a[k*ak], b[k*ldb+j], x)
//		}
//		c[j] = x
//	}
//
//go:noescape
func gemmNN1AVX2(c []float64, a []float64, ak int, b []float64, ldb int, N, K int, bias []float64, mode int)

// gemmNT2AVX2 is two rows of gemmNT (N >= 1, K >= 0), from C's old
// values (zero = 0) or from +0, without reading C (zero = 1):
//
//	for i := 0; i < 2; i++ {
//		for j := 0; j < N; j++ {
//			if zero != 0 {
//				c[i*ldc+j] = 0
//			}
//			c[i*ldc+j] += dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//		}
//	}
//
//go:noescape
func gemmNT2AVX2(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, N, K, zero int)

// gemmNT1AVX2 is one row of gemmNT (N >= 1, K >= 0), from C's old values
// or from +0 as gemmNT2AVX2:
//
//	for j := 0; j < N; j++ {
//		if zero != 0 {
//			c[j] = 0
//		}
//		c[j] += dot8(a[:K], b[j*ldb:j*ldb+K])
//	}
//
//go:noescape
func gemmNT1AVX2(c []float64, a []float64, b []float64, ldb int, N, K, zero int)

// gemmNN4AVX512 is four rows of gemmNN (N, K >= 1), the chains started
// from x0 = c[i*ldc+j] (mode&3 = 0), bias[j] (1) or 0 (2), and the
// layers of epi (mode&epiRelu, mode&epiMask, mode&epiResidual; never
// the last two together) applied as C is stored:
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			x := x0(i, j)
//			for k := 0; k < K; k++ {
//				x = math.FMA(a[i*ai+k*ak], b[k*ldb+j], x)
//			}
//			if mode&epiRelu != 0 {
//				x = max(x, 0)
//			}
//			if mode&epiMask != 0 && !(res[i*ldc+j] > 0) {
//				x = 0
//			}
//			if mode&epiResidual != 0 {
//				x = res[i*ldc+j] + x
//			}
//			c[i*ldc+j] = x
//		}
//	}
//
//go:noescape
func gemmNN4AVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64)

// gemmNN6AVX512 is gemmNN4AVX512's Go loop above with i < 6 (the same
// modes and epilogues): six rows of C, so that each vector of B loaded
// feeds six multiply-adds instead of four.
//
//go:noescape
func gemmNN6AVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64)

// gemmNN1AVX512 is one row of gemmNN (N, K >= 1), the chains started
// from x0 = c[j] (mode&3 = 0), bias[j] (1) or 0 (2), then epi's layers
// as gemmNN4AVX512:
//
//	for j := 0; j < N; j++ {
//		x := x0(j)
//		for k := 0; k < K; k++ {
//			x = math.FMA(a[k*ak], b[k*ldb+j], x)
//		}
//		if mode&epiRelu != 0 {
//			x = max(x, 0)
//		}
//		if mode&epiMask != 0 && !(res[j] > 0) {
//			x = 0
//		}
//		if mode&epiResidual != 0 {
//			x = res[j] + x
//		}
//		c[j] = x
//	}
//
//go:noescape
func gemmNN1AVX512(c []float64, a []float64, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64)

// gemmNT4AVX512 is four rows of gemmNT (N >= 1, K >= 0), from C's old
// values (zero = 0) or from +0, without reading C (zero = 1):
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			if zero != 0 {
//				c[i*ldc+j] = 0
//			}
//			c[i*ldc+j] += dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//		}
//	}
//
//go:noescape
func gemmNT4AVX512(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, N, K, zero int)

// gemmNT1AVX512 is one row of gemmNT (N >= 1, K >= 0), from C's old
// values or from +0 as gemmNT4AVX512:
//
//	for j := 0; j < N; j++ {
//		if zero != 0 {
//			c[j] = 0
//		}
//		c[j] += dot8(a[:K], b[j*ldb:j*ldb+K])
//	}
//
//go:noescape
func gemmNT1AVX512(c []float64, a []float64, b []float64, ldb int, N, K, zero int)

// expShiftedBlocks sets dst[i] = expDet(src[i]-shift) for i < n, for the
// largest n (a multiple of the block, 8 on AVX-512 and 4 on AVX2, or
// len(src)) such that no element before n needs expDet's special cases,
// and returns n; expShifted does the rest. It computes nothing (n = 0)
// on the Go path.
func expShiftedBlocks(dst, src []float64, shift float64) int {
	switch kernelLevel {
	case levelAVX512:
		return expShiftedAVX512(dst[:len(src)], src, shift)
	case levelAVX2:
		return expShiftedAVX2(dst[:len(src)], src, shift)
	}
	return 0
}

// expShiftedAVX512 returns n as expShiftedBlocks does, having computed
//
//	for i := range src[:n] {
//		dst[i] = expDet(src[i] - shift)
//	}
//
//go:noescape
func expShiftedAVX512(dst, src []float64, shift float64) int

// softmaxScaledBlocks runs softmaxScaled's kernel on AVX-512 and
// returns its answer: the maximum m of the scaled row and done, the
// number of exponentials it wrote (len(row) when it also summed and
// divided), or maxDeclined; elsewhere it does nothing (scaleNotDone).
func softmaxScaledBlocks(row []float64, scale float64) (m float64, done int) {
	if kernelLevel != levelAVX512 {
		return 0, scaleNotDone
	}
	return softmaxScaledAVX512(row, scale)
}

// softmaxScaledAVX512 is softmaxScaledBlocks's kernel (mathdet_amd64.s).
//
//go:noescape
func softmaxScaledAVX512(row []float64, scale float64) (m float64, done int)

// softmaxScaled4Blocks runs softmaxScaled on the four rows
// rows[r*ld : r*ld+n0+r] (r = 0..3, n0+3 <= 32) together on AVX-512 and
// returns the rows it finished (bit r); the others are untouched, and
// elsewhere it finishes none.
func softmaxScaled4Blocks(rows []float64, ld, n0 int, scale float64, scratch *[128]float64) (done int) {
	if kernelLevel != levelAVX512 || n0 < 1 || n0+3 > 32 || ld < n0+3 {
		return 0
	}
	_ = rows[3*ld+n0+2]
	return softmaxScaled4AVX512(rows, ld, n0, scale, scratch)
}

// softmaxScaled4AVX512 is softmaxScaled4Blocks's kernel (mathdet_amd64.s).
//
//go:noescape
func softmaxScaled4AVX512(rows []float64, ld, n0 int, scale float64, scratch *[128]float64) (done int)

// maxBlocks returns the largest element of src and true when the vector
// kernel found it with no NaN in src and a non-zero result, the cases
// where its answer is Go's max; otherwise expShifted runs its Go loop.
func maxBlocks(src []float64) (float64, bool) {
	var m float64
	var nan bool
	switch kernelLevel {
	case levelAVX512:
		m, nan = maxAVX512(src)
	case levelAVX2:
		m, nan = maxAVX2(src)
	default:
		return 0, false
	}
	return m, !nan && m != 0
}

// maxAVX512 computes what maxBlocks returns (see mathdet_amd64.s).
//
//go:noescape
func maxAVX512(src []float64) (m float64, nan bool)

// divBlocks sets x[i] /= d for every i and returns true on the vector
// paths; on the Go path it returns false and softmax runs its Go loop.
func divBlocks(x []float64, d float64) bool {
	switch kernelLevel {
	case levelAVX512:
		divAVX512(x, d)
	case levelAVX2:
		divAVX2(x, d)
	default:
		return false
	}
	return true
}

// divAVX512 computes
//
//	for i := range x {
//		x[i] /= d
//	}
//
//go:noescape
func divAVX512(x []float64, d float64)

// The LayerNorm loops on AVX-512 (kernels_layernorm_amd64.s) and AVX2
// (kernels_vec_avx2_amd64.s). Each returns false on the Go path, and the
// caller runs its Go loop, which computes the same bits.

func lnNormalizeBlocks(o, x, w, b []float64, mu, r float64) bool {
	n := len(x)
	switch kernelLevel {
	case levelAVX512:
		lnNormalizeAVX512(o[:n], x, w[:n], b[:n], mu, r)
	case levelAVX2:
		lnNormalizeAVX2(o[:n], x, w[:n], b[:n], mu, r)
	default:
		return false
	}
	return true
}

func lnBackwardRowBlocks(di, src, x, d, w []float64, mu, r, m1, m2 float64) bool {
	n := len(x)
	switch kernelLevel {
	case levelAVX512:
		lnBackwardRowAVX512(di[:n], x, d[:n], w[:n], mu, r, m1, m2, src[:n])
	case levelAVX2:
		lnBackwardRowAVX2(di[:n], x, d[:n], w[:n], mu, r, m1, m2, src[:n])
	default:
		return false
	}
	return true
}

// lnColumnsBlocks runs layernormJob.backwardColumns' chains for columns
// [lo, hi) in blocks of 32 and then 8 (AVX-512) or 16 and then 4 (AVX2)
// and returns the first column it left to the Go loop (lo on the Go
// path).
func lnColumnsBlocks(dw, db, dout, inp, mean, rstd []float64, N, C, lo, hi int) int {
	if kernelLevel < levelAVX2 || N <= 0 {
		return lo
	}
	mean, rstd = mean[:N], rstd[:N]
	last := (N - 1) * C // the last row's offset in dout and inp
	i := lo
	if kernelLevel == levelAVX512 {
		for ; i+32 <= hi; i += 32 {
			_, _ = dout[last+i+31], inp[last+i+31]
			lnColumns32AVX512(dw[i:i+32], db[i:i+32], dout[i:], inp[i:], mean, rstd, N, C)
		}
		for ; i+8 <= hi; i += 8 {
			_, _ = dout[last+i+7], inp[last+i+7]
			lnColumns8AVX512(dw[i:i+8], db[i:i+8], dout[i:], inp[i:], mean, rstd, N, C)
		}
		return i
	}
	for ; i+16 <= hi; i += 16 {
		_, _ = dout[last+i+15], inp[last+i+15]
		lnColumns16AVX2(dw[i:i+16], db[i:i+16], dout[i:], inp[i:], mean, rstd, N, C)
	}
	for ; i+4 <= hi; i += 4 {
		_, _ = dout[last+i+3], inp[last+i+3]
		lnColumns4AVX2(dw[i:i+4], db[i:i+4], dout[i:], inp[i:], mean, rstd, N, C)
	}
	return i
}

// lnNormalizeAVX512 computes
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
//
//go:noescape
func lnNormalizeAVX512(o, x, w, b []float64, mu, r float64)

// lnBackwardRowAVX512 computes
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
//
// src is di itself to add to it, or the row the gradient starts from.
//
//go:noescape
func lnBackwardRowAVX512(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)

// lnColumns32AVX512 computes, for the 32 columns i < 32 (8 for
// lnColumns8AVX512), each a chain over the rows in order,
//
//	for n := 0; n < N; n++ {
//		d := dout[n*C+i]
//		dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//		db[i] += d
//	}
//
//go:noescape
func lnColumns32AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnColumns8AVX512 is lnColumns32AVX512 for 8 columns.
//
//go:noescape
func lnColumns8AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnStatsBlock computes the mean and rstd of the first 8 rows (AVX-512)
// or 4 rows (AVX2) of inp, rows C wide, into mean and rstd, the bits of
// layernormJob.forwardRows' Go loops, and returns how many rows it did:
// 0 on the Go path or when mean has room for fewer than 4 rows. On
// AVX-512, 4 to 7 rows go through the AVX2 loop.
func lnStatsBlock(mean, rstd, inp []float64, C int) int {
	k := 0
	switch {
	case C <= 0 || kernelLevel < levelAVX2:
		return 0
	case kernelLevel >= levelAVX512 && len(mean) >= 8:
		k = 8
	case len(mean) >= 4:
		k = 4
	default:
		return 0
	}
	mean, rstd, inp = mean[:k], rstd[:k], inp[:k*C]
	if k == 8 {
		lnStatsAVX512(mean, rstd, inp, C, layerNormEps)
	} else {
		lnStatsAVX2(mean, rstd, inp, C, layerNormEps)
	}
	return k
}

// lnRowSumsBlock computes a[k] = Σ dxhat and b[k] = Σ dxhat·xhat for
// each of the first 8 rows (AVX-512) or 4 rows (AVX2) k of inp and dout,
// rows C wide, the bits of layernormJob.backwardRows' Go loops, and
// returns how many rows it did: 0 on the Go path or when mean has room
// for fewer than 4 rows. On AVX-512, 4 to 7 rows go through the AVX2
// loop.
func lnRowSumsBlock(a, b *[8]float64, inp, dout, weight, mean, rstd []float64, C int) int {
	k := 0
	switch {
	case C <= 0 || kernelLevel < levelAVX2:
		return 0
	case kernelLevel >= levelAVX512 && len(mean) >= 8:
		k = 8
	case len(mean) >= 4:
		k = 4
	default:
		return 0
	}
	inp, dout, weight, mean, rstd = inp[:k*C], dout[:k*C], weight[:C], mean[:k], rstd[:k]
	if k == 8 {
		lnRowSumsAVX512(a[:], b[:], inp, dout, weight, mean, rstd, C)
	} else {
		lnRowSumsAVX2(a[:4], b[:4], inp, dout, weight, mean, rstd, C)
	}
	return k
}

// lnStatsAVX512 computes, for the 8 rows k of x (kernels_lnstats_amd64.s;
// lnStatsAVX2 for 4 rows), each sum a chain in column order,
//
//	s := 0.0
//	for _, xi := range x[k*C : k*C+C] {
//		s += xi
//	}
//	mean[k] = s / float64(C)
//	v := 0.0
//	for _, xi := range x[k*C : k*C+C] {
//		d := xi - mean[k]
//		v = math.FMA(d, d, v)
//	}
//	rstd[k] = 1 / math.Sqrt(v/float64(C)+eps)
//
//go:noescape
func lnStatsAVX512(mean, rstd, x []float64, C int, eps float64)

// lnStatsAVX2 is lnStatsAVX512 for 4 rows.
//
//go:noescape
func lnStatsAVX2(mean, rstd, x []float64, C int, eps float64)

// lnRowSumsAVX512 computes, for the 8 rows k of x and d
// (kernels_lnstats_amd64.s; lnRowSumsAVX2 for 4 rows), each sum a chain
// in column order,
//
//	a[k], b[k] = 0, 0
//	for i := range w {
//		xhat := float64((x[k*C+i] - mean[k]) * rstd[k])
//		dxhat := float64(w[i] * d[k*C+i])
//		a[k] += dxhat
//		b[k] = math.FMA(dxhat, xhat, b[k])
//	}
//
//go:noescape
func lnRowSumsAVX512(a, b, x, d, w, mean, rstd []float64, C int)

// lnRowSumsAVX2 is lnRowSumsAVX512 for 4 rows.
//
//go:noescape
func lnRowSumsAVX2(a, b, x, d, w, mean, rstd []float64, C int)

// The elementwise layers and Adam on AVX-512 (kernels_elementwise_amd64.s)
// and AVX2 (kernels_vec_avx2_amd64.s), and attention backward's softmax
// step on AVX-512 only. Each returns false where it has no loop (the Go
// path; AVX2 for the softmax step), and the caller runs its Go loop,
// which computes the same bits.

func reluBlocks(out, in []float64) bool {
	switch kernelLevel {
	case levelAVX512:
		reluAVX512(out[:len(in)], in)
	case levelAVX2:
		reluAVX2(out[:len(in)], in)
	default:
		return false
	}
	return true
}

func addBlocks(out, a, b []float64) bool {
	switch kernelLevel {
	case levelAVX512:
		addAVX512(out, a[:len(out)], b[:len(out)])
	case levelAVX2:
		addAVX2(out, a[:len(out)], b[:len(out)])
	default:
		return false
	}
	return true
}

func reluMaskBlocks(d, inp []float64) bool {
	switch kernelLevel {
	case levelAVX512:
		reluMaskAVX512(d, inp[:len(d)])
	case levelAVX2:
		reluMaskAVX2(d, inp[:len(d)])
	default:
		return false
	}
	return true
}

// softmaxBackwardBlocks is attention backward's softmax step on one row,
// dp[s] = (p[s]·(dp[s] − sum))·scale, on AVX-512; elsewhere it returns
// false and the caller runs the Go loop (AVX2 has no kernel for it: the
// rows are short, the loop is 2% of a step).
func softmaxBackwardBlocks(dp, p []float64, sum, scale float64) bool {
	if kernelLevel != levelAVX512 {
		return false
	}
	softmaxBackwardAVX512(dp, p[:len(dp)], sum, scale)
	return true
}

// adamBlocks runs the Adam update over all of params with the constants
// k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink}.
func adamBlocks(params, grads, m, v []float64, k *[9]float64) bool {
	n := len(params)
	switch kernelLevel {
	case levelAVX512:
		adamAVX512(params, grads[:n], m[:n], v[:n], k)
	case levelAVX2:
		adamAVX2(params, grads[:n], m[:n], v[:n], k)
	default:
		return false
	}
	return true
}

// reluAVX512 computes
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
//go:noescape
func reluAVX512(out, in []float64)

// addAVX512 computes
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
//
//go:noescape
func addAVX512(out, a, b []float64)

// softmaxBackwardAVX512 computes
//
//	for s, ps := range p {
//		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
//	}
//
//go:noescape
func softmaxBackwardAVX512(dp, p []float64, sum, scale float64)

// reluMaskAVX512 computes
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0
//		}
//	}
//
//go:noescape
func reluMaskAVX512(d, inp []float64)

// adamAVX512 computes, with k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink},
//
//	for i := range params {
//		g := grads[i]
//		m[i] = float64(b1*m[i]) + float64((1-b1)*g)
//		v[i] = float64(b2*v[i]) + float64((1-b2)*float64(g*g))
//		mh, vh := m[i]/c1, v[i]/c2
//		p := float64(params[i] * shrink)
//		params[i] = p - float64(lr*mh)/(math.Sqrt(vh)+eps)
//	}
//
//go:noescape
func adamAVX512(params, grads, m, v []float64, k *[9]float64)

// The AVX2+FMA twins of the loops above (mathdet_avx2_amd64.s,
// kernels_vec_avx2_amd64.s), four lanes at a time, for CPUs without
// AVX-512: each computes the same bits as its AVX-512 twin and Go loop.

// expShiftedAVX2 returns n as expShiftedBlocks does (blocks of 4), having
// computed
//
//	for i := range src[:n] {
//		dst[i] = expDet(src[i] - shift)
//	}
//
//go:noescape
func expShiftedAVX2(dst, src []float64, shift float64) int

// maxAVX2 computes what maxBlocks returns: m is meaningful only when nan
// is false and m is not zero, and then it is
//
//	m = math.Inf(-1)
//	for _, v := range src {
//		m = max(m, v)
//	}
//
//go:noescape
func maxAVX2(src []float64) (m float64, nan bool)

// divAVX2 computes
//
//	for i := range x {
//		x[i] /= d
//	}
//
//go:noescape
func divAVX2(x []float64, d float64)

// lnNormalizeAVX2 computes
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
//
//go:noescape
func lnNormalizeAVX2(o, x, w, b []float64, mu, r float64)

// lnBackwardRowAVX2 computes
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
//
// src is di itself to add to it, or the row the gradient starts from.
//
//go:noescape
func lnBackwardRowAVX2(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)

// lnColumns16AVX2 computes, for the 16 columns i < 16 (4 for
// lnColumns4AVX2), each a chain over the rows in order,
//
//	for n := 0; n < N; n++ {
//		d := dout[n*C+i]
//		dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//		db[i] += d
//	}
//
//go:noescape
func lnColumns16AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnColumns4AVX2 is lnColumns16AVX2 for 4 columns.
//
//go:noescape
func lnColumns4AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)

// reluAVX2 computes
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
//go:noescape
func reluAVX2(out, in []float64)

// addAVX2 computes
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
//
//go:noescape
func addAVX2(out, a, b []float64)

// reluMaskAVX2 computes
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0
//		}
//	}
//
//go:noescape
func reluMaskAVX2(d, inp []float64)

// adamAVX2 computes, with k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink},
//
//	for i := range params {
//		g := grads[i]
//		m[i] = float64(b1*m[i]) + float64((1-b1)*g)
//		v[i] = float64(b2*v[i]) + float64((1-b2)*float64(g*g))
//		mh, vh := m[i]/c1, v[i]/c2
//		p := float64(params[i] * shrink)
//		params[i] = p - float64(lr*mh)/(math.Sqrt(vh)+eps)
//	}
//
//go:noescape
func adamAVX2(params, grads, m, v []float64, k *[9]float64)

// boundsNN panics, as the Go kernel's indexing would, unless the last
// element each gemmNN operand is read or written at is in its slice: the
// assembly trusts its arguments (M, N, K >= 1, strides >= 0).
func boundsNN(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	_ = c[(M-1)*ldc+N-1]
	_ = a[(M-1)*ai+(K-1)*ak]
	_ = b[(K-1)*ldb+N-1]
}

// boundsNT is boundsNN for gemmNT, whose rows of A and B are K long.
func boundsNT(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	_ = c[(M-1)*ldc+N-1]
	_ = a[(M-1)*lda : (M-1)*lda+K]
	_ = b[(N-1)*ldb : (N-1)*ldb+K]
}

// gemmNNSmall is gemmNN for the attention's small products (M <= 4
// rows, K within one k block), straight to the kernels: at the seed
// config's sizes (16-wide heads, a few keys) the general driver's checks
// and blocking cost about as much as the product. With set, the chains
// start from +0 instead of from C (the same bits as clearing C's rows
// first). The kernels and their order are gemmNNAVX512Init's
// (gemmNNAVX2Init's), so the bits are too.
func gemmNNSmall(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, set bool) {
	if M <= 0 || M > 4 || N <= 0 || K <= 0 || K > nnKBlock || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 || kernelLevel == levelGo {
		if set && M > 0 && N > 0 {
			clearRows(c, ldc, M, N)
		}
		gemmNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
		return
	}
	boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	mode := 0
	if set {
		mode = 2
	}
	avx512 := kernelLevel == levelAVX512
	if M == 4 {
		if avx512 {
			gemmNN4AVX512(c, ldc, a, ai, ak, b, ldb, N, K, nil, mode, nil)
		} else {
			gemmNN4AVX2(c, ldc, a, ai, ak, b, ldb, N, K, nil, mode)
		}
		return
	}
	for i := 0; i < M; i++ {
		if avx512 {
			gemmNN1AVX512(c[i*ldc:], a[i*ai:], ak, b, ldb, N, K, nil, mode, nil)
		} else {
			gemmNN1AVX2(c[i*ldc:], a[i*ai:], ak, b, ldb, N, K, nil, mode)
		}
	}
}

// gemmNNTri continues, for a block of n rows, each row's gemmNN chains
// over the keys of the block that only some of its rows see (the
// triangle a blocked causal product leaves after the product over the
// keys all rows share), in one call instead of one gemmNN call per row:
//
//	for r := 0; r < n; r++ {
//		lo, cnt := 1, r // lower: row r sees keys 1..r
//		if upper {
//			lo, cnt = r, n-1-r // upper: row r sees keys r..n-2
//		}
//		for j := 0; j < N; j++ {
//			x := c[r*ldc+j]
//			for k := lo; k < lo+cnt; k++ {
//				x = math.FMA(a[r*ai+k*ak], b[k*ldb+j], x)
//			}
//			c[r*ldc+j] = x
//		}
//	}
//
// Every output is the k-ascending chain the per-row calls formed, so the
// bits are theirs; at the seed config (16-wide heads, 1-3 keys a row)
// those calls were mostly call overhead.
func gemmNNTri(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) {
	if n < 2 || N <= 0 {
		return
	}
	if kernelLevel == levelGo || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		gemmNNTriRows(c, ldc, a, ai, ak, b, ldb, n, N, upper)
		return
	}
	// The last row and key addressed: every other element has smaller
	// indices, the strides being >= 0.
	m, u := n-1, 0
	if upper {
		m, u = n-2, 1
	}
	_ = c[m*ldc+N-1]
	_ = a[m*ai+m*ak]
	_ = b[m*ldb+N-1]
	if kernelLevel == levelAVX512 {
		gemmNNTriAVX512(c, ldc, a, ai, ak, b, ldb, n, N, u)
	} else {
		gemmNNTriAVX2(c, ldc, a, ai, ak, b, ldb, n, N, u)
	}
}

// gemmNNTriAVX512 is gemmNNTri (n >= 2, N >= 1) with upper as 0 or 1;
// kernels_tri_amd64.s says how.
//
//go:noescape
func gemmNNTriAVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)

// gemmNNTriAVX2 is gemmNNTriAVX512 with AVX2 and FMA.
//
//go:noescape
func gemmNNTriAVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)

// transposeBlocks writes dst[(o+c)*R+i+r] = src[(i+r)*W+o+c] for the
// 8×8 blocks o = o0, o0+8, ... below o1 (o1-o0 a multiple of 8) of the
// source rows i..i+7, in registers on AVX-512; it reports false
// elsewhere, and the caller moves the elements itself.
func transposeBlocks(dst, src []float64, R, W, i, o0, o1 int) bool {
	if kernelLevel != levelAVX512 || o0 >= o1 {
		return false
	}
	_ = src[(i+7)*W+o1-1]
	_ = dst[(o1-1)*R+i+7]
	transpose8AVX512(dst[o0*R+i:], R, src[i*W+o0:], W, (o1-o0)/8)
	return true
}

// transpose8AVX512 transposes n blocks of 8×8 (kernels_avx512_amd64.s
// gives the loop).
//
//go:noescape
func transpose8AVX512(dst []float64, ldd int, src []float64, lds int, n int)

// sumSquaresLanes continues sumSquares8's eight chains s over the whole
// groups of eight of xs and returns how many elements it consumed (0
// where there is no vector kernel: the caller's loop does them all).
func sumSquaresLanes(xs []float64, s *[8]float64) int {
	if kernelLevel != levelAVX512 || len(xs) < 8 {
		return 0
	}
	sumSquaresLanesAVX512(xs, s)
	return len(xs) &^ 7
}

// sumSquaresLanesAVX512 is sumSquaresLanes's loop
// (kernels_elementwise_amd64.s).
//
//go:noescape
func sumSquaresLanesAVX512(xs []float64, s *[8]float64)
