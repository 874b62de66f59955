// gemm_pack.go owns the block sizes of the AVX2 path's packed products (gemm_pack_amd64.go), which the tests of every build straddle.

package kernels

// The blocks of the packed AVX2 product. A step of kcPack values of k
// makes a panel of B (kcPack × 12, 18 KB) that stays in L1 while every
// tile of A sweeps it, and a block of A (mcPack rows × kcPack, 144 KB)
// that stays in L2 while every panel of B sweeps it; ncPack columns of B
// are packed at a time (kcPack × ncPack, 2.3 MB, read from L3 once per
// block of A). Blocks are exact: every output's chain is unchanged.
const (
	kcPack = 192
	mcPack = 96
	ncPack = 1536
)
