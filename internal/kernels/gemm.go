// gemm.go owns the matrix products' entry points and their Go twins.

package kernels

import (
	"fmt"
	"math"
)

// GemmNN computes C += A·B: for i < M and j < N,
//
//	c[i*ldc+j] = fma(a[i*ai+(K-1)*ak], b[(K-1)*ldb+j], ... fma(a[i*ai], b[j], c[i*ldc+j]))
//
// a k-ascending chain of fused multiply-adds from the value in C. A is
// addressed through strides (ai per row, ak per reduction step), so that
// both A and Aᵀ can be passed without a copy. Nothing happens when M or
// N is not positive.
func GemmNN(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	if n := gemmNNAsm(c, ldc, a, ai, ak, b, ldb, M, N, K); n < M {
		gemmNNGo(c[n*ldc:], ldc, a[n*ai:], ai, ak, b, ldb, M-n, N, K)
	}
}

// StridedAFast reports whether GemmNN and GemmNNSet read an A whose
// steps are not contiguous (ak != 1: a transposed operand, such as a
// layer's input for its weight gradient) as fast as a row-major A, so
// that a caller gains nothing by transposing A first: true on the AVX2
// path, whose products pack A themselves (and must pack B again for
// every call, which many small calls over a transposed copy would
// multiply). It says nothing about results, which are the same either
// way.
func StridedAFast() bool { return stridedAFast() }

// Epilogue is the elementwise layer GemmNNSet applies to C after the
// product: the bits of running that layer on C afterwards, whether or
// not the assembly fuses it into its stores.
type Epilogue int

// The epilogues. EpiReLU and EpiResidual may be combined (the ReLU
// first); EpiMask goes alone.
const (
	// EpiNone leaves C as the product made it.
	EpiNone Epilogue = 0
	// EpiReLU sets C = max(C, 0) in place, as ReLU(C, C).
	EpiReLU Epilogue = 4
	// EpiResidual sets C = aux + C, as Add(C, aux, C).
	EpiResidual Epilogue = 8
	// EpiMask sets an element of C to +0 where aux's is not > 0, as
	// ReLUMask(C, aux): the ReLU's backward mask (aux holds the ReLU's
	// input or, the same mask, its output).
	EpiMask Epilogue = 16
)

// GemmNNSet computes C = bias + A·B, then the epilogue epi: GemmNN with
// every row of C's M×N block first set to bias (bias[:N]; +0 when bias
// is nil), and aux, when epi reads it, laid out as C (ldc apart). The
// assembly starts its chains from the bias instead of reading C, so C's
// old values are never read. It panics if epi is not one of the
// epilogues or their allowed combination.
func GemmNNSet(c []float64, ldc int, bias, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) {
	if epi != EpiNone && epi&^(EpiReLU|EpiResidual) != 0 && epi != EpiMask {
		panic(fmt.Sprintf("kernels: GemmNNSet with epilogue %d (EpiMask combines with nothing)", epi))
	}
	if M <= 0 || N <= 0 {
		return
	}
	if n := gemmNNSetAsm(c, ldc, bias, a, ai, ak, b, ldb, M, N, K, epi, aux); n < M {
		if aux != nil {
			aux = aux[n*ldc:]
		}
		gemmNNSetGo(c[n*ldc:], ldc, bias, a[n*ai:], ai, ak, b, ldb, M-n, N, K, epi, aux)
	}
}

// GemmNT computes C += A·Bᵀ with both operands read along contiguous
// rows: for i < M and j < N,
//
//	c[i*ldc+j] += Dot(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//
// Nothing happens when M or N is not positive.
func GemmNT(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	if n := gemmNTAsm(c, ldc, a, lda, b, ldb, M, N, K); n < M {
		gemmNTGo(c[n*ldc:], ldc, a[n*lda:], lda, b, ldb, M-n, N, K)
	}
}

// GemmNTSet is GemmNT with C's M×N block set to +0 first:
//
//	c[i*ldc+j] = 0 + Dot(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//
// The assembly starts the outputs from +0 instead of reading C.
func GemmNTSet(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	if n := gemmNTSetAsm(c, ldc, a, lda, b, ldb, M, N, K); n < M {
		gemmNTSetGo(c[n*ldc:], ldc, a[n*lda:], lda, b, ldb, M-n, N, K)
	}
}

