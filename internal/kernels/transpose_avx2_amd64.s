//go:build amd64 && gc && !purego

#include "textflag.h"

// Transpose's AVX2 kernel (transpose.go gives the contract): blocks of
// 8 source rows by 4 columns moved through registers, so that each of
// the 4 destination rows receives 8 values (a whole cache line when
// aligned) in a run. Data is only moved, never computed.

// TR4 transposes the 4×4 block whose rows are in r0-r3 into the columns
// c0-c3 (c0 = [r0[0] r1[0] r2[0] r3[0]], ...), through t0-t3: pairs of
// rows interleaved (VUNPCKLPD/VUNPCKHPD), then 128-bit halves gathered
// (VPERM2F128).
#define TR4(r0, r1, r2, r3, t0, t1, t2, t3, c0, c1, c2, c3) \
	VUNPCKLPD  r1, r0, t0; \
	VUNPCKHPD  r1, r0, t1; \
	VUNPCKLPD  r3, r2, t2; \
	VUNPCKHPD  r3, r2, t3; \
	VPERM2F128 $0x20, t2, t0, c0; \
	VPERM2F128 $0x20, t3, t1, c1; \
	VPERM2F128 $0x31, t2, t0, c2; \
	VPERM2F128 $0x31, t3, t1, c3

// func transpose8x4AVX2(dst []float64, ldd int, src []float64, lds int, n int)
//
// n blocks of 8 rows by 4 columns, block b the columns 4b..4b+3 of src's
// 8 rows (stride lds) written as the rows 4b..4b+3 of dst, 8 values each
// (stride ldd):
//
//	for b := 0; b < n; b++ {
//		for r := 0; r < 8; r++ {
//			for c := 0; c < 4; c++ {
//				dst[(4*b+c)*ldd+r] = src[r*lds+4*b+c]
//			}
//		}
//	}
//
// Rows 0-3 and 4-7 are two 4×4 transposes (TR4), whose columns are the
// first and second halves of dst's rows.
//
// Registers: SI src at the block, AX src rows 4-7, DI dst at the block,
// R8 lds*8, R9 ldd*8, R10 3*lds*8, R11 3*ldd*8, CX blocks left; Y0-Y7
// rows, Y8-Y11 pairs, Y12-Y15 and Y0-Y3 columns.
TEXT ·transpose8x4AVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ ldd+24(FP), R9
	SHLQ $3, R9
	MOVQ src_base+32(FP), SI
	MOVQ lds+56(FP), R8
	SHLQ $3, R8
	MOVQ n+64(FP), CX
	LEAQ (R8)(R8*2), R10
	LEAQ (R9)(R9*2), R11
	TESTQ CX, CX
	JZ    tr84_done

tr84_loop:
	LEAQ    (SI)(R8*4), AX
	VMOVUPD (SI), Y0
	VMOVUPD (SI)(R8*1), Y1
	VMOVUPD (SI)(R8*2), Y2
	VMOVUPD (SI)(R10*1), Y3
	VMOVUPD (AX), Y4
	VMOVUPD (AX)(R8*1), Y5
	VMOVUPD (AX)(R8*2), Y6
	VMOVUPD (AX)(R10*1), Y7
	TR4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	TR4(Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y0, Y1, Y2, Y3)
	VMOVUPD Y12, (DI)
	VMOVUPD Y0, 32(DI)
	VMOVUPD Y13, (DI)(R9*1)
	VMOVUPD Y1, 32(DI)(R9*1)
	VMOVUPD Y14, (DI)(R9*2)
	VMOVUPD Y2, 32(DI)(R9*2)
	VMOVUPD Y15, (DI)(R11*1)
	VMOVUPD Y3, 32(DI)(R11*1)
	ADDQ    $32, SI
	LEAQ    (DI)(R9*4), DI
	DECQ    CX
	JNZ     tr84_loop

tr84_done:
	VZEROUPPER
	RET
