// Package kernels is minigpt's numerical contract: the matrix products,
// the vector loops, LayerNorm's loops, the softmax family and the
// deterministic elementary functions, each with one order of operations
// that every implementation follows, so that results are identical to
// the bit on every path, at any number of goroutines, on amd64 and arm64.
// It imports nothing of the module; the model's layers call it.
//
// # Entry points, Go twins and hooks
//
// Every kernel has one exported entry point (GemmNN, ReLU,
// LayerNormStats, SoftmaxScaled, ...) and one Go twin named after it
// (gemmNNGo, reluGo, lnStatsGo, softmaxScaledGo, ...), always compiled:
// the reference, which calls only other Go twins. Kernels with
// assembly also have one hook (gemmNNAsm, reluAsm, ...), and every hook
// follows one contract:
//
//	A hook does a leading part of the work, the first n items (rows of C,
//	elements, rows of a LayerNorm, columns of its parameter gradients), with
//	the Go twin's bits, leaves the other items untouched, and returns n.
//	The entry point runs the Go twin on the items from n on.
//
// A reduction's hook continues the accumulators it is handed (rowMax's
// maximum, SumSquares8's eight chains) over the items it takes. On amd64
// (gemm_amd64.go, gemm_pack_amd64.go, vec_amd64.go, layernorm_amd64.go,
// softmax_amd64.go, built with amd64 && gc && !purego) the hooks block
// the work for the AVX-512 or AVX2 kernels (on AVX2, copying the larger
// products' operands into packed panels first), check the bounds the
// assembly trusts, and may finish what a kernel hands back through other
// entry points (the epilogue of the AVX2 GEMMs' edges and of the
// unpacked AVX2 kernels, the softmax steps after the AVX-512 kernel
// stopped);
// elsewhere (impl_generic.go) every hook returns 0. A fused epilogue is
// an argument of its entry point (GemmNNSet's Epilogue), which the Go twin
// applies after the product, so the caller never learns whether the
// assembly fused it. Every assembly stub's doc comment quotes the Go loop
// it computes.
//
// # The fixed orders
//
// Every sum has one fixed order, stated here once; every product that
// feeds a sum is a math.FMA or explicitly rounded with float64(x*y), so
// that no compiler may fuse differently on another architecture.
//
//   - GemmNN: an output is a chain of fused multiply-adds over
//     k = 0, 1, ..., K-1 in ascending order, starting from the value in C
//     (GemmNN), or from the bias or +0 (GemmNNSet). Blocking over k (the
//     assembly's blocks of 128 steps, or a caller's consecutive calls over
//     ranges of k) is exact: the chain continues from the value stored in
//     C. GemmNNTri continues such chains over a triangle of keys, k
//     ascending.
//   - GemmNT and Dot: an output is a dot product over contiguous memory in
//     eight interleaved lanes (element k in lane k%8, each lane a chain of
//     fused multiply-adds from +0, the ragged tail continuing the same
//     lanes), reduced by the fixed tree ((s0+s4)+(s2+s6)) +
//     ((s1+s5)+(s3+s7)) and added to C once (to +0 for GemmNTSet). Eight
//     lanes are one AVX-512 register or two AVX2 registers, so the vector
//     code follows the order naturally.
//   - LayerNormStats: a row's mean is its sum, a chain of additions in
//     column order from +0, divided by C; its variance a chain of
//     math.FMA(d, d, v) in column order from +0 with d = x - mean; rstd is
//     1/√(v/C + ε). LayerNormRowSums: Σ dxhat as a chain of additions and
//     Σ dxhat·xhat as a chain of fused multiply-adds, both in column order
//     from +0. LayerNormParamGrads: a column's weight gradient is a chain
//     of fused multiply-adds over the rows in order and its bias gradient
//     a chain of additions, both from the value already there.
//   - Softmax and its family: the maximum is Go's max (exact, so its
//     order is free; the vector maximum is taken only when there is no
//     NaN and the maximum is not zero, the cases where its answer is Go's);
//     the exponentials are independent, one Exp each; the normaliser is
//     SumInOrder, one chain of additions in index order from +0; the
//     divisions are independent.
//   - Exp and Log: the fdlibm algorithms with every product rounded on its
//     own, the polynomials evaluated in one fixed order; within one ulp.
//     PowInt multiplies by repeated squaring, low bits first.
//   - SumSquares: one chain of math.FMA(x, x, s) in index order from +0.
//     SumSquares8: eight lanes as Dot's (element i in lane i%8), reduced by
//     ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)).
//   - Normal: Marsaglia's polar method, every operation exactly rounded
//     and Log for the logarithm; each accepted pair gives u's number, then
//     v's.
//   - ReLU, ReLUMask, Add, Scale, SoftmaxBackward, Adam and Transpose form
//     no sums: every element is independent, every product rounded on its
//     own.
//
// Vectorising across independent outputs never changes an output's
// chain: a lane (or a scalar register of a Go twin) holds one output's
// chain and does that chain's operations in that chain's order. That is
// why the Go twins run four LayerNorm rows (or columns) side by side and
// the assembly 8, 4, 32 or 16, one chain to each: every chain keeps its
// order, and the side-by-side chains only overlap their latencies.
//
// # Paths
//
// Impls lists the paths this machine runs: "go" (the Go twins) always,
// "avx2" and "avx512" when CPUID and XGETBV (cpu_amd64.go) report AVX2
// with FMA, or AVX-512 Foundation, and the OS saves their registers. The
// path in use (Path) is the best of them, capped once at start-up by the
// environment variable MINIGPT_KERNELS (go, avx2 or avx512) so that CI can
// run the slower paths on a fast machine; SetPath switches it for tests
// and benchmarks. The build tag purego, another architecture or gccgo
// leaves only the Go twins. Peaks lists the peak loops that measure a
// core's floating-point peak (BenchmarkPeakFMA).
//
// # Files
//
// gemm.go, vec.go, transpose.go, layernorm.go, softmax.go and math.go hold
// the entry points and Go twins; gemm_amd64.go, gemm_pack_amd64.go (the
// AVX2 path's packed products, whose block sizes gemm_pack.go holds),
// vec_amd64.go (with Transpose's), layernorm_amd64.go and
// softmax_amd64.go the hooks and stubs, and the .s files
// (gemm_avx512_amd64.s, gemm_avx2_amd64.s, gemm_pack_avx2_amd64.s,
// gemm_tri_amd64.s, vec_avx512_amd64.s, vec_avx2_amd64.s,
// layernorm_avx512_amd64.s, layernorm_avx2_amd64.s,
// layernorm_stats_amd64.s, softmax_avx512_amd64.s, softmax_avx2_amd64.s,
// transpose_avx512_amd64.s, transpose_avx2_amd64.s) the kernels; impl.go,
// impl_amd64.go and impl_generic.go the paths; cpu_amd64.go and
// cpu_amd64.s the CPU detection; peak_amd64.s the peak loops.
package kernels
