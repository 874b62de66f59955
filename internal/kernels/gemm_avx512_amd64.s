//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX-512 kernels for gemmNN and gemmNT (see doc.go for the order
// every output must follow; these follow it exactly, so their results
// are the bits of the portable and the AVX2 kernels). They use AVX512F
// instructions only. Callers (gemm_amd64.go) guarantee N >= 1, K >= 1
// for gemmNN, K >= 0 for gemmNT, and that every element addressed below
// is inside its slice; partial vectors are loaded and stored under an
// opmask, so the kernels never touch memory outside the rows and
// columns of their shape (masked-off lanes neither fault nor store).

// laneMask<>+2n is the 16-bit opmask of the lanes 0..n-1 (n = 0..8).
DATA laneMask<>+0x00(SB)/2, $0x00
DATA laneMask<>+0x02(SB)/2, $0x01
DATA laneMask<>+0x04(SB)/2, $0x03
DATA laneMask<>+0x06(SB)/2, $0x07
DATA laneMask<>+0x08(SB)/2, $0x0f
DATA laneMask<>+0x0a(SB)/2, $0x1f
DATA laneMask<>+0x0c(SB)/2, $0x3f
DATA laneMask<>+0x0e(SB)/2, $0x7f
DATA laneMask<>+0x10(SB)/2, $0xff
GLOBL laneMask<>(SB), RODATA|NOPTR, $18

// evenOdd<> is the VPERMPD index that gathers the even lanes into the
// lower half and the odd lanes into the upper half.
DATA evenOdd<>+0x00(SB)/8, $0
DATA evenOdd<>+0x08(SB)/8, $2
DATA evenOdd<>+0x10(SB)/8, $4
DATA evenOdd<>+0x18(SB)/8, $6
DATA evenOdd<>+0x20(SB)/8, $1
DATA evenOdd<>+0x28(SB)/8, $3
DATA evenOdd<>+0x30(SB)/8, $5
DATA evenOdd<>+0x38(SB)/8, $7
GLOBL evenOdd<>(SB), RODATA|NOPTR, $64

// ---------------------------------------------------------------------
// gemmNN

// One k step of one row: broadcast a (at addr) and multiply-add it with
// the B vectors into that row's accumulators.
#define NNZ_ROW4(addr, x0, x1, x2, x3) \
	VBROADCASTSD addr, Z20; \
	VFMADD231PD  Z16, Z20, x0; \
	VFMADD231PD  Z17, Z20, x1; \
	VFMADD231PD  Z18, Z20, x2; \
	VFMADD231PD  Z19, Z20, x3

#define NNZ_ROW1(addr, x0) \
	VBROADCASTSD addr, Z20; \
	VFMADD231PD  Z16, Z20, x0

// The layer after the product, on accumulators about to be stored (the
// epilogue of gemmNN4AVX512 and gemmNN1AVX512). NNZ_RELU4 is reluAVX512
// on four registers, with Z20 = +0: VMAXPD(0, x) keeps NaN and zeros,
// then adding +0 turns -0 into +0. NNZ_RES4 is addAVX512's c = res + c
// (res at the four addresses, through Z16-Z19), NNZ_RESM one register
// with res loaded under K1.
#define NNZ_RELU1(x) \
	VMAXPD x, Z20, x; \
	VADDPD Z20, x, x

#define NNZ_RELU4(x0, x1, x2, x3) \
	NNZ_RELU1(x0); \
	NNZ_RELU1(x1); \
	NNZ_RELU1(x2); \
	NNZ_RELU1(x3)

#define NNZ_RES(addr, t, x) \
	VMOVUPD addr, t; \
	VADDPD  x, t, x

#define NNZ_RESM(addr, t, x) \
	VMOVUPD.Z addr, K1, t; \
	VADDPD    x, t, x

#define NNZ_RES4(a0, a1, a2, a3, x0, x1, x2, x3) \
	NNZ_RES(a0, Z16, x0); \
	NNZ_RES(a1, Z17, x1); \
	NNZ_RES(a2, Z18, x2); \
	NNZ_RES(a3, Z19, x3)

// NNZ_MASK is reluMaskAVX512's step on one register, with the mask (laid
// out as C) at addr loaded into t and Z20 = +0: x stays where the mask
// is > 0 and becomes +0 elsewhere. GT_OQ is false for a NaN mask, and
// the zero-masked move writes +0 (all bits clear) into the other lanes,
// keeping the lanes it copies to the bit, -0 and NaN included. K2 holds
// the comparison. NNZ_MASKM loads the mask under K1, as NNZ_RESM.
#define NNZ_MASK(addr, t, x) \
	VMOVUPD   addr, t; \
	VCMPPD    $0x1e, Z20, t, K2; \
	VMOVAPD.Z x, K2, x

#define NNZ_MASKM(addr, t, x) \
	VMOVUPD.Z addr, K1, t; \
	VCMPPD    $0x1e, Z20, t, K2; \
	VMOVAPD.Z x, K2, x

#define NNZ_MASK4(a0, a1, a2, a3, x0, x1, x2, x3) \
	NNZ_MASK(a0, Z16, x0); \
	NNZ_MASK(a1, Z17, x1); \
	NNZ_MASK(a2, Z18, x2); \
	NNZ_MASK(a3, Z19, x3)

// NNZ_ARGS loads the arguments gemmNN4AVX512 and gemmNN6AVX512 share
// (see their register lists): CX c, R8 ldc*8, R13 3*ldc*8, AX a, R9
// ai*8, R10 ak*8, BX b, R11 ldb*8, R14 bias, and res - c into
// res_base+152(FP), so that res's row sits at c's offsets.
#define NNZ_ARGS \
	MOVQ c_base+0(FP), CX; \
	MOVQ ldc+24(FP), R8; \
	SHLQ $3, R8; \
	LEAQ (R8)(R8*2), R13; \
	MOVQ a_base+32(FP), AX; \
	MOVQ ai+56(FP), R9; \
	SHLQ $3, R9; \
	MOVQ ak+64(FP), R10; \
	SHLQ $3, R10; \
	MOVQ b_base+72(FP), BX; \
	MOVQ ldb+96(FP), R11; \
	SHLQ $3, R11; \
	MOVQ bias_base+120(FP), R14; \
	MOVQ res_base+152(FP), DX; \
	SUBQ CX, DX; \
	MOVQ DX, res_base+152(FP)

// func gemmNN4AVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64)
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
// product: the chain starts from the same value as when C was set first,
// without a pass over C to set it. The bits 4, 8 and 16 (added to the
// first) fuse the layer after the product into the stores, on the
// caller's last block of k (gemm_amd64.go gives the Go loop): ReLU,
// then either the ReLU's backward mask against res or the residual add
// c = res + c, res laid out as C.
//
// Columns go in blocks of 32 (four ZMM per row, 16 accumulators), then
// 8, then a masked block of 1-7. For each block the accumulators are
// loaded from C, the k loop runs K fused multiply-adds per lane in
// ascending k (broadcast A, vector of B), and C is stored.
//
// Registers: AX a (k=0), SI a at k, R9 ai*8, R12 3*ai*8, R10 ak*8;
// BX b at the block (k=0), DI b at k, R11 ldb*8; CX c at the block,
// R8 ldc*8, R13 3*ldc*8; R14 bias at the block; DX k countdown;
// N+104(FP) columns left; Z0-Z15 accumulators, Z16-Z19 B, Z20
// broadcast A, K1 tail mask. The epilogue: res_base+152(FP) res - c,
// SI res at the block, Z16-Z19 res, Z20 +0, K2 the mask's lanes > 0.
TEXT ·gemmNN4AVX512(SB), NOSPLIT, $0-176
	NNZ_ARGS
	LEAQ (R9)(R9*2), R12

