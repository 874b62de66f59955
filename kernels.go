package minigpt

import "math"

// The two matrix kernels below are the only places where long sums are
// formed, and each defines ONE order for every output element. Every code
// path (this portable Go, the amd64 assembly, any number of goroutines,
// one row at a time in the KV cache or a whole batch in training) follows
// that order, which is what makes results identical to the bit.
//
//   gemmNN: an output is a chain of fused multiply-adds over k = 0, 1, ...,
//           K-1, starting from the value already in c. Vectorising across
//           independent outputs (j) keeps that order exactly.
//   gemmNT: an output is a dot product over contiguous memory. It is split
//           into eight interleaved lanes (element k goes to lane k%8, each
//           lane a chain of fused multiply-adds from +0) that are then
//           combined by the fixed tree dot8Reduce, and the result is added
//           to c once. Eight lanes are one AVX-512 register or two AVX2
//           registers, so SIMD code follows the same order naturally.

// gemmNN computes, for i < M and j < N,
//
//	c[i*ldc+j] = fma(a[i*ai+(K-1)*ak], b[(K-1)*ldb+j], ... fma(a[i*ai], b[j], c[i*ldc+j]))
//
// that is C += A·B with A addressed through strides (ai per row, ak per
// reduction step) so that both A and Aᵀ can be passed without copying.
func gemmNN(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	gemmNNImpl(c, ldc, a, ai, ak, b, ldb, M, N, K)
}

// gemmNT computes, for i < M and j < N,
//
//	c[i*ldc+j] += dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//
// that is C += A·Bᵀ with both operands read along contiguous rows.
func gemmNT(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	gemmNTImpl(c, ldc, a, lda, b, ldb, M, N, K)
}

// gemmNTSet is gemmNT with C's M×N block set to +0 first:
//
//	c[i*ldc+j] = 0 + dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//
// The AVX-512 and AVX2 kernels start from +0 instead of reading C, which
// saves the pass over C that clearing it would cost; the Go path clears it.
func gemmNTSet(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	if M <= 0 || N <= 0 {
		return
	}
	if !gemmNTSetBlocks(c, ldc, a, lda, b, ldb, M, N, K) {
		clearRows(c, ldc, M, N)
		gemmNTImpl(c, ldc, a, lda, b, ldb, M, N, K)
	}
}

// gemmNNSetMask is gemmNN with C's M×N block set to +0 first (every
// output a chain from +0 over k in ascending order), followed, when mask
// is not nil, by reluMask(C, mask) over the block (mask laid out as C):
// the input gradient of a matrix product, after a ReLU or not. The
// assembly kernels start their chains from +0 instead of reading C
// (gemmNNInitBlocks without a bias) and, on AVX-512, mask each output as
// they store it (epiMask), which saves a pass over C; the Go path clears
// C first and masks after, the same bits.
func gemmNNSetMask(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, mask []float64) {
	if M <= 0 || N <= 0 {
		return
	}
	epi := 0
	if mask != nil {
		epi = epiMask
	}
	ok, fused := gemmNNInitBlocks(c, ldc, nil, a, ai, ak, b, ldb, M, N, K, epi, mask)
	if !ok {
		clearRows(c, ldc, M, N)
		gemmNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
	}
	if mask != nil && !fused {
		if ldc == N {
			reluMask(c[:M*N], mask)
			return
		}
		for i := 0; i < M; i++ {
			reluMask(c[i*ldc:i*ldc+N], mask[i*ldc:])
		}
	}
}

// The elementwise layers the AVX-512 gemmNN kernels can apply to C as
// they store it (gemmNNInitBlocks's epi), the bits of running the layer
// after the product: ReLU as reluForward in place, then the residual
// c = res + c as residualForward; or alone, the ReLU's backward mask
// reluMask(c, res) (res then holds the ReLU's input, or its output).
const (
	epiRelu     = 4
	epiResidual = 8
	epiMask     = 16
)

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

// kernelImpl is one implementation of the kernel pair (the portable Go or
// an assembly path); every implementation computes the same bits.
type kernelImpl struct {
	name string
	nn   func(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int)
	nt   func(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int)
}

// peakImpl is a loop of independent fused multiply-adds that measures
// the machine's floating-point peak: run(n) performs n rounds of flops
// floating-point operations each.
type peakImpl struct {
	name  string
	run   func(n int)
	flops int
}

// dot8 is the canonical dot product of x and y (equal lengths): eight
// interleaved fused multiply-add chains reduced by dot8Reduce.
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

// gemmNNGo is the portable gemmNN: 2×4 register blocks, every output a
// k-ascending chain. Two rows by four columns keeps the 8 accumulators,
// 2 values of A and 4 of B within the 15 usable XMM registers, so that
// with GOAMD64=v3 the loop runs without spills. (With v1 every math.FMA
// carries a fallback call that forces its result to the stack; see
// BenchmarkGemm.)
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

// gemmNTGo is the portable gemmNT: one canonical dot8 per output.
func gemmNTGo(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	for i := 0; i < M; i++ {
		ai := a[i*lda : i*lda+K]
		ci := c[i*ldc : i*ldc+N]
		for j := range ci {
			ci[j] += dot8(ai, b[j*ldb:j*ldb+K])
		}
	}
}

// gemmNNTriRows is gemmNNTri as one gemmNN call per row: the portable
// path, and the reference the assembly's tests compare with.
func gemmNNTriRows(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) {
	for r := 0; r < n; r++ {
		lo, cnt := 1, r // lower: row r sees keys 1..r
		if upper {
			lo, cnt = r, n-1-r // upper: row r sees keys r..n-2
		}
		if cnt > 0 {
			gemmNN(c[r*ldc:], ldc, a[r*ai+lo*ak:], 0, ak, b[lo*ldb:], ldb, 1, N, cnt)
		}
	}
}
