//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX2+FMA kernels for gemmNN and gemmNT (see doc.go for the order
// every output must follow). Callers (gemm_amd64.go) guarantee
// N >= 1, K >= 1 for gemmNN (its k loops run at least once), K >= 0 for
// gemmNT (K = 0 adds dot8's +0 to every output, as the Go kernel does),
// and that every element addressed below is inside its slice; the
// kernels never load or store outside the rows and columns of their
// shape (partial vectors use VMASKMOVPD).

// tailMask<>+64-8n, 32 bytes long, is a mask of n active lanes (n = 0..4);
// the 64 bytes from tailMask<>+64-8r are the 8-lane mask of a ragged tail
// of r elements, and the 64 bytes 128 further on hold -0 in exactly the
// inactive lanes of that mask (see NT_TAILA).
DATA tailMask<>+0x00(SB)/8, $-1
DATA tailMask<>+0x08(SB)/8, $-1
DATA tailMask<>+0x10(SB)/8, $-1
DATA tailMask<>+0x18(SB)/8, $-1
DATA tailMask<>+0x20(SB)/8, $-1
DATA tailMask<>+0x28(SB)/8, $-1
DATA tailMask<>+0x30(SB)/8, $-1
DATA tailMask<>+0x38(SB)/8, $-1
DATA tailMask<>+0x40(SB)/8, $0
DATA tailMask<>+0x48(SB)/8, $0
DATA tailMask<>+0x50(SB)/8, $0
DATA tailMask<>+0x58(SB)/8, $0
DATA tailMask<>+0x60(SB)/8, $0
DATA tailMask<>+0x68(SB)/8, $0
DATA tailMask<>+0x70(SB)/8, $0
DATA tailMask<>+0x78(SB)/8, $0
DATA tailMask<>+0x80(SB)/8, $0
DATA tailMask<>+0x88(SB)/8, $0
DATA tailMask<>+0x90(SB)/8, $0
DATA tailMask<>+0x98(SB)/8, $0
DATA tailMask<>+0xa0(SB)/8, $0
DATA tailMask<>+0xa8(SB)/8, $0
DATA tailMask<>+0xb0(SB)/8, $0
DATA tailMask<>+0xb8(SB)/8, $0
DATA tailMask<>+0xc0(SB)/8, $0x8000000000000000
DATA tailMask<>+0xc8(SB)/8, $0x8000000000000000
DATA tailMask<>+0xd0(SB)/8, $0x8000000000000000
DATA tailMask<>+0xd8(SB)/8, $0x8000000000000000
DATA tailMask<>+0xe0(SB)/8, $0x8000000000000000
DATA tailMask<>+0xe8(SB)/8, $0x8000000000000000
DATA tailMask<>+0xf0(SB)/8, $0x8000000000000000
DATA tailMask<>+0xf8(SB)/8, $0x8000000000000000
GLOBL tailMask<>(SB), RODATA|NOPTR, $256

// ---------------------------------------------------------------------
// gemmNN

// One k step of a 4-row block: broadcast a[i*ai+k*ak] for rows 0-3 and
// multiply-add it into that row's accumulators. v0.. are the B vectors.
#define NN_ROW3(addr, v0, v1, v2, x0, x1, x2) \
	VBROADCASTSD addr, Y15; \
	VFMADD231PD  v0, Y15, x0; \
	VFMADD231PD  v1, Y15, x1; \
	VFMADD231PD  v2, Y15, x2

#define NN_ROW2(addr, v0, v1, x0, x1) \
	VBROADCASTSD addr, Y15; \
	VFMADD231PD  v0, Y15, x0; \
	VFMADD231PD  v1, Y15, x1

#define NN_ROW1(addr, v0, x0) \
	VBROADCASTSD addr, Y15; \
	VFMADD231PD  v0, Y15, x0