nn4z_cols:
	MOVQ N+104(FP), DX
	CMPQ DX, $32
	JLT  nn4z_8

	// 32 columns.
	MOVQ mode+144(FP), DX
	ANDQ $3, DX
	CMPQ DX, $1
	JEQ  nn4z_32_bias
	JGT  nn4z_32_zero
	VMOVUPD (CX), Z0
	VMOVUPD 64(CX), Z1
	VMOVUPD 128(CX), Z2
	VMOVUPD 192(CX), Z3
	VMOVUPD (CX)(R8*1), Z4
	VMOVUPD 64(CX)(R8*1), Z5
	VMOVUPD 128(CX)(R8*1), Z6
	VMOVUPD 192(CX)(R8*1), Z7
	VMOVUPD (CX)(R8*2), Z8
	VMOVUPD 64(CX)(R8*2), Z9
	VMOVUPD 128(CX)(R8*2), Z10
	VMOVUPD 192(CX)(R8*2), Z11
	VMOVUPD (CX)(R13*1), Z12
	VMOVUPD 64(CX)(R13*1), Z13
	VMOVUPD 128(CX)(R13*1), Z14
	VMOVUPD 192(CX)(R13*1), Z15
	JMP     nn4z_32_init

nn4z_32_bias:
	VMOVUPD (R14), Z0
	VMOVUPD 64(R14), Z1
	VMOVUPD 128(R14), Z2
	VMOVUPD 192(R14), Z3
	VMOVAPD Z0, Z4
	VMOVAPD Z1, Z5
	VMOVAPD Z2, Z6
	VMOVAPD Z3, Z7
	VMOVAPD Z0, Z8
	VMOVAPD Z1, Z9
	VMOVAPD Z2, Z10
	VMOVAPD Z3, Z11
	VMOVAPD Z0, Z12
	VMOVAPD Z1, Z13
	VMOVAPD Z2, Z14
	VMOVAPD Z3, Z15
	JMP     nn4z_32_init

nn4z_32_zero:
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

nn4z_32_init:
	MOVQ AX, SI
	MOVQ BX, DI
	MOVQ K+112(FP), DX

nn4z_32_k:
	VMOVUPD (DI), Z16
	VMOVUPD 64(DI), Z17
	VMOVUPD 128(DI), Z18
	VMOVUPD 192(DI), Z19
	NNZ_ROW4((SI), Z0, Z1, Z2, Z3)
	NNZ_ROW4((SI)(R9*1), Z4, Z5, Z6, Z7)
	NNZ_ROW4((SI)(R9*2), Z8, Z9, Z10, Z11)
	NNZ_ROW4((SI)(R12*1), Z12, Z13, Z14, Z15)
	ADDQ    R10, SI
	ADDQ    R11, DI
	DECQ    DX
	JNZ     nn4z_32_k

	// The elementwise layer after the product, on the last block of k
	// only: ReLU (mode&4), as reluAVX512, then the ReLU's backward mask
	// (mode&16), as reluMaskAVX512 against res, or the residual
	// (mode&8), c = res + c as addAVX512; res at c's offsets.
	MOVQ  mode+144(FP), DX
	TESTQ $4, DX
	JZ    nn4z_32_epimask
	VPXORQ Z20, Z20, Z20
	NNZ_RELU4(Z0, Z1, Z2, Z3)
	NNZ_RELU4(Z4, Z5, Z6, Z7)
	NNZ_RELU4(Z8, Z9, Z10, Z11)
	NNZ_RELU4(Z12, Z13, Z14, Z15)

nn4z_32_epimask:
	TESTQ  $16, DX
	JZ     nn4z_32_epires
	VPXORQ Z20, Z20, Z20
	MOVQ   res_base+152(FP), SI
	ADDQ   CX, SI
	NNZ_MASK4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)
	NNZ_MASK4((SI)(R8*1), 64(SI)(R8*1), 128(SI)(R8*1), 192(SI)(R8*1), Z4, Z5, Z6, Z7)
	NNZ_MASK4((SI)(R8*2), 64(SI)(R8*2), 128(SI)(R8*2), 192(SI)(R8*2), Z8, Z9, Z10, Z11)
	NNZ_MASK4((SI)(R13*1), 64(SI)(R13*1), 128(SI)(R13*1), 192(SI)(R13*1), Z12, Z13, Z14, Z15)

nn4z_32_epires:
	TESTQ $8, DX
	JZ    nn4z_32_store
	MOVQ  res_base+152(FP), SI
	ADDQ  CX, SI
	NNZ_RES4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)
	NNZ_RES4((SI)(R8*1), 64(SI)(R8*1), 128(SI)(R8*1), 192(SI)(R8*1), Z4, Z5, Z6, Z7)
	NNZ_RES4((SI)(R8*2), 64(SI)(R8*2), 128(SI)(R8*2), 192(SI)(R8*2), Z8, Z9, Z10, Z11)
	NNZ_RES4((SI)(R13*1), 64(SI)(R13*1), 128(SI)(R13*1), 192(SI)(R13*1), Z12, Z13, Z14, Z15)

nn4z_32_store:
	VMOVUPD Z0, (CX)
	VMOVUPD Z1, 64(CX)
	VMOVUPD Z2, 128(CX)
	VMOVUPD Z3, 192(CX)
	VMOVUPD Z4, (CX)(R8*1)
	VMOVUPD Z5, 64(CX)(R8*1)
	VMOVUPD Z6, 128(CX)(R8*1)
	VMOVUPD Z7, 192(CX)(R8*1)
	VMOVUPD Z8, (CX)(R8*2)
	VMOVUPD Z9, 64(CX)(R8*2)
	VMOVUPD Z10, 128(CX)(R8*2)
	VMOVUPD Z11, 192(CX)(R8*2)
	VMOVUPD Z12, (CX)(R13*1)
	VMOVUPD Z13, 64(CX)(R13*1)
	VMOVUPD Z14, 128(CX)(R13*1)
	VMOVUPD Z15, 192(CX)(R13*1)
	ADDQ    $256, CX
	ADDQ    $256, BX
	ADDQ    $256, R14
	SUBQ    $32, N+104(FP)
	JMP     nn4z_cols

nn4z_8:
	TESTQ DX, DX
	JZ    nn4z_done
	CMPQ  DX, $8
	JGE   nn4z_full

	// 1-7 columns: K1 masks loads and stores.
	LEAQ laneMask<>(SB), SI
	KMOVW (SI)(DX*2), K1
	JMP  nn4z_load

nn4z_full:
	LEAQ laneMask<>(SB), SI
	KMOVW 16(SI), K1

nn4z_load:
	MOVQ      mode+144(FP), DX
	ANDQ      $3, DX
	CMPQ      DX, $1
	JEQ       nn4z_8_bias
	JGT       nn4z_8_zero
	VMOVUPD.Z (CX), K1, Z0
	VMOVUPD.Z (CX)(R8*1), K1, Z4
	VMOVUPD.Z (CX)(R8*2), K1, Z8
	VMOVUPD.Z (CX)(R13*1), K1, Z12
	JMP       nn4z_8_init

