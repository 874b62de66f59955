//go:build amd64 && gc && !purego

#include "textflag.h"

// Transpose's AVX-512 kernel (transpose.go gives the contract): 8×8
// blocks moved through registers. Data is only moved, never computed.

// func transpose8AVX512(dst []float64, ldd int, src []float64, lds int, n int)
//
// n blocks of 8×8, block b the columns 8b..8b+7 of src's 8 rows (stride
// lds) written as the rows 8b..8b+7 of dst, 8 values each (stride ldd):
//
//	for b := 0; b < n; b++ {
//		for r := 0; r < 8; r++ {
//			for c := 0; c < 8; c++ {
//				dst[(8*b+c)*ldd+r] = src[r*lds+8*b+c]
//			}
//		}
//	}
//
// Each block is 8 loads, a transpose in registers and 8 stores: pairs of
// rows interleaved (VUNPCKLPD/VUNPCKHPD), then 128-bit lanes gathered
// twice (VSHUFF64X2). Data is only moved, so the bits are src's.
//
// Registers: SI src at the block, DI dst at the block, R8 lds*8, R9
// ldd*8, R10 3*lds*8, R11 3*ldd*8, CX blocks left; Z0-Z7 rows, Z8-Z15
// pairs, Z16-Z23 quarters, Z24-Z31 columns.
TEXT ·transpose8AVX512(SB), NOSPLIT, $0-72
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
	JZ    tr8_done

tr8_loop:
	MOVQ    SI, AX
	VMOVUPD (AX), Z0
	VMOVUPD (AX)(R8*1), Z1
	VMOVUPD (AX)(R8*2), Z2
	VMOVUPD (AX)(R10*1), Z3
	LEAQ    (AX)(R8*4), AX
	VMOVUPD (AX), Z4
	VMOVUPD (AX)(R8*1), Z5
	VMOVUPD (AX)(R8*2), Z6
	VMOVUPD (AX)(R10*1), Z7

	// Z8 = [a00 a10 a02 a12 a04 a14 a06 a16], Z9 = [a01 a11 a03 a13 ...],
	// and so on for rows 2-3, 4-5, 6-7.
	VUNPCKLPD Z1, Z0, Z8
	VUNPCKHPD Z1, Z0, Z9
	VUNPCKLPD Z3, Z2, Z10
	VUNPCKHPD Z3, Z2, Z11
	VUNPCKLPD Z5, Z4, Z12
	VUNPCKHPD Z5, Z4, Z13
	VUNPCKLPD Z7, Z6, Z14
	VUNPCKHPD Z7, Z6, Z15

	// Z16 = [a00 a10 a04 a14 a20 a30 a24 a34] (lanes 0, 2 of Z8, then of
	// Z10), Z17 = [a02 a12 a06 a16 a22 a32 a26 a36] (lanes 1, 3), ...
	VSHUFF64X2 $0x88, Z10, Z8, Z16
	VSHUFF64X2 $0xdd, Z10, Z8, Z17
	VSHUFF64X2 $0x88, Z11, Z9, Z18
	VSHUFF64X2 $0xdd, Z11, Z9, Z19
	VSHUFF64X2 $0x88, Z14, Z12, Z20
	VSHUFF64X2 $0xdd, Z14, Z12, Z21
	VSHUFF64X2 $0x88, Z15, Z13, Z22
	VSHUFF64X2 $0xdd, Z15, Z13, Z23

	// Column c of the block: Z24 = [a00 a10 a20 a30 a40 a50 a60 a70]
	// (lanes 0, 2 of Z16, then of Z20), Z25 = column 4 (lanes 1, 3), ...
	VSHUFF64X2 $0x88, Z20, Z16, Z24
	VSHUFF64X2 $0xdd, Z20, Z16, Z25
	VSHUFF64X2 $0x88, Z21, Z17, Z26
	VSHUFF64X2 $0xdd, Z21, Z17, Z27
	VSHUFF64X2 $0x88, Z22, Z18, Z28
	VSHUFF64X2 $0xdd, Z22, Z18, Z29
	VSHUFF64X2 $0x88, Z23, Z19, Z30
	VSHUFF64X2 $0xdd, Z23, Z19, Z31

	// Columns 0, 2, 1, 3 go to dst rows 0-3, columns 4, 6, 5, 7 to 4-7.
	MOVQ    DI, AX
	VMOVUPD Z24, (AX)
	VMOVUPD Z28, (AX)(R9*1)
	VMOVUPD Z26, (AX)(R9*2)
	VMOVUPD Z30, (AX)(R11*1)
	LEAQ    (AX)(R9*4), AX
	VMOVUPD Z25, (AX)
	VMOVUPD Z29, (AX)(R9*1)
	VMOVUPD Z27, (AX)(R9*2)
	VMOVUPD Z31, (AX)(R11*1)

	ADDQ $64, SI
	LEAQ (DI)(R9*8), DI
	DECQ CX
	JNZ  tr8_loop

tr8_done:
	VZEROUPPER
	RET