// func gemmNN4AVX2(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int)
//
// Four rows of gemmNN, all N columns, from initial values x0 that are
// C's own (mode 0), the row bias[:N] for every row (mode 1) or +0
// (mode 2):
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			x := x0(i, j) // c[i*ldc+j], bias[j] or 0
//			for k := 0; k < K; k++ {
//				x = math.FMA(a[i*ai+k*ak], b[k*ldb+j], x)
//			}
//			c[i*ldc+j] = x
//		}
//	}
//
// Modes 1 and 2 fold the layer's bias (or the clearing of C) into the
// product: the chain starts from the same value that copying the bias
// into C (or clearing C to +0) would have stored, so the bits are those
// of setting C first, without the pass over C that would cost.
//
// Columns go in blocks of 12 (three YMM per row, 12 accumulators), then
// 8, then 4, then a masked block of 1-3; a block of 16 is done as 8+8 so
// that widths 64 and 256 never end with a lone 4. For each block the
// accumulators are loaded (from C, the bias or +0), the k loop runs K
// fused multiply-adds per lane in ascending k (broadcast A, vector of
// B), and C is stored.
//
// Registers: AX a (k=0), SI a at k, R9 ai*8, R12 3*ai*8, R10 ak*8;
// BX b at the block (k=0), DI b at k, R11 ldb*8; CX c at the block,
// R8 ldc*8, R13 3*ldc*8; R14 bias at the block; DX k countdown;
// N+104(FP) columns left, mode+144(FP) the mode; Y0-Y11 accumulators,
// Y12-Y14 B, Y15 broadcast A.
TEXT ·gemmNN4AVX2(SB), NOSPLIT, $0-152
	MOVQ c_base+0(FP), CX
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R13
	MOVQ a_base+32(FP), AX
	MOVQ ai+56(FP), R9
	SHLQ $3, R9
	LEAQ (R9)(R9*2), R12
	MOVQ ak+64(FP), R10
	SHLQ $3, R10
	MOVQ b_base+72(FP), BX
	MOVQ ldb+96(FP), R11
	SHLQ $3, R11
	MOVQ bias_base+120(FP), R14

nn4_cols:
	MOVQ N+104(FP), DX
	CMPQ DX, $16
	JEQ  nn4_8
	CMPQ DX, $12
	JLT  nn4_8

	// 12 columns.
	CMPQ    mode+144(FP), $1
	JEQ     nn4_12_bias
	JGT     nn4_12_zero
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	VMOVUPD 64(CX), Y2
	VMOVUPD (CX)(R8*1), Y3
	VMOVUPD 32(CX)(R8*1), Y4
	VMOVUPD 64(CX)(R8*1), Y5
	VMOVUPD (CX)(R8*2), Y6
	VMOVUPD 32(CX)(R8*2), Y7
	VMOVUPD 64(CX)(R8*2), Y8
	VMOVUPD (CX)(R13*1), Y9
	VMOVUPD 32(CX)(R13*1), Y10
	VMOVUPD 64(CX)(R13*1), Y11
	JMP     nn4_12_init

nn4_12_bias:
	VMOVUPD (R14), Y0
	VMOVUPD 32(R14), Y1
	VMOVUPD 64(R14), Y2
	VMOVAPD Y0, Y3
	VMOVAPD Y1, Y4
	VMOVAPD Y2, Y5
	VMOVAPD Y0, Y6
	VMOVAPD Y1, Y7
	VMOVAPD Y2, Y8
	VMOVAPD Y0, Y9
	VMOVAPD Y1, Y10
	VMOVAPD Y2, Y11
	JMP     nn4_12_init

nn4_12_zero:
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

nn4_12_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+112(FP), DX

nn4_12_k:
	VMOVUPD (DI), Y12
	VMOVUPD 32(DI), Y13
	VMOVUPD 64(DI), Y14
	NN_ROW3((SI), Y12, Y13, Y14, Y0, Y1, Y2)
	NN_ROW3((SI)(R9*1), Y12, Y13, Y14, Y3, Y4, Y5)
	NN_ROW3((SI)(R9*2), Y12, Y13, Y14, Y6, Y7, Y8)
	NN_ROW3((SI)(R12*1), Y12, Y13, Y14, Y9, Y10, Y11)
	ADDQ    R10, SI
	ADDQ    R11, DI
	DECQ    DX
	JNZ     nn4_12_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, 32(CX)
	VMOVUPD Y2, 64(CX)
	VMOVUPD Y3, (CX)(R8*1)
	VMOVUPD Y4, 32(CX)(R8*1)
	VMOVUPD Y5, 64(CX)(R8*1)
	VMOVUPD Y6, (CX)(R8*2)
	VMOVUPD Y7, 32(CX)(R8*2)
	VMOVUPD Y8, 64(CX)(R8*2)
	VMOVUPD Y9, (CX)(R13*1)
	VMOVUPD Y10, 32(CX)(R13*1)
	VMOVUPD Y11, 64(CX)(R13*1)
	ADDQ    $96, CX
	ADDQ    $96, BX
	ADDQ    $96, R14
	SUBQ    $12, N+104(FP)
	JMP     nn4_cols