nn4z_8_bias:
	VMOVUPD.Z (R14), K1, Z0
	VMOVAPD   Z0, Z4
	VMOVAPD   Z0, Z8
	VMOVAPD   Z0, Z12
	JMP       nn4z_8_init

nn4z_8_zero:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z4, Z4, Z4
	VPXORQ Z8, Z8, Z8
	VPXORQ Z12, Z12, Z12

nn4z_8_init:
	MOVQ      AX, SI
	MOVQ      BX, DI
	MOVQ      K+112(FP), DX

nn4z_8_k:
	VMOVUPD.Z (DI), K1, Z16
	NNZ_ROW1((SI), Z0)
	NNZ_ROW1((SI)(R9*1), Z4)
	NNZ_ROW1((SI)(R9*2), Z8)
	NNZ_ROW1((SI)(R12*1), Z12)
	ADDQ      R10, SI
	ADDQ      R11, DI
	DECQ      DX
	JNZ       nn4z_8_k

	// The elementwise layer after the product, on the last block of k
	// only: ReLU (mode&4), as reluAVX512, then the ReLU's backward mask
	// (mode&16), as reluMaskAVX512 against res, or the residual
	// (mode&8), c = res + c as addAVX512; res at c's offsets.
	MOVQ  mode+144(FP), DX
	TESTQ $4, DX
	JZ    nn4z_8_epimask
	VPXORQ Z20, Z20, Z20
	NNZ_RELU4(Z0, Z4, Z8, Z12)

nn4z_8_epimask:
	TESTQ  $16, DX
	JZ     nn4z_8_epires
	VPXORQ Z20, Z20, Z20
	MOVQ   res_base+152(FP), SI
	ADDQ   CX, SI
	NNZ_MASKM((SI), Z16, Z0)
	NNZ_MASKM((SI)(R8*1), Z17, Z4)
	NNZ_MASKM((SI)(R8*2), Z18, Z8)
	NNZ_MASKM((SI)(R13*1), Z19, Z12)

nn4z_8_epires:
	TESTQ $8, DX
	JZ    nn4z_8_store
	MOVQ  res_base+152(FP), SI
	ADDQ  CX, SI
	NNZ_RESM((SI), Z16, Z0)
	NNZ_RESM((SI)(R8*1), Z17, Z4)
	NNZ_RESM((SI)(R8*2), Z18, Z8)
	NNZ_RESM((SI)(R13*1), Z19, Z12)

nn4z_8_store:
	VMOVUPD Z0, K1, (CX)
	VMOVUPD Z4, K1, (CX)(R8*1)
	VMOVUPD Z8, K1, (CX)(R8*2)
	VMOVUPD Z12, K1, (CX)(R13*1)
	ADDQ    $64, CX
	ADDQ    $64, BX
	ADDQ    $64, R14
	SUBQ    $8, N+104(FP)
	JG      nn4z_cols

nn4z_done:
	VZEROUPPER
	RET

// The six-row kernel's macros: its accumulators take Z0-Z23, so B goes
// in Z24-Z27, the broadcast A and the epilogue's +0 in Z28, and the
// epilogue's operands through Z24-Z27 (Z29 for a masked one).
#define NN6_ROW4(addr, x0, x1, x2, x3) \
	VBROADCASTSD addr, Z28; \
	VFMADD231PD  Z24, Z28, x0; \
	VFMADD231PD  Z25, Z28, x1; \
	VFMADD231PD  Z26, Z28, x2; \
	VFMADD231PD  Z27, Z28, x3

// NN6_32_KSTEP is one step of k of the six-row, 32-column block: B's
// row at DI into Z24-Z27, the six rows' elements of A at SI, SI+R9,
// SI+2·R9, R12, R12+R9, R12+2·R9 into their chains Z0-Z23; then A moves
// on by R10 bytes, B by R11, and DX counts down.
#define NN6_32_KSTEP \
	VMOVUPD (DI), Z24; \
	VMOVUPD 64(DI), Z25; \
	VMOVUPD 128(DI), Z26; \
	VMOVUPD 192(DI), Z27; \
	NN6_ROW4((SI), Z0, Z1, Z2, Z3); \
	NN6_ROW4((SI)(R9*1), Z4, Z5, Z6, Z7); \
	NN6_ROW4((SI)(R9*2), Z8, Z9, Z10, Z11); \
	NN6_ROW4((R12), Z12, Z13, Z14, Z15); \
	NN6_ROW4((R12)(R9*1), Z16, Z17, Z18, Z19); \
	NN6_ROW4((R12)(R9*2), Z20, Z21, Z22, Z23); \
	ADDQ    R10, SI; \
	ADDQ    R10, R12; \
	ADDQ    R11, DI; \
	DECQ    DX

#define NN6_ROW1(addr, x0) \
	VBROADCASTSD addr, Z28; \
	VFMADD231PD  Z24, Z28, x0

#define NN6_LOAD4(a0, a1, a2, a3, x0, x1, x2, x3) \
	VMOVUPD a0, x0; \
	VMOVUPD a1, x1; \
	VMOVUPD a2, x2; \
	VMOVUPD a3, x3

#define NN6_STORE4(a0, a1, a2, a3, x0, x1, x2, x3) \
	VMOVUPD x0, a0; \
	VMOVUPD x1, a1; \
	VMOVUPD x2, a2; \
	VMOVUPD x3, a3

// NN6_COPY4 copies row 0's four accumulators (the bias) to another
// row's; NN6_ZERO4 sets four accumulators to +0.
#define NN6_COPY4(x0, x1, x2, x3) \
	VMOVAPD Z0, x0; \
	VMOVAPD Z1, x1; \
	VMOVAPD Z2, x2; \
	VMOVAPD Z3, x3

#define NN6_ZERO4(x0, x1, x2, x3) \
	VPXORQ x0, x0, x0; \
	VPXORQ x1, x1, x1; \
	VPXORQ x2, x2, x2; \
	VPXORQ x3, x3, x3

#define NN6_RELU1(x) \
	VMAXPD x, Z28, x; \
	VADDPD Z28, x, x

#define NN6_RELU4(x0, x1, x2, x3) \
	NN6_RELU1(x0); \
	NN6_RELU1(x1); \
	NN6_RELU1(x2); \
	NN6_RELU1(x3)

#define NN6_MASK(addr, t, x) \
	VMOVUPD   addr, t; \
	VCMPPD    $0x1e, Z28, t, K2; \
	VMOVAPD.Z x, K2, x

#define NN6_MASKM(addr, x) \
	VMOVUPD.Z addr, K1, Z29; \
	VCMPPD    $0x1e, Z28, Z29, K2; \
	VMOVAPD.Z x, K2, x

#define NN6_MASK4(a0, a1, a2, a3, x0, x1, x2, x3) \
	NN6_MASK(a0, Z24, x0); \
	NN6_MASK(a1, Z25, x1); \
	NN6_MASK(a2, Z26, x2); \
	NN6_MASK(a3, Z27, x3)

#define NN6_RES4(a0, a1, a2, a3, x0, x1, x2, x3) \
	NNZ_RES(a0, Z24, x0); \
	NNZ_RES(a1, Z25, x1); \
	NNZ_RES(a2, Z26, x2); \
	NNZ_RES(a3, Z27, x3)

