//go:build amd64 && gc && !purego

// gemm_amd64.go owns the matrix products' hooks on amd64 (blocking, bounds checks) and their kernels' stubs.

package kernels

import "math"

// nnKBlock is the depth of one pass of the gemmNN kernels over C: a block
// of B (nnKBlock × N) then stays in L2 while every row block of A sweeps
// it. Splitting the k loop is exact: the chain continues from the stored c.
const nnKBlock = 128

// gemmNNAsm is GemmNN's hook: all M rows on AVX-512 and AVX2 (strides
// >= 0 and K >= 1), none on the Go path. On AVX2, products of at least
// 16 rows and columns pack their operands (gemmNNPacked).
func gemmNNAsm(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) int {
	if level == levelGo || K <= 0 || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		return 0
	}
	if level == levelAVX2 && usePacked(M, N, K) {
		boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
		gemmNNPacked(c, ldc, nil, 0, a, ai, ak, b, ldb, M, N, K, EpiNone, nil)
		return M
	}
	gemmNNBlocks(c, ldc, nil, 0, a, ai, ak, b, ldb, M, N, K, EpiNone, nil)
	return M
}

// gemmNNSetAsm is GemmNNSet's hook: all M rows on AVX-512 and AVX2
// (strides >= 0 and K >= 1), the kernels starting the chains from the
// bias (mode 1) or +0 (mode 2) instead of reading C. The AVX-512 kernels
// and the packed AVX2 ones apply epi as they store C; after the
// unpacked AVX2 kernels (small products, and a packed product's edges)
// the epilogue's entry points run over C.
func gemmNNSetAsm(c []float64, ldc int, bias, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) int {
	if level == levelGo || K <= 0 || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		return 0
	}
	mode := 2
	if bias != nil {
		mode = 1
	}
	if level == levelAVX2 && usePacked(M, N, K) {
		boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
		if mode == 1 {
			bias = bias[:N]
		}
		if epi&(EpiResidual|EpiMask) != 0 {
			_ = aux[(M-1)*ldc+N-1]
		}
		gemmNNPacked(c, ldc, bias, mode, a, ai, ak, b, ldb, M, N, K, epi, aux)
		return M
	}
	gemmNNBlocks(c, ldc, bias, mode, a, ai, ak, b, ldb, M, N, K, epi, aux)
	if level == levelAVX2 && epi != EpiNone {
		epilogue(c, ldc, M, N, epi, aux)
	}
	return M
}

// epilogue applies epi to C's M×N block through the vector entry points,
// the whole block as one slice when its rows are contiguous.
func epilogue(c []float64, ldc, M, N int, epi Epilogue, aux []float64) {
	rows, width := M, N
	if ldc == N {
		rows, width = 1, M*N
	}
	for i := 0; i < rows; i++ {
		row := c[i*ldc : i*ldc+width]
		if epi&EpiReLU != 0 {
			ReLU(row, row)
		}
		if epi&EpiResidual != 0 {
			Add(row, aux[i*ldc:i*ldc+width], row)
		}
		if epi&EpiMask != 0 {
			ReLUMask(row, aux[i*ldc:i*ldc+width])
		}
	}
}

// nnNBlock and nnMBlock bound the column and row blocks gemmNNBlocks
// cuts a large product into, so that the block of B one pass over k
// reads (nnKBlock × nnNBlock, 256 KB) stays in L2 beside the rows of A
// and C that sweep it, instead of streaming from L3 for every row block:
// at 1536 columns (the feed-forward layers of width 384) a block of k of
// B is 1.5 MB, and the products ran at 55% of the one-core peak instead
// of 80%. Blocks are exact: every output's chain is unchanged.
const (
	nnNBlock = 256
	nnMBlock = 240
)