nn4_8:
	CMPQ DX, $8
	JLT  nn4_4

	// 8 columns.
	CMPQ    mode+144(FP), $1
	JEQ     nn4_8_bias
	JGT     nn4_8_zero
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	VMOVUPD (CX)(R8*1), Y2
	VMOVUPD 32(CX)(R8*1), Y3
	VMOVUPD (CX)(R8*2), Y4
	VMOVUPD 32(CX)(R8*2), Y5
	VMOVUPD (CX)(R13*1), Y6
	VMOVUPD 32(CX)(R13*1), Y7
	JMP     nn4_8_init

nn4_8_bias:
	VMOVUPD (R14), Y0
	VMOVUPD 32(R14), Y1
	VMOVAPD Y0, Y2
	VMOVAPD Y1, Y3
	VMOVAPD Y0, Y4
	VMOVAPD Y1, Y5
	VMOVAPD Y0, Y6
	VMOVAPD Y1, Y7
	JMP     nn4_8_init

nn4_8_zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

nn4_8_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+112(FP), DX

nn4_8_k:
	VMOVUPD (DI), Y12
	VMOVUPD 32(DI), Y13
	NN_ROW2((SI), Y12, Y13, Y0, Y1)
	NN_ROW2((SI)(R9*1), Y12, Y13, Y2, Y3)
	NN_ROW2((SI)(R9*2), Y12, Y13, Y4, Y5)
	NN_ROW2((SI)(R12*1), Y12, Y13, Y6, Y7)
	ADDQ    R10, SI
	ADDQ    R11, DI
	DECQ    DX
	JNZ     nn4_8_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, 32(CX)
	VMOVUPD Y2, (CX)(R8*1)
	VMOVUPD Y3, 32(CX)(R8*1)
	VMOVUPD Y4, (CX)(R8*2)
	VMOVUPD Y5, 32(CX)(R8*2)
	VMOVUPD Y6, (CX)(R13*1)
	VMOVUPD Y7, 32(CX)(R13*1)
	ADDQ    $64, CX
	ADDQ    $64, BX
	ADDQ    $64, R14
	SUBQ    $8, N+104(FP)
	JMP     nn4_cols

nn4_4:
	TESTQ DX, DX
	JZ    nn4_done
	CMPQ  DX, $4
	JLT   nn4_mask

	// 4 columns.
	CMPQ    mode+144(FP), $1
	JEQ     nn4_4_bias
	JGT     nn4_4_zero
	VMOVUPD (CX), Y0
	VMOVUPD (CX)(R8*1), Y1
	VMOVUPD (CX)(R8*2), Y2
	VMOVUPD (CX)(R13*1), Y3
	JMP     nn4_4_init

nn4_4_bias:
	VMOVUPD (R14), Y0
	VMOVAPD Y0, Y1
	VMOVAPD Y0, Y2
	VMOVAPD Y0, Y3
	JMP     nn4_4_init

nn4_4_zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

nn4_4_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+112(FP), DX

nn4_4_k:
	VMOVUPD (DI), Y12
	NN_ROW1((SI), Y12, Y0)
	NN_ROW1((SI)(R9*1), Y12, Y1)
	NN_ROW1((SI)(R9*2), Y12, Y2)
	NN_ROW1((SI)(R12*1), Y12, Y3)
	ADDQ    R10, SI
	ADDQ    R11, DI
	DECQ    DX
	JNZ     nn4_4_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, (CX)(R8*1)
	VMOVUPD Y2, (CX)(R8*2)
	VMOVUPD Y3, (CX)(R13*1)
	ADDQ    $32, CX
	ADDQ    $32, BX
	ADDQ    $32, R14
	SUBQ    $4, N+104(FP)
	JMP     nn4_cols

nn4_mask:
	// 1-3 columns: Y14 holds the lane mask for loads and stores.
	LEAQ       tailMask<>+64(SB), SI
	SHLQ       $3, DX
	SUBQ       DX, SI
	VMOVUPD    (SI), Y14
	CMPQ       mode+144(FP), $1
	JEQ        nn4_mask_bias
	JGT        nn4_mask_zero
	VMASKMOVPD (CX), Y14, Y0
	VMASKMOVPD (CX)(R8*1), Y14, Y1
	VMASKMOVPD (CX)(R8*2), Y14, Y2
	VMASKMOVPD (CX)(R13*1), Y14, Y3
	JMP        nn4_mask_init