// func gemmNN6AVX512(c []float64, ldc int, a []float64, ai, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64, pf int)
//
// gemmNN4AVX512 for six rows of C: the same Go loop with i < 6, the same
// modes and epilogues. Six rows of 32 columns take 24 accumulators, so
// each vector of B loaded in the k loop feeds six multiply-adds instead
// of four. B streams from L2 for every block of rows (a block of k of B
// is far larger than L1), and at four rows the kernel wanted a cache
// line of it every two cycles, about what L2 delivers: on the two-vCPU
// Xeon the baby config's products ran 1.08-1.17× faster with six rows
// (in-process A/B, 41 alternating rounds). The order of every chain is
// unchanged, so are the bits.
//
// With pf != 0 the 32-column k loop also issues PREFETCHT1 for the four
// lines pf bytes past those of B it loads: the caller's next block of B,
// whose rows lie ldb apart on pages of their own, which the hardware
// prefetchers do not follow; the first row block of each pass touches
// it so that the next pass finds it in L2.
//
// Registers: AX a (k=0), SI a at k for rows 0-2, R12 for rows 3-5, R9
// ai*8, R10 ak*8; BX b at the block (k=0), DI b at k, R11 ldb*8; CX c at
// the block, DI rows 3-5 of c (or res) around the k loop, R8 ldc*8, R13
// 3*ldc*8 (pf in the prefetching k loop); R14 bias at the block; DX k
// countdown; N+104(FP) columns left; Z0-Z23 accumulators (row r in
// Z4r-Z4r+3), Z24-Z27 B, Z28
// broadcast A, K1 tail mask; the epilogue: res_base+152(FP) res - c,
// SI res at the block, Z28 +0, K2 the mask's lanes > 0.
TEXT ·gemmNN6AVX512(SB), NOSPLIT, $0-184
	NNZ_ARGS

nn6z_cols:
	MOVQ N+104(FP), DX
	CMPQ DX, $32
	JLT  nn6z_8

	// 32 columns.
	MOVQ mode+144(FP), DX
	ANDQ $3, DX
	CMPQ DX, $1
	JEQ  nn6z_32_bias
	JGT  nn6z_32_zero
	LEAQ (CX)(R13*1), DI
	NN6_LOAD4((CX), 64(CX), 128(CX), 192(CX), Z0, Z1, Z2, Z3)
	NN6_LOAD4((CX)(R8*1), 64(CX)(R8*1), 128(CX)(R8*1), 192(CX)(R8*1), Z4, Z5, Z6, Z7)
	NN6_LOAD4((CX)(R8*2), 64(CX)(R8*2), 128(CX)(R8*2), 192(CX)(R8*2), Z8, Z9, Z10, Z11)
	NN6_LOAD4((DI), 64(DI), 128(DI), 192(DI), Z12, Z13, Z14, Z15)
	NN6_LOAD4((DI)(R8*1), 64(DI)(R8*1), 128(DI)(R8*1), 192(DI)(R8*1), Z16, Z17, Z18, Z19)
	NN6_LOAD4((DI)(R8*2), 64(DI)(R8*2), 128(DI)(R8*2), 192(DI)(R8*2), Z20, Z21, Z22, Z23)
	JMP nn6z_32_init

nn6z_32_bias:
	NN6_LOAD4((R14), 64(R14), 128(R14), 192(R14), Z0, Z1, Z2, Z3)
	NN6_COPY4(Z4, Z5, Z6, Z7)
	NN6_COPY4(Z8, Z9, Z10, Z11)
	NN6_COPY4(Z12, Z13, Z14, Z15)
	NN6_COPY4(Z16, Z17, Z18, Z19)
	NN6_COPY4(Z20, Z21, Z22, Z23)
	JMP     nn6z_32_init

nn6z_32_zero:
	NN6_ZERO4(Z0, Z1, Z2, Z3)
	NN6_ZERO4(Z4, Z5, Z6, Z7)
	NN6_ZERO4(Z8, Z9, Z10, Z11)
	NN6_ZERO4(Z12, Z13, Z14, Z15)
	NN6_ZERO4(Z16, Z17, Z18, Z19)
	NN6_ZERO4(Z20, Z21, Z22, Z23)

nn6z_32_init:
	MOVQ AX, SI
	LEAQ (R9)(R9*2), R12
	ADDQ AX, R12
	MOVQ BX, DI
	MOVQ K+112(FP), DX
	MOVQ pf+176(FP), R13
	TESTQ R13, R13
	JNZ  nn6z_32_kpf

nn6z_32_k:
	NN6_32_KSTEP
	JNZ     nn6z_32_k
	JMP     nn6z_32_epi

	// The same loop, touching the B block the next call will read (pf
	// bytes on) into L2 as it goes.
nn6z_32_kpf:
	PREFETCHT1 (DI)(R13*1)
	PREFETCHT1 64(DI)(R13*1)
	PREFETCHT1 128(DI)(R13*1)
	PREFETCHT1 192(DI)(R13*1)
	NN6_32_KSTEP
	JNZ     nn6z_32_kpf

nn6z_32_epi:
	LEAQ (R8)(R8*2), R13

	// The epilogue, as gemmNN4AVX512's.
	MOVQ  mode+144(FP), DX
	TESTQ $4, DX
	JZ    nn6z_32_epimask
	VPXORQ Z28, Z28, Z28
	NN6_RELU4(Z0, Z1, Z2, Z3)
	NN6_RELU4(Z4, Z5, Z6, Z7)
	NN6_RELU4(Z8, Z9, Z10, Z11)
	NN6_RELU4(Z12, Z13, Z14, Z15)
	NN6_RELU4(Z16, Z17, Z18, Z19)
	NN6_RELU4(Z20, Z21, Z22, Z23)

nn6z_32_epimask:
	TESTQ  $16, DX
	JZ     nn6z_32_epires
	VPXORQ Z28, Z28, Z28
	MOVQ   res_base+152(FP), SI
	ADDQ   CX, SI
	LEAQ   (SI)(R13*1), DI
	NN6_MASK4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)
	NN6_MASK4((SI)(R8*1), 64(SI)(R8*1), 128(SI)(R8*1), 192(SI)(R8*1), Z4, Z5, Z6, Z7)
	NN6_MASK4((SI)(R8*2), 64(SI)(R8*2), 128(SI)(R8*2), 192(SI)(R8*2), Z8, Z9, Z10, Z11)
	NN6_MASK4((DI), 64(DI), 128(DI), 192(DI), Z12, Z13, Z14, Z15)
	NN6_MASK4((DI)(R8*1), 64(DI)(R8*1), 128(DI)(R8*1), 192(DI)(R8*1), Z16, Z17, Z18, Z19)
	NN6_MASK4((DI)(R8*2), 64(DI)(R8*2), 128(DI)(R8*2), 192(DI)(R8*2), Z20, Z21, Z22, Z23)

