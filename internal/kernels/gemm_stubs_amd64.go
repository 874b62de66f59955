//go:build amd64 && gc && !purego

// gemm_stubs_amd64.go holds the stubs of the GEMM assembly kernels (gemm_avx2_amd64.s, gemm_avx512_amd64.s), each documented by the Go loop it computes; the .s files say how.

package kernels

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
//			c[i*ldc+j] += Dot(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
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
//		c[j] += Dot(a[:K], b[j*ldb:j*ldb+K])
//	}
//
//go:noescape
func gemmNT1AVX2(c []float64, a []float64, b []float64, ldb int, N, K, zero int)

// gemmNN4AVX512 is four rows of gemmNN (N, K >= 1), the chains started
// from x0 = c[i*ldc+j] (mode&3 = 0), bias[j] (1) or 0 (2), and the
// layers of epi (mode&EpiReLU, mode&EpiMask, mode&EpiResidual; never
// the last two together) applied as C is stored:
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			x := x0(i, j)
//			for k := 0; k < K; k++ {
//				x = math.FMA(a[i*ai+k*ak], b[k*ldb+j], x)
//			}
//			if mode&EpiReLU != 0 {
//				x = max(x, 0)
//			}
//			if mode&EpiMask != 0 && !(res[i*ldc+j] > 0) {
//				x = 0
//			}
//			if mode&EpiResidual != 0 {
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
// feeds six multiply-adds instead of four. A pf other than 0 asks it to
// prefetch into L2, as it reads each 32 columns of a row of B, the same
// columns pf bytes on (the block of B the caller's next call reads);
// prefetches change no result and never fault.
//
//go:noescape
func gemmNN6AVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64, pf int)

// gemmNN1AVX512 is one row of gemmNN (N, K >= 1), the chains started
// from x0 = c[j] (mode&3 = 0), bias[j] (1) or 0 (2), then epi's layers
// as gemmNN4AVX512:
//
//	for j := 0; j < N; j++ {
//		x := x0(j)
//		for k := 0; k < K; k++ {
//			x = math.FMA(a[k*ak], b[k*ldb+j], x)
//		}
//		if mode&EpiReLU != 0 {
//			x = max(x, 0)
//		}
//		if mode&EpiMask != 0 && !(res[j] > 0) {
//			x = 0
//		}
//		if mode&EpiResidual != 0 {
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
//			c[i*ldc+j] += Dot(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
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
//		c[j] += Dot(a[:K], b[j*ldb:j*ldb+K])
//	}
//
//go:noescape
func gemmNT1AVX512(c []float64, a []float64, b []float64, ldb int, N, K, zero int)

// gemmNNTriAVX512 is GemmNNTri (n >= 2, N >= 1) with upper as 0 or 1
// (gemm_tri_amd64.s says how):
//
//	for r := 0; r < n; r++ {
//		lo, cnt := 1, r // lower: row r sees keys 1..r
//		if upper != 0 {
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
//go:noescape
func gemmNNTriAVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)

// gemmNNTriAVX2 is gemmNNTriAVX512's Go loop above with AVX2 and FMA.
//
//go:noescape
func gemmNNTriAVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)