nn4_mask_bias:
	VMASKMOVPD (R14), Y14, Y0
	VMOVAPD    Y0, Y1
	VMOVAPD    Y0, Y2
	VMOVAPD    Y0, Y3
	JMP        nn4_mask_init

nn4_mask_zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

nn4_mask_init:
	MOVQ       AX, SI
	MOVQ       BX, DI
	MOVQ       K+112(FP), DX

nn4_mask_k:
	VMASKMOVPD (DI), Y14, Y12
	NN_ROW1((SI), Y12, Y0)
	NN_ROW1((SI)(R9*1), Y12, Y1)
	NN_ROW1((SI)(R9*2), Y12, Y2)
	NN_ROW1((SI)(R12*1), Y12, Y3)
	ADDQ       R10, SI
	ADDQ       R11, DI
	DECQ       DX
	JNZ        nn4_mask_k

	VMASKMOVPD Y0, Y14, (CX)
	VMASKMOVPD Y1, Y14, (CX)(R8*1)
	VMASKMOVPD Y2, Y14, (CX)(R8*2)
	VMASKMOVPD Y3, Y14, (CX)(R13*1)

nn4_done:
	VZEROUPPER
	RET

// func gemmNN1AVX2(c []float64, a []float64, ak int, b []float64, ldb int, N, K int, bias []float64, mode int)
//
// One row of gemmNN, all N columns, from initial values that are C's own
// (mode 0), bias[:N] (mode 1) or +0 (mode 2), as in gemmNN4AVX2:
//
//	for j := 0; j < N; j++ {
//		x := x0(j) // c[j], bias[j] or 0
//		for k := 0; k < K; k++ {
//			x = math.FMA(a[k*ak], b[k*ldb+j], x)
//		}
//		c[j] = x
//	}
//
// Columns go in blocks of 16 (four accumulators), then 4, then a masked
// block of 1-3, each a k-ascending loop of broadcast A times vector B.
//
// Registers: AX a (k=0), SI a at k, R10 ak*8; BX b at the block, DI b at
// k, R11 ldb*8; CX c at the block; R14 bias at the block; DX k
// countdown; R8 columns left; R9 mode; Y0-Y3 accumulators, Y12-Y13 B,
// Y14 mask, Y15 broadcast A.
TEXT ·gemmNN1AVX2(SB), NOSPLIT, $0-136
	MOVQ c_base+0(FP), CX
	MOVQ a_base+24(FP), AX
	MOVQ ak+48(FP), R10
	SHLQ $3, R10
	MOVQ b_base+56(FP), BX
	MOVQ ldb+80(FP), R11
	SHLQ $3, R11
	MOVQ N+88(FP), R8
	MOVQ bias_base+104(FP), R14
	MOVQ mode+128(FP), R9

nn1_cols:
	CMPQ R8, $16
	JLT  nn1_4
	CMPQ R9, $1
	JEQ  nn1_16_bias
	JGT  nn1_16_zero
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	VMOVUPD 64(CX), Y2
	VMOVUPD 96(CX), Y3
	JMP     nn1_16_init

nn1_16_bias:
	VMOVUPD (R14), Y0
	VMOVUPD 32(R14), Y1
	VMOVUPD 64(R14), Y2
	VMOVUPD 96(R14), Y3
	JMP     nn1_16_init

nn1_16_zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

nn1_16_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+96(FP), DX

nn1_16_k:
	VBROADCASTSD (SI), Y15
	VFMADD231PD  (DI), Y15, Y0
	VFMADD231PD  32(DI), Y15, Y1
	VFMADD231PD  64(DI), Y15, Y2
	VFMADD231PD  96(DI), Y15, Y3
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          nn1_16_k

	VMOVUPD Y0, (CX)
	VMOVUPD Y1, 32(CX)
	VMOVUPD Y2, 64(CX)
	VMOVUPD Y3, 96(CX)
	ADDQ    $128, CX
	ADDQ    $128, BX
	ADDQ    $128, R14
	SUBQ    $16, R8
	JMP     nn1_cols