// gemmNNBlocks is gemmNN (M, N, K >= 1, strides >= 0) on the AVX-512 or
// AVX2 kernels: products wider than nnNBlock or taller than nnMBlock go
// as blocks of about equal size (columns in multiples of 32, rows in
// multiples of 6) to gemmNNBlock.
func gemmNNBlocks(c []float64, ldc int, bias []float64, mode int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) {
	if M <= nnMBlock && N <= nnNBlock {
		gemmNNBlock(c, ldc, bias, mode, a, ai, ak, b, ldb, M, N, K, epi, aux, noNext)
		return
	}
	boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	mstep, nstep := M, N
	if M > nnMBlock {
		n := (M + nnMBlock - 1) / nnMBlock
		mstep = ((M+n-1)/n + 5) / 6 * 6
	}
	if N > nnNBlock {
		n := (N + nnNBlock - 1) / nnNBlock
		nstep = ((N+n-1)/n + 31) / 32 * 32
	}
	for i0 := 0; i0 < M; i0 += mstep {
		for j0 := 0; j0 < N; j0 += nstep {
			var bj, rj []float64
			if mode == 1 {
				bj = bias[j0:]
			}
			if aux != nil {
				rj = aux[i0*ldc+j0:]
			}
			// The block of B the next call starts with, as an offset from
			// this call's: the next columns, or the first ones again for
			// the next rows.
			next := nstep
			if j0+nstep >= N {
				next = -j0
				if i0+mstep >= M {
					next = noNext
				}
			}
			gemmNNBlock(c[i0*ldc+j0:], ldc, bj, mode, a[i0*ai:], ai, ak, b[j0:], ldb, min(mstep, M-i0), min(nstep, N-j0), K, epi, rj, next)
		}
	}
}

// noNext is gemmNNBlock's next when no product follows.
const noNext = math.MinInt

// gemmNNBlock is one block of gemmNNBlocks on the AVX-512 or AVX2
// kernels, the chains started from C (mode 0), from the bias for
// every row (mode 1) or from +0 (mode 2), in blocks of nnKBlock steps of
// k (later blocks continue the chains stored in C). The AVX-512 kernels
// apply epi (aux laid out as C) on the last block as they store; the
// AVX2 kernels ignore it. Rows go six, then four, then one at a time
// on AVX-512, four then one on AVX2; 8 or 9 rows left over go as two
// blocks of four (and one) rather than six and two or three single rows,
// whose kernel is the slowest. Products of at most four rows within one
// block of k (the attention's) go straight to the kernels, whose call
// costs about as much as the product there.
func gemmNNBlock(c []float64, ldc int, bias []float64, mode int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64, next int) {
	// The assembly trusts its arguments: check the last element each
	// operand is read or written at, as the Go twin's indexing would.
	boundsNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	if mode == 1 {
		bias = bias[:N]
	}
	avx512 := level == levelAVX512
	if !avx512 || epi&(EpiResidual|EpiMask) == 0 {
		aux = nil
	} else {
		_ = aux[(M-1)*ldc+N-1]
	}
	if !avx512 {
		epi = EpiNone
	}
	if M <= 4 && K <= nnKBlock {
		m := mode | int(epi)
		if M == 4 {
			if avx512 {
				gemmNN4AVX512(c, ldc, a, ai, ak, b, ldb, N, K, bias, m, aux)
			} else {
				gemmNN4AVX2(c, ldc, a, ai, ak, b, ldb, N, K, bias, mode)
			}
			return
		}
		var ri []float64
		for i := 0; i < M; i++ {
			if avx512 {
				if aux != nil {
					ri = aux[i*ldc:]
				}
				gemmNN1AVX512(c[i*ldc:], a[i*ai:], ak, b, ldb, N, K, bias, m, ri)
			} else {
				gemmNN1AVX2(c[i*ldc:], a[i*ai:], ak, b, ldb, N, K, bias, mode)
			}
		}
		return
	}
	n6 := 0
	if avx512 {
		n6 = M / 6
		if r := M % 6; (r == 2 || r == 3) && n6 > 0 {
			n6--
		}
	}
	for k0 := 0; k0 < K; k0 += nnKBlock {
		kn := min(nnKBlock, K-k0)
		ak0, bk0 := a[k0*ak:], b[k0*ldb:]
		if !avx512 {
			i := 0
			for ; i+4 <= M; i += 4 {
				gemmNN4AVX2(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, mode)
			}
			for ; i < M; i++ {
				gemmNN1AVX2(c[i*ldc:], ak0[i*ai:], ak, bk0, ldb, N, kn, bias, mode)
			}
			mode = 0
			continue
		}
		m := mode
		if k0+kn == K {
			m |= int(epi)
		}
		var ri []float64
		// The first row block fetches the block of B into L2 for the
		// others; it also touches the next block of k on the way, so that
		// the next pass finds it there instead of waiting on L3 for
		// every row of it (rows ldb apart, which the hardware prefetchers
		// do not follow across pages).
		pf := 0
		if k0+kn < K {
			pf = kn * ldb * 8
		} else if next != noNext {
			pf = (next - k0*ldb) * 8
		}
		i := 0
		for ; i < 6*n6; i += 6 {
			if aux != nil {
				ri = aux[i*ldc:]
			}
			gemmNN6AVX512(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, m, ri, pf)
			pf = 0
		}
		for ; i+4 <= M; i += 4 {
			if aux != nil {
				ri = aux[i*ldc:]
			}
			gemmNN4AVX512(c[i*ldc:], ldc, ak0[i*ai:], ai, ak, bk0, ldb, N, kn, bias, m, ri)
		}
		for ; i < M; i++ {
			if aux != nil {
				ri = aux[i*ldc:]
			}
			gemmNN1AVX512(c[i*ldc:], ak0[i*ai:], ak, bk0, ldb, N, kn, bias, m, ri)
		}
		mode = 0 // later blocks of k continue the chains stored in C
	}
}

