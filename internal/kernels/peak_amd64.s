//go:build amd64 && gc && !purego

#include "textflag.h"

// The peak loops: as many independent fused multiply-add chains as it
// takes to cover the FMA latency on every port (latency 4 × 2 ports = 8
// chains on current cores; 12 for AVX2 and 24 for AVX-512 leave room).
// Every operand is +0, so no denormal can slow the loop down. The
// results are thrown away: only the time counts (BenchmarkPeakFMA).

// func peakFMAAVX2(n int)
//
// n rounds of 12 four-lane FMAs (96 flops):
//
//	for r := 0; r < n; r++ {
//		for i := 0; i < 12; i++ {
//			for l := 0; l < 4; l++ {
//				acc[i][l] = math.FMA(x[l], y[l], acc[i][l])
//			}
//		}
//	}
TEXT ·peakFMAAVX2(SB), NOSPLIT, $0-8
	MOVQ   n+0(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	TESTQ  CX, CX
	JLE    avx2_done

avx2_loop:
	VFMADD231PD Y12, Y13, Y0
	VFMADD231PD Y12, Y13, Y1
	VFMADD231PD Y12, Y13, Y2
	VFMADD231PD Y12, Y13, Y3
	VFMADD231PD Y12, Y13, Y4
	VFMADD231PD Y12, Y13, Y5
	VFMADD231PD Y12, Y13, Y6
	VFMADD231PD Y12, Y13, Y7
	VFMADD231PD Y12, Y13, Y8
	VFMADD231PD Y12, Y13, Y9
	VFMADD231PD Y12, Y13, Y10
	VFMADD231PD Y12, Y13, Y11
	DECQ        CX
	JNZ         avx2_loop

avx2_done:
	VZEROUPPER
	RET

// func peakFMAAVX512(n int)
//
// n rounds of 24 eight-lane FMAs (384 flops):
//
//	for r := 0; r < n; r++ {
//		for i := 0; i < 24; i++ {
//			for l := 0; l < 8; l++ {
//				acc[i][l] = math.FMA(x[l], y[l], acc[i][l])
//			}
//		}
//	}
TEXT ·peakFMAAVX512(SB), NOSPLIT, $0-8
	MOVQ   n+0(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	VPXORQ Z16, Z16, Z16
	VPXORQ Z17, Z17, Z17
	VPXORQ Z18, Z18, Z18
	VPXORQ Z19, Z19, Z19
	VPXORQ Z20, Z20, Z20
	VPXORQ Z21, Z21, Z21
	VPXORQ Z22, Z22, Z22
	VPXORQ Z23, Z23, Z23
	VPXORQ Z24, Z24, Z24
	VPXORQ Z25, Z25, Z25
	TESTQ  CX, CX
	JLE    avx512_done

avx512_loop:
	VFMADD231PD Z24, Z25, Z0
	VFMADD231PD Z24, Z25, Z1
	VFMADD231PD Z24, Z25, Z2
	VFMADD231PD Z24, Z25, Z3
	VFMADD231PD Z24, Z25, Z4
	VFMADD231PD Z24, Z25, Z5
	VFMADD231PD Z24, Z25, Z6
	VFMADD231PD Z24, Z25, Z7
	VFMADD231PD Z24, Z25, Z8
	VFMADD231PD Z24, Z25, Z9
	VFMADD231PD Z24, Z25, Z10
	VFMADD231PD Z24, Z25, Z11
	VFMADD231PD Z24, Z25, Z12
	VFMADD231PD Z24, Z25, Z13
	VFMADD231PD Z24, Z25, Z14
	VFMADD231PD Z24, Z25, Z15
	VFMADD231PD Z24, Z25, Z16
	VFMADD231PD Z24, Z25, Z17
	VFMADD231PD Z24, Z25, Z18
	VFMADD231PD Z24, Z25, Z19
	VFMADD231PD Z24, Z25, Z20
	VFMADD231PD Z24, Z25, Z21
	VFMADD231PD Z24, Z25, Z22
	VFMADD231PD Z24, Z25, Z23
	DECQ        CX
	JNZ         avx512_loop

avx512_done:
	VZEROUPPER
	RET
