//go:build amd64 && gc && !purego

package minigpt

// Until the assembly lands, amd64 uses the portable kernels too.

func gemmNNImpl(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int) {
	gemmNNGo(c, ldc, a, ai, ak, b, ldb, M, N, K)
}

func gemmNTImpl(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, M, N, K int) {
	gemmNTGo(c, ldc, a, lda, b, ldb, M, N, K)
}

func kernelPath() string { return "go" }