nn1_4:
	CMPQ R8, $4
	JLT  nn1_mask
	CMPQ R9, $1
	JEQ  nn1_4_bias
	JGT  nn1_4_zero
	VMOVUPD (CX), Y0
	JMP     nn1_4_init

nn1_4_bias:
	VMOVUPD (R14), Y0
	JMP     nn1_4_init

nn1_4_zero:
	VXORPD Y0, Y0, Y0

nn1_4_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+96(FP), DX

nn1_4_k:
	VBROADCASTSD (SI), Y15
	VFMADD231PD  (DI), Y15, Y0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          nn1_4_k

	VMOVUPD Y0, (CX)
	ADDQ    $32, CX
	ADDQ    $32, BX
	ADDQ    $32, R14
	SUBQ    $4, R8
	JMP     nn1_4

nn1_mask:
	TESTQ      R8, R8
	JZ         nn1_done
	LEAQ       tailMask<>+64(SB), SI
	SHLQ       $3, R8
	SUBQ       R8, SI
	VMOVUPD    (SI), Y14
	CMPQ       R9, $1
	JEQ        nn1_mask_bias
	JGT        nn1_mask_zero
	VMASKMOVPD (CX), Y14, Y0
	JMP        nn1_mask_init

nn1_mask_bias:
	VMASKMOVPD (R14), Y14, Y0
	JMP        nn1_mask_init

nn1_mask_zero:
	VXORPD Y0, Y0, Y0

nn1_mask_init:
	MOVQ       AX, SI
	MOVQ       BX, DI
	MOVQ       K+96(FP), DX

nn1_mask_k:
	VMASKMOVPD   (DI), Y14, Y12
	VBROADCASTSD (SI), Y15
	VFMADD231PD  Y12, Y15, Y0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          nn1_mask_k

	VMASKMOVPD Y0, Y14, (CX)

nn1_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// gemmNT

// One 4-lane half of a k step for one column of B (at addr) and two rows
// of A (halves in Y12, Y13): lane l of acc0 and acc1 gets one FMA.
#define NT_COL2(addr, acc0, acc1) \
	VMOVUPD     addr, Y14; \
	VFMADD231PD Y14, Y12, acc0; \
	VFMADD231PD Y14, Y13, acc1

// The same with B loaded under the tail mask Y15 (+0 in inactive lanes).
#define NT_COL2M(addr, acc0, acc1) \
	VMASKMOVPD  addr, Y15, Y14; \
	VFMADD231PD Y14, Y12, acc0; \
	VFMADD231PD Y14, Y13, acc1

// NT_TAILA loads half of A under the tail mask Y15 into y and sets its
// inactive lanes to -0 (neg is the matching -0 pattern). With B's inactive
// lanes +0 the product there is -0, and x + (-0) = x for every x, so an
// inactive lane keeps its bits exactly (a +0·+0 would turn -0 into +0).
#define NT_TAILA(addr, neg, y) \
	VMASKMOVPD addr, Y15, y; \
	VORPD      neg, y, y

// NT_REDUCE adds the dot product whose lanes 0-3 are in lo and 4-7 in hi
// to the float64 at addr, in dot8Reduce's order:
// t = lo+hi (t_l = s_l + s_l+4); r = (t0+t2) + (t1+t3); c += r.
#define NT_REDUCE(lo, hi, xlo, addr) \
	VADDPD       hi, lo, lo; \
	VEXTRACTF128 $1, lo, X14; \
	VADDPD       X14, xlo, xlo; \
	VPERMILPD    $1, xlo, X14; \
	VADDSD       X14, xlo, xlo; \
	VADDSD       addr, xlo, xlo; \
	VMOVSD       xlo, addr

// NT_SET is NT_REDUCE for gemmNTSet: the dot product is added to +0
// instead of to c, the bits that clearing c first gives (a -0 dot
// product becomes +0), and c's old value is never read.
#define NT_SET(lo, hi, xlo, addr) \
	VADDPD       hi, lo, lo; \
	VEXTRACTF128 $1, lo, X14; \
	VADDPD       X14, xlo, xlo; \
	VPERMILPD    $1, xlo, X14; \
	VADDSD       X14, xlo, xlo; \
	VXORPD       X14, X14, X14; \
	VADDSD       X14, xlo, xlo; \
	VMOVSD       xlo, addr