nn6z_32_epires:
	TESTQ $8, DX
	JZ    nn6z_32_store
	MOVQ  res_base+152(FP), SI
	ADDQ  CX, SI
	LEAQ  (SI)(R13*1), DI
	NN6_RES4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)
	NN6_RES4((SI)(R8*1), 64(SI)(R8*1), 128(SI)(R8*1), 192(SI)(R8*1), Z4, Z5, Z6, Z7)
	NN6_RES4((SI)(R8*2), 64(SI)(R8*2), 128(SI)(R8*2), 192(SI)(R8*2), Z8, Z9, Z10, Z11)
	NN6_RES4((DI), 64(DI), 128(DI), 192(DI), Z12, Z13, Z14, Z15)
	NN6_RES4((DI)(R8*1), 64(DI)(R8*1), 128(DI)(R8*1), 192(DI)(R8*1), Z16, Z17, Z18, Z19)
	NN6_RES4((DI)(R8*2), 64(DI)(R8*2), 128(DI)(R8*2), 192(DI)(R8*2), Z20, Z21, Z22, Z23)

nn6z_32_store:
	LEAQ (CX)(R13*1), DI
	NN6_STORE4((CX), 64(CX), 128(CX), 192(CX), Z0, Z1, Z2, Z3)
	NN6_STORE4((CX)(R8*1), 64(CX)(R8*1), 128(CX)(R8*1), 192(CX)(R8*1), Z4, Z5, Z6, Z7)
	NN6_STORE4((CX)(R8*2), 64(CX)(R8*2), 128(CX)(R8*2), 192(CX)(R8*2), Z8, Z9, Z10, Z11)
	NN6_STORE4((DI), 64(DI), 128(DI), 192(DI), Z12, Z13, Z14, Z15)
	NN6_STORE4((DI)(R8*1), 64(DI)(R8*1), 128(DI)(R8*1), 192(DI)(R8*1), Z16, Z17, Z18, Z19)
	NN6_STORE4((DI)(R8*2), 64(DI)(R8*2), 128(DI)(R8*2), 192(DI)(R8*2), Z20, Z21, Z22, Z23)
	ADDQ $256, CX
	ADDQ $256, BX
	ADDQ $256, R14
	SUBQ $32, N+104(FP)
	JMP  nn6z_cols

nn6z_8:
	TESTQ DX, DX
	JZ    nn6z_done
	CMPQ  DX, $8
	JGE   nn6z_full

	// 1-7 columns: K1 masks loads and stores.
	LEAQ  laneMask<>(SB), SI
	KMOVW (SI)(DX*2), K1
	JMP   nn6z_load

nn6z_full:
	LEAQ  laneMask<>(SB), SI
	KMOVW 16(SI), K1

nn6z_load:
	MOVQ mode+144(FP), DX
	ANDQ $3, DX
	CMPQ DX, $1
	JEQ  nn6z_8_bias
	JGT  nn6z_8_zero
	LEAQ (CX)(R13*1), DI
	VMOVUPD.Z (CX), K1, Z0
	VMOVUPD.Z (CX)(R8*1), K1, Z4
	VMOVUPD.Z (CX)(R8*2), K1, Z8
	VMOVUPD.Z (DI), K1, Z12
	VMOVUPD.Z (DI)(R8*1), K1, Z16
	VMOVUPD.Z (DI)(R8*2), K1, Z20
	JMP       nn6z_8_init

nn6z_8_bias:
	VMOVUPD.Z (R14), K1, Z0
	VMOVAPD   Z0, Z4
	VMOVAPD   Z0, Z8
	VMOVAPD   Z0, Z12
	VMOVAPD   Z0, Z16
	VMOVAPD   Z0, Z20
	JMP       nn6z_8_init

nn6z_8_zero:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z4, Z4, Z4
	VPXORQ Z8, Z8, Z8
	VPXORQ Z12, Z12, Z12
	VPXORQ Z16, Z16, Z16
	VPXORQ Z20, Z20, Z20

nn6z_8_init:
	MOVQ AX, SI
	LEAQ (R9)(R9*2), R12
	ADDQ AX, R12
	MOVQ BX, DI
	MOVQ K+112(FP), DX

nn6z_8_k:
	VMOVUPD.Z (DI), K1, Z24
	NN6_ROW1((SI), Z0)
	NN6_ROW1((SI)(R9*1), Z4)
	NN6_ROW1((SI)(R9*2), Z8)
	NN6_ROW1((R12), Z12)
	NN6_ROW1((R12)(R9*1), Z16)
	NN6_ROW1((R12)(R9*2), Z20)
	ADDQ      R10, SI
	ADDQ      R10, R12
	ADDQ      R11, DI
	DECQ      DX
	JNZ       nn6z_8_k

	MOVQ  mode+144(FP), DX
	TESTQ $4, DX
	JZ    nn6z_8_epimask
	VPXORQ Z28, Z28, Z28
	NN6_RELU4(Z0, Z4, Z8, Z12)
	NN6_RELU1(Z16)
	NN6_RELU1(Z20)

nn6z_8_epimask:
	TESTQ  $16, DX
	JZ     nn6z_8_epires
	VPXORQ Z28, Z28, Z28
	MOVQ   res_base+152(FP), SI
	ADDQ   CX, SI
	LEAQ   (SI)(R13*1), DI
	NN6_MASKM((SI), Z0)
	NN6_MASKM((SI)(R8*1), Z4)
	NN6_MASKM((SI)(R8*2), Z8)
	NN6_MASKM((DI), Z12)
	NN6_MASKM((DI)(R8*1), Z16)
	NN6_MASKM((DI)(R8*2), Z20)

nn6z_8_epires:
	TESTQ $8, DX
	JZ    nn6z_8_store
	MOVQ  res_base+152(FP), SI
	ADDQ  CX, SI
	LEAQ  (SI)(R13*1), DI
	NNZ_RESM((SI), Z29, Z0)
	NNZ_RESM((SI)(R8*1), Z29, Z4)
	NNZ_RESM((SI)(R8*2), Z29, Z8)
	NNZ_RESM((DI), Z29, Z12)
	NNZ_RESM((DI)(R8*1), Z29, Z16)
	NNZ_RESM((DI)(R8*2), Z29, Z20)

nn6z_8_store:
	LEAQ (CX)(R13*1), DI
	VMOVUPD Z0, K1, (CX)
	VMOVUPD Z4, K1, (CX)(R8*1)
	VMOVUPD Z8, K1, (CX)(R8*2)
	VMOVUPD Z12, K1, (DI)
	VMOVUPD Z16, K1, (DI)(R8*1)
	VMOVUPD Z20, K1, (DI)(R8*2)
	ADDQ    $64, CX
	ADDQ    $64, BX
	ADDQ    $64, R14
	SUBQ    $8, N+104(FP)
	JG      nn6z_cols

nn6z_done:
	VZEROUPPER
	RET

// func gemmNN1AVX512(c []float64, a []float64, ak int, b []float64, ldb int, N, K int, bias []float64, mode int, res []float64)
//
// One row of gemmNN, all N columns, from initial values that are C's own
// (mode 0), bias[:N] (mode 1) or +0 (mode 2), as in gemmNN4AVX512:
//
//	for j := 0; j < N; j++ {
//		x := x0(j) // c[j], bias[j] or 0
//		for k := 0; k < K; k++ {
//			x = math.FMA(a[k*ak], b[k*ldb+j], x)
//		}
//		c[j] = x
//	}
//
// Columns go in blocks of 32 (four accumulators), then 8, then a masked
// block of 1-7, each a k-ascending loop of broadcast A times vector B.
//
// Modes 4, 8 and 16 (added to the first) fuse the layer after the
// product into the stores, on the caller's last block of k, as in
// gemmNN4AVX512: ReLU, then the ReLU's backward mask against res or
// the residual add c = res + c (res with C's layout).
//
// Registers: AX a (k=0), SI a at k, R10 ak*8; BX b at the block, DI b at
// k, R11 ldb*8; CX c at the block; R14 bias at the block; DX k
// countdown; R8 columns left; R9 mode&3; Z0-Z3 accumulators, Z16-Z19
// B, Z20 broadcast A, K1 tail mask; the epilogue as gemmNN4AVX512's,
// res_base+136(FP) res - c.
TEXT ·gemmNN1AVX512(SB), NOSPLIT, $0-160
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
	ANDQ $3, R9
	MOVQ res_base+136(FP), DX
	SUBQ CX, DX
	MOVQ DX, res_base+136(FP) // res - c

