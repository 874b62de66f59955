//go:build !amd64 || !gc || purego

package minigpt

// Without assembly every path is the portable Go kernel.

func gemmNNImpl(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
}

func gemmNTImpl(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
}

// kernelPath names the kernel implementation in use, for benchmarks and logs.
func kernelPath() string { return "go" }

// kernelImpls lists every kernel implementation this machine can run, the
// portable one first; tests and benchmarks compare them.
func kernelImpls() []kernelImpl {
	return []kernelImpl{{"go", gemmNNGo, gemmNTGo}}
}

// setKernelPath is a no-op here: the portable kernels are the only path.
func setKernelPath(string) (restore func()) { return func() {} }

// peakImpls lists the peak loops this machine can run: none without
// assembly.
func peakImpls() []peakImpl { return nil }

// softmaxScaledBlocks does nothing here: softmaxScaled's loops do it all.
func softmaxScaledBlocks(row []float64, scale float64) (float64, int) { return 0, scaleNotDone }

// expShiftedBlocks computes nothing here: expShifted's loop does it all.
func expShiftedBlocks(dst, src []float64, shift float64) int { return 0 }

// Without assembly gemmNTSet clears C before gemmNT.
func gemmNTSetBlocks(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) bool {
	return false
}

// Without assembly LayerNorm runs its Go loops.
func lnNormalizeBlocks(o, x, w, b []float64, mu, r float64) bool                    { return false }
func lnBackwardRowBlocks(di, src, x, d, w []float64, mu, r, m1, m2 float64) bool    { return false }
func lnColumnsBlocks(dw, db, dout, inp, mean, rstd []float64, N, C, lo, hi int) int { return lo }

// Without assembly LayerNorm's row statistics run their Go loops.
func lnStatsBlock(mean, rstd, inp []float64, C int) int { return 0 }
func lnRowSumsBlock(a, b *[8]float64, inp, dout, weight, mean, rstd []float64, C int) int {
	return 0
}

// Without assembly softmax's maximum and division run their Go loops.
func maxBlocks(src []float64) (float64, bool) { return 0, false }
func divBlocks(x []float64, d float64) bool   { return false }

// Without assembly the elementwise layers, attention backward's softmax
// step and Adam run their Go loops.

func reluBlocks(out, in []float64) bool                              { return false }
func addBlocks(out, a, b []float64) bool                             { return false }
func reluMaskBlocks(d, inp []float64) bool                           { return false }
func softmaxBackwardBlocks(dp, p []float64, sum, scale float64) bool { return false }
func transposeBlocks(dst, src []float64, R, W, i, o0, o1 int) bool   { return false }
func sumSquaresLanes(xs []float64, s *[8]float64) int                { return 0 }
func adamBlocks(params, grads, m, v []float64, k *[9]float64) bool   { return false }

// gemmNNInitBlocks does nothing here: gemmNNJob sets C first.
func gemmNNInitBlocks(c []float64, ldc int, bias []float64, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi int, res []float64) (ok, fused bool) {
	return false, false
}

// gemmNNSmall is gemmNN, after clearing C's rows when set (the amd64
// build goes straight to its kernels).
func gemmNNSmall(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, set bool) {
	if set && M > 0 && N > 0 {
		clearRows(c, ldc, M, N)
	}
	gemmNN(c, ldc, a, ai, ak, b, ldb, M, N, K)
}

// gemmNNTri continues a block of n rows' gemmNN chains over the block's
// own keys (the amd64 build's doc comment gives the loop): without
// assembly, one gemmNN call per row.
func gemmNNTri(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) {
	if N > 0 {
		gemmNNTriRows(c, ldc, a, ai, ak, b, ldb, n, N, upper)
	}
}

// softmaxScaled4Blocks finishes no row here: attention runs
// softmaxScaled on each.
func softmaxScaled4Blocks(rows []float64, ld, n0 int, scale float64, scratch *[128]float64) int {
	return 0
}