// func gemmNT2AVX2(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, N, K, zero int)
//
// Two rows of gemmNT, all N columns, added to C's old values or, when
// zero is not 0, to +0 (C's old values are then never read):
//
//	for i := 0; i < 2; i++ {
//		for j := 0; j < N; j++ {
//			if zero != 0 {
//				c[i*ldc+j] = 0
//			}
//			c[i*ldc+j] += dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//		}
//	}
//
// Columns go in blocks of 3 (2 rows × 3 columns × 2 YMM = 12 accumulators
// holding dot8's lanes 0-3 and 4-7), then one at a time (4 accumulators).
// The k loop runs over K&^7 in steps of 8: load both rows' halves of A,
// FMA each column's halves of B into the lanes. A ragged tail of K%8 is
// one more step with masked loads (NT_TAILA). Each output is then reduced
// by NT_REDUCE and added to c once (NT_SET: to +0).
//
// Registers: SI a row 0, R13 a row 1; BX b column j, R10 column j+1,
// DI column j+2, R11 ldb*8; CX c at (0, j), R8 ldc*8; DX byte offset
// along k, AX (K&^7)*8, R9 K%8, R12 tailMask<>+64-8*(K%8);
// N+96(FP) columns left, zero+112(FP) the flag; Y0-Y11 accumulators,
// Y12-Y13 A halves, Y14 B half, Y15 tail mask.
TEXT ·gemmNT2AVX2(SB), NOSPLIT, $0-120
	MOVQ c_base+0(FP), CX
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	MOVQ a_base+32(FP), SI
	MOVQ lda+56(FP), R13
	LEAQ (SI)(R13*8), R13
	MOVQ b_base+64(FP), BX
	MOVQ ldb+88(FP), R11
	SHLQ $3, R11
	MOVQ K+104(FP), AX
	MOVQ AX, R9
	ANDQ $7, R9
	ANDQ $-8, AX
	SHLQ $3, AX
	LEAQ tailMask<>+64(SB), R12
	LEAQ (R9*8), DX
	SUBQ DX, R12

nt2_cols:
	CMPQ N+96(FP), $3
	JLT  nt2_1
	LEAQ (BX)(R11*1), R10
	LEAQ (R10)(R11*1), DI
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
	XORQ   DX, DX
	CMPQ   DX, AX
	JEQ    nt2_3_tail

nt2_3_k:
	VMOVUPD (SI)(DX*1), Y12
	VMOVUPD (R13)(DX*1), Y13
	NT_COL2((BX)(DX*1), Y0, Y6)
	NT_COL2((R10)(DX*1), Y2, Y8)
	NT_COL2((DI)(DX*1), Y4, Y10)
	VMOVUPD 32(SI)(DX*1), Y12
	VMOVUPD 32(R13)(DX*1), Y13
	NT_COL2(32(BX)(DX*1), Y1, Y7)
	NT_COL2(32(R10)(DX*1), Y3, Y9)
	NT_COL2(32(DI)(DX*1), Y5, Y11)
	ADDQ    $64, DX
	CMPQ    DX, AX
	JLT     nt2_3_k

nt2_3_tail:
	TESTQ   R9, R9
	JZ      nt2_3_reduce
	VMOVUPD (R12), Y15
	NT_TAILA((SI)(DX*1), 128(R12), Y12)
	NT_TAILA((R13)(DX*1), 128(R12), Y13)
	NT_COL2M((BX)(DX*1), Y0, Y6)
	NT_COL2M((R10)(DX*1), Y2, Y8)
	NT_COL2M((DI)(DX*1), Y4, Y10)
	VMOVUPD 32(R12), Y15
	NT_TAILA(32(SI)(DX*1), 160(R12), Y12)
	NT_TAILA(32(R13)(DX*1), 160(R12), Y13)
	NT_COL2M(32(BX)(DX*1), Y1, Y7)
	NT_COL2M(32(R10)(DX*1), Y3, Y9)
	NT_COL2M(32(DI)(DX*1), Y5, Y11)

nt2_3_reduce:
	CMPQ zero+112(FP), $0
	JNE  nt2_3_set
	NT_REDUCE(Y0, Y1, X0, (CX))
	NT_REDUCE(Y2, Y3, X2, 8(CX))
	NT_REDUCE(Y4, Y5, X4, 16(CX))
	NT_REDUCE(Y6, Y7, X6, (CX)(R8*1))
	NT_REDUCE(Y8, Y9, X8, 8(CX)(R8*1))
	NT_REDUCE(Y10, Y11, X10, 16(CX)(R8*1))
	JMP  nt2_3_next