nn1z_cols:
	CMPQ R8, $32
	JLT  nn1z_8
	CMPQ R9, $1
	JEQ  nn1z_32_bias
	JGT  nn1z_32_zero
	VMOVUPD (CX), Z0
	VMOVUPD 64(CX), Z1
	VMOVUPD 128(CX), Z2
	VMOVUPD 192(CX), Z3
	JMP     nn1z_32_init

nn1z_32_bias:
	VMOVUPD (R14), Z0
	VMOVUPD 64(R14), Z1
	VMOVUPD 128(R14), Z2
	VMOVUPD 192(R14), Z3
	JMP     nn1z_32_init

nn1z_32_zero:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

nn1z_32_init:
	MOVQ    AX, SI
	MOVQ    BX, DI
	MOVQ    K+96(FP), DX

nn1z_32_k:
	VBROADCASTSD (SI), Z20
	VFMADD231PD  (DI), Z20, Z0
	VFMADD231PD  64(DI), Z20, Z1
	VFMADD231PD  128(DI), Z20, Z2
	VFMADD231PD  192(DI), Z20, Z3
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          nn1z_32_k

	// The elementwise layer after the product, on the last block of k
	// only: ReLU (mode&4), as reluAVX512, then the ReLU's backward mask
	// (mode&16), as reluMaskAVX512 against res, or the residual
	// (mode&8), c = res + c as addAVX512; res at c's offsets.
	MOVQ  mode+128(FP), DX
	TESTQ $4, DX
	JZ    nn1z_32_epimask
	VPXORQ Z20, Z20, Z20
	NNZ_RELU4(Z0, Z1, Z2, Z3)

nn1z_32_epimask:
	TESTQ  $16, DX
	JZ     nn1z_32_epires
	VPXORQ Z20, Z20, Z20
	MOVQ   res_base+136(FP), SI
	ADDQ   CX, SI
	NNZ_MASK4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)

nn1z_32_epires:
	TESTQ $8, DX
	JZ    nn1z_32_store
	MOVQ  res_base+136(FP), SI
	ADDQ  CX, SI
	NNZ_RES4((SI), 64(SI), 128(SI), 192(SI), Z0, Z1, Z2, Z3)

nn1z_32_store:
	VMOVUPD Z0, (CX)
	VMOVUPD Z1, 64(CX)
	VMOVUPD Z2, 128(CX)
	VMOVUPD Z3, 192(CX)
	ADDQ    $256, CX
	ADDQ    $256, BX
	ADDQ    $256, R14
	SUBQ    $32, R8
	JMP     nn1z_cols

nn1z_8:
	TESTQ R8, R8
	JZ    nn1z_done
	LEAQ  laneMask<>(SB), SI
	MOVQ  R8, DX
	CMPQ  DX, $8
	JLE   nn1z_mask
	MOVQ  $8, DX

nn1z_mask:
	KMOVW     (SI)(DX*2), K1
	CMPQ      R9, $1
	JEQ       nn1z_8_bias
	JGT       nn1z_8_zero
	VMOVUPD.Z (CX), K1, Z0
	JMP       nn1z_8_init

nn1z_8_bias:
	VMOVUPD.Z (R14), K1, Z0
	JMP       nn1z_8_init

nn1z_8_zero:
	VPXORQ Z0, Z0, Z0

nn1z_8_init:
	MOVQ      AX, SI
	MOVQ      BX, DI
	MOVQ      K+96(FP), DX

nn1z_8_k:
	VMOVUPD.Z    (DI), K1, Z16
	VBROADCASTSD (SI), Z20
	VFMADD231PD  Z16, Z20, Z0
	ADDQ         R10, SI
	ADDQ         R11, DI
	DECQ         DX
	JNZ          nn1z_8_k

	// The elementwise layer after the product, on the last block of k
	// only: ReLU (mode&4), as reluAVX512, then the ReLU's backward mask
	// (mode&16), as reluMaskAVX512 against res, or the residual
	// (mode&8), c = res + c as addAVX512; res at c's offsets.
	MOVQ  mode+128(FP), DX
	TESTQ $4, DX
	JZ    nn1z_8_epimask
	VPXORQ Z20, Z20, Z20
	NNZ_RELU1(Z0)

nn1z_8_epimask:
	TESTQ  $16, DX
	JZ     nn1z_8_epires
	VPXORQ Z20, Z20, Z20
	MOVQ   res_base+136(FP), SI
	ADDQ   CX, SI
	NNZ_MASKM((SI), Z16, Z0)

nn1z_8_epires:
	TESTQ $8, DX
	JZ    nn1z_8_store
	MOVQ  res_base+136(FP), SI
	ADDQ  CX, SI
	NNZ_RESM((SI), Z16, Z0)

nn1z_8_store:
	VMOVUPD Z0, K1, (CX)
	ADDQ    $64, CX
	ADDQ    $64, BX
	ADDQ    $64, R14
	SUBQ    $8, R8
	JG      nn1z_8

nn1z_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// gemmNT
//
// dot8's eight lanes are exactly one ZMM register: element k of a dot
// product goes to lane k%8 of its accumulator. The ragged tail of K%8
// elements is one more step with A and B loaded under the mask K1 and
// the FMA merge-masked by K1, so the lanes it does not reach keep their
// bits exactly.

// NTZ_REDUCE4 adds four dot products (accumulators x0-x3, the columns
// j..j+3 of one row) to the four float64 at addr, each in dot8Reduce's
// order: t_l = s_l + s_l+4, u0 = t0+t2, u1 = t1+t3, r = u0+u1, c += r.
// The four reductions share the shuffles: 256-bit halves of (x0, x1) and
// (x2, x3) are added in pairs, then 128-bit quarters, then the even and
// odd lanes. Z31 holds evenOdd<>, K2 the four-lane mask.
#define NTZ_REDUCE4(x0, x1, x2, x3, addr) \
	VSHUFF64X2 $0x44, x1, x0, Z21; \
	VSHUFF64X2 $0xee, x1, x0, Z22; \
	VADDPD     Z22, Z21, Z21; \
	VSHUFF64X2 $0x44, x3, x2, Z22; \
	VSHUFF64X2 $0xee, x3, x2, Z23; \
	VADDPD     Z23, Z22, Z22; \
	VSHUFF64X2 $0x88, Z22, Z21, Z23; \
	VSHUFF64X2 $0xdd, Z22, Z21, Z24; \
	VADDPD     Z24, Z23, Z23; \
	VPERMPD    Z23, Z31, Z23; \
	VSHUFF64X2 $0xee, Z23, Z23, Z24; \
	VADDPD     Z24, Z23, Z23; \
	VMOVUPD.Z  addr, K5, Z24; \
	VADDPD     Z24, Z23, Z23; \
	VMOVUPD    Z23, K2, addr

