//go:build amd64 && gc && !purego

#include "textflag.h"

// GemmNNTri's kernels (gemm_amd64.go): the triangle of short chains
// that a block of attention rows leaves after its shared product, in one
// call instead of one gemmNN call per row. Every output is the same
// k-ascending chain of fused multiply-adds, from the value in C, as the
// per-row calls computed, so the bits are theirs. The caller guarantees
// n >= 2, N >= 1, strides >= 0 and that every element addressed below is
// inside its slice; partial vectors are loaded and stored under masks,
// so the kernels never touch memory outside the rows and columns of the
// shape (masked-off lanes neither fault nor store).
//
// Both kernels take the rows one at a time: row r's keys are [lo, lo+cnt)
// with lo = 1, cnt = r (lower) or lo = r, cnt = n-1-r (upper); a row
// without keys is skipped.
//
// Registers: R8 ldc*8, R9 ai*8, R10 ak*8, R11 ldb*8, R12 the row r, R13
// its key count; CX c at the column block of row r, AX a at (r, lo), BX b
// at (lo, column block); SI a at k, DI b at k, DX k countdown; R14
// columns left.

// triMask16<>+2n is the 16-bit opmask of the lanes 0..n-1 (n = 0..8).
DATA triMask16<>+0x00(SB)/2, $0x00
DATA triMask16<>+0x02(SB)/2, $0x01
DATA triMask16<>+0x04(SB)/2, $0x03
DATA triMask16<>+0x06(SB)/2, $0x07
DATA triMask16<>+0x08(SB)/2, $0x0f
DATA triMask16<>+0x0a(SB)/2, $0x1f
DATA triMask16<>+0x0c(SB)/2, $0x3f
DATA triMask16<>+0x0e(SB)/2, $0x7f
DATA triMask16<>+0x10(SB)/2, $0xff
GLOBL triMask16<>(SB), RODATA|NOPTR, $18

// triMask4<>+32-8n, 32 bytes long, is the VMASKMOVPD mask of n active
// lanes (n = 0..4).
DATA triMask4<>+0x00(SB)/8, $-1
DATA triMask4<>+0x08(SB)/8, $-1
DATA triMask4<>+0x10(SB)/8, $-1
DATA triMask4<>+0x18(SB)/8, $-1
DATA triMask4<>+0x20(SB)/8, $0
DATA triMask4<>+0x28(SB)/8, $0
DATA triMask4<>+0x30(SB)/8, $0
DATA triMask4<>+0x38(SB)/8, $0
GLOBL triMask4<>(SB), RODATA|NOPTR, $64

// func gemmNNTriAVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)
//
// For each row, columns go in blocks of 32 (four ZMM), then one of 16,
// then 8, then a masked block of 1-7, each a k-ascending loop of broadcast A times
// vector B.
TEXT ·gemmNNTriAVX512(SB), NOSPLIT, $0-128
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	MOVQ ai+56(FP), R9
	SHLQ $3, R9
	MOVQ ak+64(FP), R10
	SHLQ $3, R10
	MOVQ ldb+96(FP), R11
	SHLQ $3, R11
	XORQ R12, R12

triz_row:
	CMPQ R12, n+104(FP)
	JGE  triz_done

	// lo in SI and the key count in R13: lower rows see keys 1..r,
	// upper rows keys r..n-2.
	MOVQ  upper+120(FP), DX
	TESTQ DX, DX
	JNZ   triz_upper
	MOVQ  $1, SI
	MOVQ  R12, R13
	JMP   triz_keys

triz_upper:
	MOVQ R12, SI
	MOVQ n+104(FP), R13
	SUBQ R12, R13
	DECQ R13

triz_keys:
	TESTQ R13, R13
	JLE   triz_next
	MOVQ  R12, CX
	IMULQ R8, CX
	ADDQ  c_base+0(FP), CX
	MOVQ  R12, AX
	IMULQ R9, AX
	MOVQ  SI, DX
	IMULQ R10, DX
	ADDQ  DX, AX
	ADDQ  a_base+32(FP), AX
	MOVQ  SI, BX
	IMULQ R11, BX
	ADDQ  b_base+72(FP), BX
	MOVQ  N+112(FP), R14

triz_32:
	CMPQ    R14, $32
	JLT     triz_16
	VMOVUPD (CX), Z0
	VMOVUPD 64(CX), Z1
	VMOVUPD 128(CX), Z2
	VMOVUPD 192(CX), Z3
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    R13, DX

triz_32_k:
	VBROADCASTSD (SI), Z20
	VFMADD231PD  (DI), Z20, Z0
	VFMADD231PD  64(DI), Z20, Z1
	VFMADD231PD  128(DI), Z20, Z2
	VFMADD231PD  192(DI), Z20, Z3
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triz_32_k

	VMOVUPD Z0, (CX)
	VMOVUPD Z1, 64(CX)
	VMOVUPD Z2, 128(CX)
	VMOVUPD Z3, 192(CX)
	ADDQ    $256, CX
	ADDQ    $256, BX
	SUBQ    $32, R14
	JMP     triz_32

triz_16:
	CMPQ    R14, $16
	JLT     triz_8
	VMOVUPD (CX), Z0
	VMOVUPD 64(CX), Z1
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    R13, DX