nt2_3_set:
	NT_SET(Y0, Y1, X0, (CX))
	NT_SET(Y2, Y3, X2, 8(CX))
	NT_SET(Y4, Y5, X4, 16(CX))
	NT_SET(Y6, Y7, X6, (CX)(R8*1))
	NT_SET(Y8, Y9, X8, 8(CX)(R8*1))
	NT_SET(Y10, Y11, X10, 16(CX)(R8*1))

nt2_3_next:
	ADDQ $24, CX
	LEAQ (DI)(R11*1), BX
	SUBQ $3, N+96(FP)
	JMP  nt2_cols

nt2_1:
	CMPQ N+96(FP), $0
	JEQ  nt2_done
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ   DX, DX
	CMPQ   DX, AX
	JEQ    nt2_1_tail

nt2_1_k:
	VMOVUPD (SI)(DX*1), Y12
	VMOVUPD (R13)(DX*1), Y13
	NT_COL2((BX)(DX*1), Y0, Y6)
	VMOVUPD 32(SI)(DX*1), Y12
	VMOVUPD 32(R13)(DX*1), Y13
	NT_COL2(32(BX)(DX*1), Y1, Y7)
	ADDQ    $64, DX
	CMPQ    DX, AX
	JLT     nt2_1_k

nt2_1_tail:
	TESTQ   R9, R9
	JZ      nt2_1_reduce
	VMOVUPD (R12), Y15
	NT_TAILA((SI)(DX*1), 128(R12), Y12)
	NT_TAILA((R13)(DX*1), 128(R12), Y13)
	NT_COL2M((BX)(DX*1), Y0, Y6)
	VMOVUPD 32(R12), Y15
	NT_TAILA(32(SI)(DX*1), 160(R12), Y12)
	NT_TAILA(32(R13)(DX*1), 160(R12), Y13)
	NT_COL2M(32(BX)(DX*1), Y1, Y7)

nt2_1_reduce:
	CMPQ zero+112(FP), $0
	JNE  nt2_1_set
	NT_REDUCE(Y0, Y1, X0, (CX))
	NT_REDUCE(Y6, Y7, X6, (CX)(R8*1))
	JMP  nt2_1_next

nt2_1_set:
	NT_SET(Y0, Y1, X0, (CX))
	NT_SET(Y6, Y7, X6, (CX)(R8*1))

nt2_1_next:
	ADDQ $8, CX
	ADDQ R11, BX
	DECQ N+96(FP)
	JMP  nt2_1

nt2_done:
	VZEROUPPER
	RET

// One k step (both halves) of one column of B against the row of A held
// in Y12 (lanes 0-3) and Y13 (lanes 4-7).
#define NT_COL1(addr, addr32, lo, hi) \
	VFMADD231PD addr, Y12, lo; \
	VFMADD231PD addr32, Y13, hi

// A masked half step: B under the mask Y15, against A half y.
#define NT_COL1M(addr, y, acc) \
	VMASKMOVPD  addr, Y15, Y14; \
	VFMADD231PD Y14, y, acc

// func gemmNT1AVX2(c []float64, a []float64, b []float64, ldb int, N, K, zero int)
//
// One row of gemmNT, all N columns, added to C's old values or to +0 as
// in gemmNT2AVX2:
//
//	for j := 0; j < N; j++ {
//		if zero != 0 {
//			c[j] = 0
//		}
//		c[j] += dot8(a[:K], b[j*ldb:j*ldb+K])
//	}
//
// Columns go in blocks of 4 (4 columns × 2 YMM = 8 accumulators), then
// one at a time; the k loop and the ragged tail are as in gemmNT2AVX2.
//
// Registers: SI a; BX b column j, R10 j+1, DI j+2, R13 j+3, R11 ldb*8;
// CX c at j; DX byte offset along k, AX (K&^7)*8, R9 K%8,
// R12 tailMask<>+64-8*(K%8); R8 columns left, zero+96(FP) the flag;
// Y0-Y7 accumulators, Y12-Y13 A halves, Y14 B half, Y15 tail mask.
TEXT ·gemmNT1AVX2(SB), NOSPLIT, $0-104
	MOVQ c_base+0(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), BX
	MOVQ ldb+72(FP), R11
	SHLQ $3, R11
	MOVQ N+80(FP), R8
	MOVQ K+88(FP), AX
	MOVQ AX, R9
	ANDQ $7, R9
	ANDQ $-8, AX
	SHLQ $3, AX
	LEAQ tailMask<>+64(SB), R12
	LEAQ (R9*8), DX
	SUBQ DX, R12