// GemmNNTri continues, for a block of n rows, each row's GemmNN chains
// over the keys of the block that only some of its rows see (the
// triangle a blocked causal product leaves after the product over the
// keys all rows share), in one call instead of one GemmNN call per row:
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
// Every output is the k-ascending chain the per-row calls form, so the
// bits are theirs.
func GemmNNTri(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) {
	if n < 2 || N <= 0 {
		return
	}
	if r := gemmNNTriAsm(c, ldc, a, ai, ak, b, ldb, n, N, upper); r < n {
		gemmNNTriGo(c, ldc, a, ai, ak, b, ldb, r, n, N, upper)
	}
}

// Dot is the canonical dot product of x and y (y at least as long as
// x): eight interleaved fused multiply-add chains from +0, element k in
// lane k%8, reduced by the fixed tree ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)).
// It is GemmNT's order for one output.
func Dot(x, y []float64) float64 { return dot8(x, y) }

// dot8 is Dot (the Go twin of every gemmNT lane layout).
func dot8(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float64
	k := 0
	for ; k+8 <= len(x); k += 8 {
		xs, ys := x[k:k+8:k+8], y[k:k+8:k+8]
		s0 = math.FMA(xs[0], ys[0], s0)
		s1 = math.FMA(xs[1], ys[1], s1)
		s2 = math.FMA(xs[2], ys[2], s2)
		s3 = math.FMA(xs[3], ys[3], s3)
		s4 = math.FMA(xs[4], ys[4], s4)
		s5 = math.FMA(xs[5], ys[5], s5)
		s6 = math.FMA(xs[6], ys[6], s6)
		s7 = math.FMA(xs[7], ys[7], s7)
	}
	if k < len(x) {
		// The ragged tail continues the same lanes: element k goes to lane k%8.
		acc := [8]float64{s0, s1, s2, s3, s4, s5, s6, s7}
		for r := 0; k+r < len(x); r++ {
			acc[r] = math.FMA(x[k+r], y[k+r], acc[r])
		}
		s0, s1, s2, s3, s4, s5, s6, s7 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	}
	return dot8Reduce(s0, s1, s2, s3, s4, s5, s6, s7)
}

// dot8Reduce combines the eight lanes in the order a SIMD reduction does:
// lanes 0-3 plus lanes 4-7, then the upper pair onto the lower, then the
// last two.
func dot8Reduce(s0, s1, s2, s3, s4, s5, s6, s7 float64) float64 {
	t0, t1, t2, t3 := s0+s4, s1+s5, s2+s6, s3+s7
	return (t0 + t2) + (t1 + t3)
}

// clearRows sets c[i*ldc+j] = 0 for i < M, j < N.
func clearRows(c []float64, ldc, M, N int) {
	if ldc == N {
		clear(c[:M*N])
		return
	}
	for i := 0; i < M; i++ {
		clear(c[i*ldc : i*ldc+N])
	}
}

// gemmNNSetGo is GemmNNSet's Go twin: C's rows set to the bias (or
// cleared), gemmNNGo, then the epilogue's Go twin row by row.
func gemmNNSetGo(c []float64, ldc int, bias, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) {
	if bias != nil {
		bias = bias[:N]
		for i := 0; i < M; i++ {
			copy(c[i*ldc:i*ldc+N], bias)
		}
	} else {
		clearRows(c, ldc, M, N)
	}
	gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
	if epi == EpiNone {
		return
	}
	for i := 0; i < M; i++ {
		row := c[i*ldc : i*ldc+N]
		if epi&EpiReLU != 0 {
			reluGo(row, row)
		}
		if epi&EpiResidual != 0 {
			addGo(row, aux[i*ldc:i*ldc+N], row)
		}
		if epi&EpiMask != 0 {
			reluMaskGo(row, aux[i*ldc:i*ldc+N])
		}
	}
}

// gemmNTSetGo is GemmNTSet's Go twin: C's block cleared, then gemmNTGo.
func gemmNTSetGo(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	clearRows(c, ldc, M, N)
	gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
}