// NTZ_REDUCE1 is NTZ_REDUCE4 for one dot product (K3 is the one-lane mask).
#define NTZ_REDUCE1(x0, addr) \
	VSHUFF64X2 $0xee, x0, x0, Z21; \
	VADDPD     Z21, x0, Z21; \
	VSHUFF64X2 $0x01, Z21, Z21, Z22; \
	VADDPD     Z22, Z21, Z21; \
	VPERMILPD  $1, Z21, Z22; \
	VADDPD     Z22, Z21, Z21; \
	VMOVUPD.Z  addr, K6, Z22; \
	VADDPD     Z22, Z21, Z21; \
	VMOVUPD    Z21, K3, addr

// NTZ_SETUP loads the masks and the permutation: K1 the K%8 tail lanes
// (from R9 = K), K2 four lanes, K3 one lane, K5 and K6 the same for
// loading C, Z31 evenOdd<>; R9 becomes K/8, the number of whole steps.
#define NTZ_SETUP \
	LEAQ    laneMask<>(SB), DX; \
	MOVQ    R9, DI; \
	ANDQ    $7, DI; \
	KMOVW   (DX)(DI*2), K1; \
	KMOVW   8(DX), K2; \
	KMOVW   2(DX), K3; \
	SHRQ    $3, R9; \
	VMOVUPD evenOdd<>(SB), Z31; \
	KMOVW   K2, K5; \
	KMOVW   K3, K6

// NTZ_ZERO_START clears K5 and K6, the masks NTZ_REDUCE4 and NTZ_REDUCE1
// load C's old values with, when the flag (a register) is not zero: the
// dot products are then added to +0 instead of C, the same bits as
// clearing C first, without the pass over C that would cost.
#define NTZ_ZERO_START(flag, skip) \
	TESTQ flag, flag; \
	JZ    skip; \
	KXORW K5, K5, K5; \
	KXORW K6, K6, K6; \
skip:

// One step of one column of B (at addr) against four rows of A in
// Z16-Z19: one FMA per lane into each row's accumulator.
#define NTZ_COL4(addr, x0, x1, x2, x3) \
	VMOVUPD     addr, Z20; \
	VFMADD231PD Z20, Z16, x0; \
	VFMADD231PD Z20, Z17, x1; \
	VFMADD231PD Z20, Z18, x2; \
	VFMADD231PD Z20, Z19, x3

// The masked tail step of NTZ_COL4.
#define NTZ_COL4M(addr, x0, x1, x2, x3) \
	VMOVUPD.Z   addr, K1, Z20; \
	VFMADD231PD Z20, Z16, K1, x0; \
	VFMADD231PD Z20, Z17, K1, x1; \
	VFMADD231PD Z20, Z18, K1, x2; \
	VFMADD231PD Z20, Z19, K1, x3

// func gemmNT4AVX512(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, N, K int, zero int)
//
// Four rows of gemmNT, all N columns, added to C's old values or, when
// zero is not 0, to +0 (C's old values are then never read):
//
//	for i := 0; i < 4; i++ {
//		for j := 0; j < N; j++ {
//			c[i*ldc+j] += dot8(a[i*lda:i*lda+K], b[j*ldb:j*ldb+K])
//		}
//	}
//
// Columns go in blocks of 4 (4 rows × 4 columns = 16 accumulators, one
// ZMM of dot8 lanes each), then one at a time. The k loop runs K/8 steps
// of 8: load the four rows of A, then for each column one vector of B
// and four FMAs; the ragged tail is one masked step. The block's 16 dot
// products are then reduced four at a time (NTZ_REDUCE4).
//
// Registers: AX a (k=0), SI a at k, R13 lda*8, R14 3*lda*8; R10 b at
// column j (k=0), BX b at k, DI b at column j+4 (k=0), R11 ldb*8,
// R12 3*ldb*8; CX c at (0, j), R8 ldc*8; DX step countdown; R9 K/8;
// N+96(FP) columns left; Z0-Z15 accumulators (row r, column q in
// Z(4r+q)), Z16-Z19 A, Z20 B, Z21-Z24 reduction, Z31 evenOdd<>.
TEXT ·gemmNT4AVX512(SB), NOSPLIT, $0-120
	MOVQ c_base+0(FP), CX
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	MOVQ a_base+32(FP), AX
	MOVQ lda+56(FP), R13
	SHLQ $3, R13
	LEAQ (R13)(R13*2), R14
	MOVQ b_base+64(FP), R10
	MOVQ ldb+88(FP), R11
	SHLQ $3, R11
	LEAQ (R11)(R11*2), R12
	MOVQ K+104(FP), R9
	NTZ_SETUP
	MOVQ zero+112(FP), DX
	NTZ_ZERO_START(DX, nt4z_cols)

	CMPQ N+96(FP), $4
	JLT  nt4z_1
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
	MOVQ   AX, SI
	MOVQ   R10, BX
	MOVQ   R9, DX
	TESTQ  DX, DX
	JZ     nt4z_4_tail

nt4z_4_k:
	VMOVUPD (SI), Z16
	VMOVUPD (SI)(R13*1), Z17
	VMOVUPD (SI)(R13*2), Z18
	VMOVUPD (SI)(R14*1), Z19
	NTZ_COL4((BX), Z0, Z4, Z8, Z12)
	NTZ_COL4((BX)(R11*1), Z1, Z5, Z9, Z13)
	NTZ_COL4((BX)(R11*2), Z2, Z6, Z10, Z14)
	NTZ_COL4((BX)(R12*1), Z3, Z7, Z11, Z15)
	ADDQ    $64, SI
	ADDQ    $64, BX
	DECQ    DX
	JNZ     nt4z_4_k

nt4z_4_tail:
	KORTESTW  K1, K1
	JZ        nt4z_4_reduce
	VMOVUPD.Z (SI), K1, Z16
	VMOVUPD.Z (SI)(R13*1), K1, Z17
	VMOVUPD.Z (SI)(R13*2), K1, Z18
	VMOVUPD.Z (SI)(R14*1), K1, Z19
	NTZ_COL4M((BX), Z0, Z4, Z8, Z12)
	NTZ_COL4M((BX)(R11*1), Z1, Z5, Z9, Z13)
	NTZ_COL4M((BX)(R11*2), Z2, Z6, Z10, Z14)
	NTZ_COL4M((BX)(R12*1), Z3, Z7, Z11, Z15)

nt4z_4_reduce:
	NTZ_REDUCE4(Z0, Z1, Z2, Z3, (CX))
	NTZ_REDUCE4(Z4, Z5, Z6, Z7, (CX)(R8*1))
	NTZ_REDUCE4(Z8, Z9, Z10, Z11, (CX)(R8*2))
	LEAQ (CX)(R8*2), DX
	NTZ_REDUCE4(Z12, Z13, Z14, Z15, (DX)(R8*1))
	ADDQ $32, CX
	LEAQ (R10)(R11*4), R10
	SUBQ $4, N+96(FP)
	JMP  nt4z_cols

nt4z_1:
	CMPQ N+96(FP), $0
	JEQ  nt4z_done
	VPXORQ Z0, Z0, Z0
	VPXORQ Z4, Z4, Z4
	VPXORQ Z8, Z8, Z8
	VPXORQ Z12, Z12, Z12
	MOVQ   AX, SI
	MOVQ   R10, BX
	MOVQ   R9, DX
	TESTQ  DX, DX
	JZ     nt4z_1_tail