nt1_cols:
	CMPQ R8, $4
	JLT  nt1_1
	LEAQ (BX)(R11*1), R10
	LEAQ (R10)(R11*1), DI
	LEAQ (DI)(R11*1), R13
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ   DX, DX
	CMPQ   DX, AX
	JEQ    nt1_4_tail

nt1_4_k:
	VMOVUPD (SI)(DX*1), Y12
	VMOVUPD 32(SI)(DX*1), Y13
	NT_COL1((BX)(DX*1), 32(BX)(DX*1), Y0, Y1)
	NT_COL1((R10)(DX*1), 32(R10)(DX*1), Y2, Y3)
	NT_COL1((DI)(DX*1), 32(DI)(DX*1), Y4, Y5)
	NT_COL1((R13)(DX*1), 32(R13)(DX*1), Y6, Y7)
	ADDQ    $64, DX
	CMPQ    DX, AX
	JLT     nt1_4_k

nt1_4_tail:
	TESTQ   R9, R9
	JZ      nt1_4_reduce
	VMOVUPD (R12), Y15
	NT_TAILA((SI)(DX*1), 128(R12), Y12)
	NT_COL1M((BX)(DX*1), Y12, Y0)
	NT_COL1M((R10)(DX*1), Y12, Y2)
	NT_COL1M((DI)(DX*1), Y12, Y4)
	NT_COL1M((R13)(DX*1), Y12, Y6)
	VMOVUPD 32(R12), Y15
	NT_TAILA(32(SI)(DX*1), 160(R12), Y13)
	NT_COL1M(32(BX)(DX*1), Y13, Y1)
	NT_COL1M(32(R10)(DX*1), Y13, Y3)
	NT_COL1M(32(DI)(DX*1), Y13, Y5)
	NT_COL1M(32(R13)(DX*1), Y13, Y7)

nt1_4_reduce:
	CMPQ zero+96(FP), $0
	JNE  nt1_4_set
	NT_REDUCE(Y0, Y1, X0, (CX))
	NT_REDUCE(Y2, Y3, X2, 8(CX))
	NT_REDUCE(Y4, Y5, X4, 16(CX))
	NT_REDUCE(Y6, Y7, X6, 24(CX))
	JMP  nt1_4_next

nt1_4_set:
	NT_SET(Y0, Y1, X0, (CX))
	NT_SET(Y2, Y3, X2, 8(CX))
	NT_SET(Y4, Y5, X4, 16(CX))
	NT_SET(Y6, Y7, X6, 24(CX))

nt1_4_next:
	ADDQ $32, CX
	LEAQ (R13)(R11*1), BX
	SUBQ $4, R8
	JMP  nt1_cols

nt1_1:
	TESTQ R8, R8
	JZ    nt1_done
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	XORQ   DX, DX
	CMPQ   DX, AX
	JEQ    nt1_1_tail

nt1_1_k:
	VMOVUPD (SI)(DX*1), Y12
	VMOVUPD 32(SI)(DX*1), Y13
	NT_COL1((BX)(DX*1), 32(BX)(DX*1), Y0, Y1)
	ADDQ    $64, DX
	CMPQ    DX, AX
	JLT     nt1_1_k

nt1_1_tail:
	TESTQ   R9, R9
	JZ      nt1_1_reduce
	VMOVUPD (R12), Y15
	NT_TAILA((SI)(DX*1), 128(R12), Y12)
	NT_COL1M((BX)(DX*1), Y12, Y0)
	VMOVUPD 32(R12), Y15
	NT_TAILA(32(SI)(DX*1), 160(R12), Y13)
	NT_COL1M(32(BX)(DX*1), Y13, Y1)

nt1_1_reduce:
	CMPQ zero+96(FP), $0
	JNE  nt1_1_set
	NT_REDUCE(Y0, Y1, X0, (CX))
	JMP  nt1_1_next

nt1_1_set:
	NT_SET(Y0, Y1, X0, (CX))

nt1_1_next:
	ADDQ $8, CX
	ADDQ R11, BX
	DECQ R8
	JMP  nt1_1

nt1_done:
	VZEROUPPER
	RET