// gemmNTAsm is GemmNT's hook: all M rows on AVX-512 and AVX2 (strides
// and K >= 0), none on the Go path.
func gemmNTAsm(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) int {
	return gemmNTBlocks(c, ldc, a, lda, b, ldb, M, N, K, 0)
}

// gemmNTSetAsm is GemmNTSet's hook: as gemmNTAsm, the kernels starting
// the outputs from +0 instead of reading C.
func gemmNTSetAsm(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) int {
	return gemmNTBlocks(c, ldc, a, lda, b, ldb, M, N, K, 1)
}

// gemmNTBlocks runs gemmNT on the AVX-512 kernels in blocks of four rows
// of C, or on the AVX2 kernels in blocks of two, with the dot products
// added to C's old values (zero = 0) or to +0 (zero = 1), and returns
// the rows done: M, or 0 on the Go path and for negative strides or K.
func gemmNTBlocks(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K, zero int) int {
	if level == levelGo || ldc < 0 || lda < 0 || ldb < 0 || K < 0 {
		return 0
	}
	boundsNT(c, ldc, a, lda, b, ldb, M, N, K)
	i := 0
	if level == levelAVX512 {
		for ; i+4 <= M; i += 4 {
			gemmNT4AVX512(c[i*ldc:], ldc, a[i*lda:], lda, b, ldb, N, K, zero)
		}
		for ; i < M; i++ {
			gemmNT1AVX512(c[i*ldc:], a[i*lda:], b, ldb, N, K, zero)
		}
		return M
	}
	for ; i+2 <= M; i += 2 {
		gemmNT2AVX2(c[i*ldc:], ldc, a[i*lda:], lda, b, ldb, N, K, zero)
	}
	if i < M {
		gemmNT1AVX2(c[i*ldc:], a[i*lda:], b, ldb, N, K, zero)
	}
	return M
}

// gemmNNTriAsm is GemmNNTri's hook (n >= 2, N >= 1): all n rows on
// AVX-512 and AVX2 (strides >= 0), none on the Go path.
func gemmNNTriAsm(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) int {
	if level == levelGo || ldc < 0 || ai < 0 || ak < 0 || ldb < 0 {
		return 0
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
	if level == levelAVX512 {
		gemmNNTriAVX512(c, ldc, a, ai, ak, b, ldb, n, N, u)
	} else {
		gemmNNTriAVX2(c, ldc, a, ai, ak, b, ldb, n, N, u)
	}
	return n
}

// boundsNN panics, as the Go twin's indexing would, unless the last
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

// The assembly kernels (gemm_avx2_amd64.s, gemm_avx512_amd64.s), each
// documented by the Go loop it computes; the .s files say how.

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