nt4z_1_k:
	VMOVUPD (SI), Z16
	VMOVUPD (SI)(R13*1), Z17
	VMOVUPD (SI)(R13*2), Z18
	VMOVUPD (SI)(R14*1), Z19
	NTZ_COL4((BX), Z0, Z4, Z8, Z12)
	ADDQ    $64, SI
	ADDQ    $64, BX
	DECQ    DX
	JNZ     nt4z_1_k

nt4z_1_tail:
	KORTESTW  K1, K1
	JZ        nt4z_1_reduce
	VMOVUPD.Z (SI), K1, Z16
	VMOVUPD.Z (SI)(R13*1), K1, Z17
	VMOVUPD.Z (SI)(R13*2), K1, Z18
	VMOVUPD.Z (SI)(R14*1), K1, Z19
	NTZ_COL4M((BX), Z0, Z4, Z8, Z12)

nt4z_1_reduce:
	NTZ_REDUCE1(Z0, (CX))
	NTZ_REDUCE1(Z4, (CX)(R8*1))
	NTZ_REDUCE1(Z8, (CX)(R8*2))
	LEAQ (CX)(R8*2), DX
	NTZ_REDUCE1(Z12, (DX)(R8*1))
	ADDQ $8, CX
	ADDQ R11, R10
	DECQ N+96(FP)
	JMP  nt4z_1

nt4z_done:
	VZEROUPPER
	RET

// One step of four columns of B (base, base+ldb, +2ldb, +3ldb) against
// the row of A in Z16.
#define NTZ_ROW4(base, x0, x1, x2, x3) \
	VFMADD231PD (base), Z16, x0; \
	VFMADD231PD (base)(R11*1), Z16, x1; \
	VFMADD231PD (base)(R11*2), Z16, x2; \
	VFMADD231PD (base)(R12*1), Z16, x3

// The masked tail step of NTZ_ROW4 (A in Z16 already masked).
#define NTZ_ROW4M(base, x0, x1, x2, x3) \
	VMOVUPD.Z   (base), K1, Z20; \
	VFMADD231PD Z20, Z16, K1, x0; \
	VMOVUPD.Z   (base)(R11*1), K1, Z20; \
	VFMADD231PD Z20, Z16, K1, x1; \
	VMOVUPD.Z   (base)(R11*2), K1, Z20; \
	VFMADD231PD Z20, Z16, K1, x2; \
	VMOVUPD.Z   (base)(R12*1), K1, Z20; \
	VFMADD231PD Z20, Z16, K1, x3

// func gemmNT1AVX512(c []float64, a []float64, b []float64, ldb int, N, K int, zero int)
//
// One row of gemmNT, all N columns:
//
//	for j := 0; j < N; j++ {
//		c[j] += dot8(a[:K], b[j*ldb:j*ldb+K])
//	}
//
// Columns go in blocks of 8 (eight accumulators), then 4, then one at a
// time; the k loop, the tail and the reductions are as in gemmNT4AVX512.
//
// Registers: AX a (k=0), SI a at k; R10 b at column j (k=0), BX b at k,
// DI b at column j+4 at k, R11 ldb*8, R12 3*ldb*8; CX c at j; DX step
// countdown; R9 K/8; R8 columns left; Z0-Z7 accumulators, Z16 A, Z20 B,
// Z21-Z24 reduction, Z31 evenOdd<>.
TEXT ·gemmNT1AVX512(SB), NOSPLIT, $0-104
	MOVQ c_base+0(FP), CX
	MOVQ a_base+24(FP), AX
	MOVQ b_base+48(FP), R10
	MOVQ ldb+72(FP), R11
	SHLQ $3, R11
	LEAQ (R11)(R11*2), R12
	MOVQ N+80(FP), R8
	MOVQ K+88(FP), R9
	NTZ_SETUP
	MOVQ zero+96(FP), DX
	NTZ_ZERO_START(DX, nt1z_cols)

	CMPQ R8, $8
	JLT  nt1z_4
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	MOVQ   AX, SI
	MOVQ   R10, BX
	LEAQ   (R10)(R11*4), DI
	MOVQ   R9, DX
	TESTQ  DX, DX
	JZ     nt1z_8_tail

nt1z_8_k:
	VMOVUPD (SI), Z16
	NTZ_ROW4(BX, Z0, Z1, Z2, Z3)
	NTZ_ROW4(DI, Z4, Z5, Z6, Z7)
	ADDQ    $64, SI
	ADDQ    $64, BX
	ADDQ    $64, DI
	DECQ    DX
	JNZ     nt1z_8_k

nt1z_8_tail:
	KORTESTW  K1, K1
	JZ        nt1z_8_reduce
	VMOVUPD.Z (SI), K1, Z16
	NTZ_ROW4M(BX, Z0, Z1, Z2, Z3)
	NTZ_ROW4M(DI, Z4, Z5, Z6, Z7)

nt1z_8_reduce:
	NTZ_REDUCE4(Z0, Z1, Z2, Z3, (CX))
	NTZ_REDUCE4(Z4, Z5, Z6, Z7, 32(CX))
	ADDQ $64, CX
	LEAQ (R10)(R11*8), R10
	SUBQ $8, R8
	JMP  nt1z_cols

nt1z_4:
	CMPQ R8, $4
	JLT  nt1z_1
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	MOVQ   AX, SI
	MOVQ   R10, BX
	MOVQ   R9, DX
	TESTQ  DX, DX
	JZ     nt1z_4_tail

nt1z_4_k:
	VMOVUPD (SI), Z16
	NTZ_ROW4(BX, Z0, Z1, Z2, Z3)
	ADDQ    $64, SI
	ADDQ    $64, BX
	DECQ    DX
	JNZ     nt1z_4_k

nt1z_4_tail:
	KORTESTW  K1, K1
	JZ        nt1z_4_reduce
	VMOVUPD.Z (SI), K1, Z16
	NTZ_ROW4M(BX, Z0, Z1, Z2, Z3)

nt1z_4_reduce:
	NTZ_REDUCE4(Z0, Z1, Z2, Z3, (CX))
	ADDQ $32, CX
	LEAQ (R10)(R11*4), R10
	SUBQ $4, R8

nt1z_1:
	TESTQ R8, R8
	JZ    nt1z_done
	VPXORQ Z0, Z0, Z0
	MOVQ   AX, SI
	MOVQ   R10, BX
	MOVQ   R9, DX
	TESTQ  DX, DX
	JZ     nt1z_1_tail

nt1z_1_k:
	VMOVUPD     (SI), Z16
	VFMADD231PD (BX), Z16, Z0
	ADDQ        $64, SI
	ADDQ        $64, BX
	DECQ        DX
	JNZ         nt1z_1_k

nt1z_1_tail:
	KORTESTW    K1, K1
	JZ          nt1z_1_reduce
	VMOVUPD.Z   (SI), K1, Z16
	VMOVUPD.Z   (BX), K1, Z20
	VFMADD231PD Z20, Z16, K1, Z0

nt1z_1_reduce:
	NTZ_REDUCE1(Z0, (CX))
	ADDQ $8, CX
	ADDQ R11, R10
	DECQ R8
	JMP  nt1z_1

nt1z_done:
	VZEROUPPER
	RET