triz_16_k:
	VBROADCASTSD (SI), Z20
	VFMADD231PD  (DI), Z20, Z0
	VFMADD231PD  64(DI), Z20, Z1
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triz_16_k

	VMOVUPD Z0, (CX)
	VMOVUPD Z1, 64(CX)
	ADDQ    $128, CX
	ADDQ    $128, BX
	SUBQ    $16, R14

triz_8:
	TESTQ R14, R14
	JZ    triz_next
	LEAQ  triMask16<>(SB), SI
	MOVQ  R14, DX
	CMPQ  DX, $8
	JLE   triz_mask
	MOVQ  $8, DX

triz_mask:
	KMOVW     (SI)(DX*2), K1
	VMOVUPD.Z (CX), K1, Z0
	MOVQ      AX, SI
	MOVQ      BX, DI
	MOVQ      R13, DX

triz_8_k:
	VMOVUPD.Z    (DI), K1, Z16
	VBROADCASTSD (SI), Z20
	VFMADD231PD  Z16, Z20, Z0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triz_8_k

	VMOVUPD Z0, K1, (CX)
	ADDQ    $64, CX
	ADDQ    $64, BX
	SUBQ    $8, R14
	JG      triz_8

triz_next:
	INCQ R12
	JMP  triz_row

triz_done:
	VZEROUPPER
	RET

// func gemmNNTriAVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, n, N int, upper int)
//
// For each row, columns go in blocks of 16 (four YMM), then one of 8,
// then 4, then a masked block of 1-3, each a k-ascending loop of broadcast A times
// vector B. Y14 holds the tail mask.
TEXT ·gemmNNTriAVX2(SB), NOSPLIT, $0-128
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	MOVQ ai+56(FP), R9
	SHLQ $3, R9
	MOVQ ak+64(FP), R10
	SHLQ $3, R10
	MOVQ ldb+96(FP), R11
	SHLQ $3, R11
	XORQ R12, R12

triy_row:
	CMPQ R12, n+104(FP)
	JGE  triy_done
	MOVQ  upper+120(FP), DX
	TESTQ DX, DX
	JNZ   triy_upper
	MOVQ  $1, SI
	MOVQ  R12, R13
	JMP   triy_keys

triy_upper:
	MOVQ R12, SI
	MOVQ n+104(FP), R13
	SUBQ R12, R13
	DECQ R13

triy_keys:
	TESTQ R13, R13
	JLE   triy_next
	MOVQ  R12, CX
	IMULQ R8, CX
	ADDQ  c_base+0(FP), CX
	MOVQ  R12, AX
	IMULQ R9, AX
	MOVQ  SI, DX
	IMULQ R10, DX
	ADDQ  DX, AX
	ADDQ  a_base+32(FP), AX
	MOVQ  SI, BX
	IMULQ R11, BX
	ADDQ  b_base+72(FP), BX
	MOVQ  N+112(FP), R14

triy_16:
	CMPQ    R14, $16
	JLT     triy_8
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	VMOVUPD 64(CX), Y2
	VMOVUPD 96(CX), Y3
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    R13, DX

triy_16_k:
	VBROADCASTSD (SI), Y15
	VFMADD231PD  (DI), Y15, Y0
	VFMADD231PD  32(DI), Y15, Y1
	VFMADD231PD  64(DI), Y15, Y2
	VFMADD231PD  96(DI), Y15, Y3
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triy_16_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, 32(CX)
	VMOVUPD Y2, 64(CX)
	VMOVUPD Y3, 96(CX)
	ADDQ    $128, CX
	ADDQ    $128, BX
	SUBQ    $16, R14
	JMP     triy_16

triy_8:
	CMPQ    R14, $8
	JLT     triy_4
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    R13, DX

triy_8_k:
	VBROADCASTSD (SI), Y15
	VFMADD231PD  (DI), Y15, Y0
	VFMADD231PD  32(DI), Y15, Y1
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triy_8_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, 32(CX)
	ADDQ    $64, CX
	ADDQ    $64, BX
	SUBQ    $8, R14

triy_4:
	CMPQ    R14, $4
	JLT     triy_m
	VMOVUPD (CX), Y0
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    R13, DX

triy_4_k:
	VBROADCASTSD (SI), Y15
	VFMADD231PD  (DI), Y15, Y0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triy_4_k

	VMOVUPD Y0, (CX)
	ADDQ    $32, CX
	ADDQ    $32, BX
	SUBQ    $4, R14

triy_m:
	TESTQ      R14, R14
	JZ         triy_next
	LEAQ       triMask4<>+32(SB), SI
	MOVQ       R14, DX
	SHLQ       $3, DX
	SUBQ       DX, SI
	VMOVUPD    (SI), Y14
	VMASKMOVPD (CX), Y14, Y0
	MOVQ       AX, SI
	MOVQ       BX, DI
	MOVQ       R13, DX

triy_m_k:
	VMASKMOVPD   (DI), Y14, Y12
	VBROADCASTSD (SI), Y15
	VFMADD231PD  Y12, Y15, Y0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          triy_m_k

	VMASKMOVPD Y0, Y14, (CX)

triy_next:
	INCQ R12
	JMP  triy_row

triy_done:
	VZEROUPPER
	RET