// gemmNTGo is GemmNT's Go twin: one dot8 per output.
func gemmNTGo(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	for i := 0; i < M; i++ {
		ai := a[i*lda : i*lda+K]
		ci := c[i*ldc : i*ldc+N]
		for j := range ci {
			ci[j] += dot8(ai, b[j*ldb:j*ldb+K])
		}
	}
}

// gemmNNTriGo is GemmNNTri's Go twin for the rows r0..n-1: one gemmNNGo
// call per row over its keys of the block.
func gemmNNTriGo(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, r0, n, N int, upper bool) {
	for r := r0; r < n; r++ {
		lo, cnt := 1, r // lower: row r sees keys 1..r
		if upper {
			lo, cnt = r, n-1-r // upper: row r sees keys r..n-2
		}
		if cnt > 0 {
			gemmNNGo(c[r*ldc:], ldc, a[r*ai+lo*ak:], 0, ak, b[lo*ldb:], ldb, 1, N, cnt)
		}
	}
}

// gemmNNGo is GemmNN's Go twin: 2×4 register blocks, every output a
// k-ascending chain. Two rows by four columns keeps the 8 accumulators,
// 2 values of A and 4 of B within the 15 usable XMM registers, so that
// with GOAMD64=v3 the loop runs without spills. (With v1 every math.FMA
// carries a fallback call that forces its result to the stack.)
func gemmNNGo(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	i := 0
	for ; i+2 <= M; i += 2 {
		c0 := c[i*ldc : i*ldc+N]
		c1 := c[(i+1)*ldc : (i+1)*ldc+N]
		j := 0
		for ; j+4 <= N; j += 4 {
			d0, d1 := (*[4]float64)(c0[j:j+4]), (*[4]float64)(c1[j:j+4])
			x00, x01, x02, x03 := d0[0], d0[1], d0[2], d0[3]
			x10, x11, x12, x13 := d1[0], d1[1], d1[2], d1[3]
			ia := i * ai
			ib := j
			for k := 0; k < K; k++ {
				bk := (*[4]float64)(b[ib : ib+4])
				a0, a1 := a[ia], a[ia+ai]
				x00 = math.FMA(a0, bk[0], x00)
				x01 = math.FMA(a0, bk[1], x01)
				x02 = math.FMA(a0, bk[2], x02)
				x03 = math.FMA(a0, bk[3], x03)
				x10 = math.FMA(a1, bk[0], x10)
				x11 = math.FMA(a1, bk[1], x11)
				x12 = math.FMA(a1, bk[2], x12)
				x13 = math.FMA(a1, bk[3], x13)
				ia += ak
				ib += ldb
			}
			d0[0], d0[1], d0[2], d0[3] = x00, x01, x02, x03
			d1[0], d1[1], d1[2], d1[3] = x10, x11, x12, x13
		}
		for ; j < N; j++ {
			x0, x1 := c0[j], c1[j]
			ia := i * ai
			ib := j
			for k := 0; k < K; k++ {
				bk := b[ib]
				x0 = math.FMA(a[ia], bk, x0)
				x1 = math.FMA(a[ia+ai], bk, x1)
				ia += ak
				ib += ldb
			}
			c0[j], c1[j] = x0, x1
		}
	}
	for ; i < M; i++ {
		ci := c[i*ldc : i*ldc+N]
		j := 0
		for ; j+4 <= N; j += 4 {
			d := (*[4]float64)(ci[j : j+4])
			x0, x1, x2, x3 := d[0], d[1], d[2], d[3]
			ia := i * ai
			ib := j
			for k := 0; k < K; k++ {
				bk := (*[4]float64)(b[ib : ib+4])
				ak0 := a[ia]
				x0 = math.FMA(ak0, bk[0], x0)
				x1 = math.FMA(ak0, bk[1], x1)
				x2 = math.FMA(ak0, bk[2], x2)
				x3 = math.FMA(ak0, bk[3], x3)
				ia += ak
				ib += ldb
			}
			d[0], d[1], d[2], d[3] = x0, x1, x2, x3
		}
		for ; j < N; j++ {
			x := ci[j]
			ia := i * ai
			ib := j
			for k := 0; k < K; k++ {
				x = math.FMA(a[ia], b[ib], x)
				ia += ak
				ib += ldb
			}
			ci[j] = x
		}
	}
}
