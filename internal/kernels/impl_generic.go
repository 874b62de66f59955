//go:build !amd64 || !gc || purego

// impl_generic.go owns the hooks of a build without assembly: each does nothing, and every kernel runs its Go twin.

package kernels

// level is always the Go path here.
var level = levelGo

// Impls lists the one kernel path of this build: "go", the Go twins.
func Impls() []string { return []string{"go"} }

// Peaks lists no peak loop: there is no assembly.
func Peaks() []Peak { return nil }

// stridedAFast is StridedAFast: the Go twins read A through its strides
// as they come.
func stridedAFast() bool { return false }

func gemmNNAsm(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) int {
	return 0
}

func gemmNNSetAsm(c []float64, ldc int, bias, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) int {
	return 0
}

func gemmNTAsm(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) int {
	return 0
}

func gemmNTSetAsm(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) int {
	return 0
}

func gemmNNTriAsm(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper bool) int {
	return 0
}

func reluAsm(out, in []float64) int                                         { return 0 }
func reluMaskAsm(d, inp []float64) int                                      { return 0 }
func addAsm(out, a, b []float64) int                                        { return 0 }
func softmaxBackwardAsm(dp, p []float64, sum, scale float64) int            { return 0 }
func adamAsm(params, grads, m, v []float64, k *AdamCoefficients) int        { return 0 }
func sumSquares8Asm(x []float64, s *[8]float64) int                         { return 0 }
func transposeAsm(dst, src []float64, R, W, o0, o1 int) int                 { return 0 }
func expShiftedAsm(dst, src []float64, shift float64) int                   { return 0 }
func maxAsm(src []float64, m *float64) int                                  { return 0 }
func divAsm(x []float64, d float64) int                                     { return 0 }
func softmaxScaledAsm(row []float64, scale float64) int                     { return 0 }
func softmaxScaledRowsAsm(rows []float64, ld, n, n0 int, scale float64) int { return 0 }

func lnStatsAsm(mean, rstd, inp []float64, N, C int, eps float64) int { return 0 }

func lnApplyAsm(out, inp, weight, bias, mean, rstd []float64, N, C int) int { return 0 }

func lnRowSumsAsm(s1, s2, inp, dout, weight, mean, rstd []float64, N, C int) int { return 0 }

func lnInputGradAsm(dinp, src, inp, dout, weight, mean, rstd, s1, s2 []float64, N, C int) int {
	return 0
}

func lnParamGradsAsm(dweight, dbias, dout, inp, mean, rstd []float64, N, W, ld int) int { return 0 }
