//go:build amd64 && gc && !purego

#include "textflag.h"

// The AVX2+FMA kernels of gemmNN over packed operands (gemm_pack_amd64.go
// packs and blocks; see doc.go for the order every output must follow).
// A block of A (rows in tiles of four) and a block of B (columns in
// panels of 12 or 8) are first copied into contiguous buffers, k-major,
// so that the product reads both as streams: a panel of B (kc × 12,
// 18 KB at kc = 192) stays in L1 while every tile of A (kc × 4, read
// from L2) sweeps it, and no load of the k loop depends on ldb or ai.
// Unpacked, B's rows lie ldb apart, at 4 KB strides for 512 columns, so
// that every row of a panel falls in the same L1 set and the panel never
// stays in L1. Each output is still one chain of fused multiply-adds
// over k ascending in one lane, from C's value, the bias or +0.
//
// Packed layouts: pa holds tile t's element (row r, step k) at
// t*kc*4 + k*4 + r; pb holds panel p's element (step k, column j) at
// p*kc*w + k*w + j for panels of width w. The callers guarantee
// kc >= 1, mt >= 1, nc a positive multiple of the panel width, and that
// every element of C (mt*4 rows of nc) and of aux (laid out as C) is
// inside its slice.

// One row's three multiply-adds of a k step: its element of A (at
// addr) broadcast against the three vectors of B in Y12-Y14.
#define PK_ROW3(addr, x0, x1, x2) \
	VBROADCASTSD addr, Y15; \
	VFMADD231PD  Y12, Y15, x0; \
	VFMADD231PD  Y13, Y15, x1; \
	VFMADD231PD  Y14, Y15, x2

#define PK_ROW2(addr, x0, x1) \
	VBROADCASTSD addr, Y15; \
	VFMADD231PD  Y12, Y15, x0; \
	VFMADD231PD  Y13, Y15, x1

// PK_K12 is one k step of a 4×12 tile: B's 12 values at bo(DI), the
// tile's four values of A at ao(SI).
#define PK_K12(ao, a8, a16, a24, bo, b32, b64) \
	VMOVUPD bo(DI), Y12; \
	VMOVUPD b32(DI), Y13; \
	VMOVUPD b64(DI), Y14; \
	PK_ROW3(ao(SI), Y0, Y1, Y2); \
	PK_ROW3(a8(SI), Y3, Y4, Y5); \
	PK_ROW3(a16(SI), Y6, Y7, Y8); \
	PK_ROW3(a24(SI), Y9, Y10, Y11)

// PK_K8 is one k step of a 4×8 tile.
#define PK_K8(ao, a8, a16, a24, bo, b32) \
	VMOVUPD bo(DI), Y12; \
	VMOVUPD b32(DI), Y13; \
	PK_ROW2(ao(SI), Y0, Y1); \
	PK_ROW2(a8(SI), Y2, Y3); \
	PK_ROW2(a16(SI), Y4, Y5); \
	PK_ROW2(a24(SI), Y6, Y7)

// Loads and stores of a tile's rows at base, base+R8, base+2·R8 and
// base+R9 (R8 = ldc*8, R9 = 3*ldc*8).
#define PK_LOAD12(base) \
	VMOVUPD (base), Y0; \
	VMOVUPD 32(base), Y1; \
	VMOVUPD 64(base), Y2; \
	VMOVUPD (base)(R8*1), Y3; \
	VMOVUPD 32(base)(R8*1), Y4; \
	VMOVUPD 64(base)(R8*1), Y5; \
	VMOVUPD (base)(R8*2), Y6; \
	VMOVUPD 32(base)(R8*2), Y7; \
	VMOVUPD 64(base)(R8*2), Y8; \
	VMOVUPD (base)(R9*1), Y9; \
	VMOVUPD 32(base)(R9*1), Y10; \
	VMOVUPD 64(base)(R9*1), Y11

#define PK_STORE12(base) \
	VMOVUPD Y0, (base); \
	VMOVUPD Y1, 32(base); \
	VMOVUPD Y2, 64(base); \
	VMOVUPD Y3, (base)(R8*1); \
	VMOVUPD Y4, 32(base)(R8*1); \
	VMOVUPD Y5, 64(base)(R8*1); \
	VMOVUPD Y6, (base)(R8*2); \
	VMOVUPD Y7, 32(base)(R8*2); \
	VMOVUPD Y8, 64(base)(R8*2); \
	VMOVUPD Y9, (base)(R9*1); \
	VMOVUPD Y10, 32(base)(R9*1); \
	VMOVUPD Y11, 64(base)(R9*1)

#define PK_LOAD8(base) \
	VMOVUPD (base), Y0; \
	VMOVUPD 32(base), Y1; \
	VMOVUPD (base)(R8*1), Y2; \
	VMOVUPD 32(base)(R8*1), Y3; \
	VMOVUPD (base)(R8*2), Y4; \
	VMOVUPD 32(base)(R8*2), Y5; \
	VMOVUPD (base)(R9*1), Y6; \
	VMOVUPD 32(base)(R9*1), Y7

#define PK_STORE8(base) \
	VMOVUPD Y0, (base); \
	VMOVUPD Y1, 32(base); \
	VMOVUPD Y2, (base)(R8*1); \
	VMOVUPD Y3, 32(base)(R8*1); \
	VMOVUPD Y4, (base)(R8*2); \
	VMOVUPD Y5, 32(base)(R8*2); \
	VMOVUPD Y6, (base)(R9*1); \
	VMOVUPD Y7, 32(base)(R9*1)

// The epilogue's steps on one accumulator x, with Y15 = +0 and Y14 free:
// PK_RELU is reluAVX2's (VMAXPD keeps a NaN or a zero of x, adding +0
// turns -0 into +0), PK_MASK reluMaskAVX2's against the mask at addr
// (x kept where it is > 0, +0 elsewhere and for a NaN), PK_RES addAVX2's
// x = res + x with res at addr.
#define PK_RELU(x) \
	VMAXPD x, Y15, x; \
	VADDPD Y15, x, x

#define PK_MASK(addr, x) \
	VMOVUPD addr, Y14; \
	VCMPPD  $30, Y15, Y14, Y14; \
	VANDPD  Y14, x, x

#define PK_RES(addr, x) \
	VMOVUPD addr, Y14; \
	VADDPD  x, Y14, x

#define PK_MASK12(base) \
	PK_MASK((base), Y0); \
	PK_MASK(32(base), Y1); \
	PK_MASK(64(base), Y2); \
	PK_MASK((base)(R8*1), Y3); \
	PK_MASK(32(base)(R8*1), Y4); \
	PK_MASK(64(base)(R8*1), Y5); \
	PK_MASK((base)(R8*2), Y6); \
	PK_MASK(32(base)(R8*2), Y7); \
	PK_MASK(64(base)(R8*2), Y8); \
	PK_MASK((base)(R9*1), Y9); \
	PK_MASK(32(base)(R9*1), Y10); \
	PK_MASK(64(base)(R9*1), Y11)

#define PK_RES12(base) \
	PK_RES((base), Y0); \
	PK_RES(32(base), Y1); \
	PK_RES(64(base), Y2); \
	PK_RES((base)(R8*1), Y3); \
	PK_RES(32(base)(R8*1), Y4); \
	PK_RES(64(base)(R8*1), Y5); \
	PK_RES((base)(R8*2), Y6); \
	PK_RES(32(base)(R8*2), Y7); \
	PK_RES(64(base)(R8*2), Y8); \
	PK_RES((base)(R9*1), Y9); \
	PK_RES(32(base)(R9*1), Y10); \
	PK_RES(64(base)(R9*1), Y11)

#define PK_MASK8(base) \
	PK_MASK((base), Y0); \
	PK_MASK(32(base), Y1); \
	PK_MASK((base)(R8*1), Y2); \
	PK_MASK(32(base)(R8*1), Y3); \
	PK_MASK((base)(R8*2), Y4); \
	PK_MASK(32(base)(R8*2), Y5); \
	PK_MASK((base)(R9*1), Y6); \
	PK_MASK(32(base)(R9*1), Y7)

#define PK_RES8(base) \
	PK_RES((base), Y0); \
	PK_RES(32(base), Y1); \
	PK_RES((base)(R8*1), Y2); \
	PK_RES(32(base)(R8*1), Y3); \
	PK_RES((base)(R8*2), Y4); \
	PK_RES(32(base)(R8*2), Y5); \
	PK_RES((base)(R9*1), Y6); \
	PK_RES(32(base)(R9*1), Y7)

// PK_PREFETCH touches the next tile's rows of C (four rows of up to 96
// bytes, 4·ldc*8 on from base), so that its loads at the start of the
// next tile, which every multiply-add of that tile waits for, find them
// in L1. Prefetches change no result and never fault.
#define PK_PREFETCH(base, last) \
	LEAQ       (base)(R8*4), R11; \
	PREFETCHT0 (R11); \
	PREFETCHT0 last(R11); \
	PREFETCHT0 (R11)(R8*1); \
	PREFETCHT0 last(R11)(R8*1); \
	PREFETCHT0 (R11)(R8*2); \
	PREFETCHT0 last(R11)(R8*2); \
	PREFETCHT0 (R11)(R9*1); \
	PREFETCHT0 last(R11)(R9*1)

// func gemmNNPack12AVX2(c []float64, ldc int, pa, pb []float64, mt, nc, kc int, bias []float64, mode int, aux []float64)
//
// mt tiles of four rows of C by nc columns (a multiple of 12), from
// packed A (pa, mt tiles of kc steps) and packed B (pb, nc/12 panels of
// kc steps), the chains started from C (mode&3 = 0), bias[j] (1) or +0
// (2), and epi's layers (mode&EpiReLU, mode&EpiMask, mode&EpiResidual)
// applied as C is stored, aux laid out as C:
//
//	for i := 0; i < 4*mt; i++ {
//		for j := 0; j < nc; j++ {
//			x := x0(i, j) // c[i*ldc+j], bias[j] or 0
//			for k := 0; k < kc; k++ {
//				x = math.FMA(pa[(i/4)*kc*4+k*4+i%4], pb[(j/12)*kc*12+k*12+j%12], x)
//			}
//			if mode&EpiReLU != 0 {
//				x = max(x, 0)
//			}
//			if mode&EpiMask != 0 && !(aux[i*ldc+j] > 0) {
//				x = 0
//			}
//			if mode&EpiResidual != 0 {
//				x = aux[i*ldc+j] + x
//			}
//			c[i*ldc+j] = x
//		}
//	}
//
// Panels are the outer loop and tiles the inner one, so a panel is read
// from L1 by every tile. The k loop goes two steps at a time.
//
// Registers: R14 c at the panel, DX c at the tile, R8 ldc*8, R9
// 3*ldc*8, R13 aux - c; AX pa at the tile, SI pa at k; BX pb at the
// panel, DI pb at k; R12 bias at the panel; R10 tiles left; CX k
// countdown, then the mode; R11 scratch; Y0-Y11 accumulators (row r in
// Y3r-Y3r+2), Y12-Y14 B, Y15 broadcast A (the epilogue's +0).
TEXT ·gemmNNPack12AVX2(SB), NOSPLIT, $0-160
	MOVQ c_base+0(FP), R14
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ pb_base+56(FP), BX
	MOVQ bias_base+104(FP), R12
	MOVQ aux_base+136(FP), R13
	SUBQ R14, R13

pk12_panel:
	MOVQ R14, DX
	MOVQ pa_base+32(FP), AX
	MOVQ mt+80(FP), R10

pk12_tile:
	MOVQ mode+128(FP), CX
	ANDQ $3, CX
	CMPQ CX, $1
	JEQ  pk12_bias
	JGT  pk12_zero
	PK_LOAD12(DX)
	JMP  pk12_init

pk12_bias:
	VMOVUPD (R12), Y0
	VMOVUPD 32(R12), Y1
	VMOVUPD 64(R12), Y2
	VMOVAPD Y0, Y3
	VMOVAPD Y1, Y4
	VMOVAPD Y2, Y5
	VMOVAPD Y0, Y6
	VMOVAPD Y1, Y7
	VMOVAPD Y2, Y8
	VMOVAPD Y0, Y9
	VMOVAPD Y1, Y10
	VMOVAPD Y2, Y11
	JMP     pk12_init

pk12_zero:
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

pk12_init:
	CMPQ R10, $1
	JEQ  pk12_nopf
	PK_PREFETCH(DX, 88)

pk12_nopf:
	MOVQ AX, SI
	MOVQ BX, DI
	MOVQ kc+96(FP), CX
	SHRQ $1, CX
	JZ   pk12_k1

pk12_k2:
	PK_K12(0, 8, 16, 24, 0, 32, 64)
	PK_K12(32, 40, 48, 56, 96, 128, 160)
	ADDQ $64, SI
	ADDQ $192, DI
	DECQ CX
	JNZ  pk12_k2

pk12_k1:
	TESTQ $1, kc+96(FP)
	JZ    pk12_epi
	PK_K12(0, 8, 16, 24, 0, 32, 64)
	ADDQ  $32, SI
	ADDQ  $96, DI

pk12_epi:
	MOVQ   mode+128(FP), CX
	TESTQ  $28, CX
	JZ     pk12_store
	VXORPD Y15, Y15, Y15
	TESTQ  $4, CX
	JZ     pk12_mask
	PK_RELU(Y0)
	PK_RELU(Y1)
	PK_RELU(Y2)
	PK_RELU(Y3)
	PK_RELU(Y4)
	PK_RELU(Y5)
	PK_RELU(Y6)
	PK_RELU(Y7)
	PK_RELU(Y8)
	PK_RELU(Y9)
	PK_RELU(Y10)
	PK_RELU(Y11)

pk12_mask:
	LEAQ  (DX)(R13*1), R11
	TESTQ $16, CX
	JZ    pk12_res
	PK_MASK12(R11)

pk12_res:
	TESTQ $8, CX
	JZ    pk12_store
	PK_RES12(R11)

pk12_store:
	PK_STORE12(DX)
	MOVQ SI, AX
	LEAQ (DX)(R8*4), DX
	DECQ R10
	JNZ  pk12_tile

	MOVQ DI, BX
	ADDQ $96, R14
	ADDQ $96, R12
	SUBQ $12, nc+88(FP)
	JNZ  pk12_panel
	VZEROUPPER
	RET

// func gemmNNPack8AVX2(c []float64, ldc int, pa, pb []float64, mt, nc, kc int, bias []float64, mode int, aux []float64)
//
// gemmNNPack12AVX2's Go loop above with panels of 8 columns (nc a
// multiple of 8): pb[(j/8)*kc*8+k*8+j%8]. Four rows of 8 columns take 8
// accumulators, Y0-Y7 (row r in Y2r, Y2r+1); the registers are
// otherwise gemmNNPack12AVX2's.
TEXT ·gemmNNPack8AVX2(SB), NOSPLIT, $0-160
	MOVQ c_base+0(FP), R14
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ pb_base+56(FP), BX
	MOVQ bias_base+104(FP), R12
	MOVQ aux_base+136(FP), R13
	SUBQ R14, R13

pk8_panel:
	MOVQ R14, DX
	MOVQ pa_base+32(FP), AX
	MOVQ mt+80(FP), R10

pk8_tile:
	MOVQ mode+128(FP), CX
	ANDQ $3, CX
	CMPQ CX, $1
	JEQ  pk8_bias
	JGT  pk8_zero
	PK_LOAD8(DX)
	JMP  pk8_init

pk8_bias:
	VMOVUPD (R12), Y0
	VMOVUPD 32(R12), Y1
	VMOVAPD Y0, Y2
	VMOVAPD Y1, Y3
	VMOVAPD Y0, Y4
	VMOVAPD Y1, Y5
	VMOVAPD Y0, Y6
	VMOVAPD Y1, Y7
	JMP     pk8_init

pk8_zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

pk8_init:
	CMPQ R10, $1
	JEQ  pk8_nopf
	PK_PREFETCH(DX, 56)

pk8_nopf:
	MOVQ AX, SI
	MOVQ BX, DI
	MOVQ kc+96(FP), CX
	SHRQ $1, CX
	JZ   pk8_k1

pk8_k2:
	PK_K8(0, 8, 16, 24, 0, 32)
	PK_K8(32, 40, 48, 56, 64, 96)
	ADDQ $64, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  pk8_k2

pk8_k1:
	TESTQ $1, kc+96(FP)
	JZ    pk8_epi
	PK_K8(0, 8, 16, 24, 0, 32)
	ADDQ  $32, SI
	ADDQ  $64, DI

pk8_epi:
	MOVQ   mode+128(FP), CX
	TESTQ  $28, CX
	JZ     pk8_store
	VXORPD Y15, Y15, Y15
	TESTQ  $4, CX
	JZ     pk8_mask
	PK_RELU(Y0)
	PK_RELU(Y1)
	PK_RELU(Y2)
	PK_RELU(Y3)
	PK_RELU(Y4)
	PK_RELU(Y5)
	PK_RELU(Y6)
	PK_RELU(Y7)

pk8_mask:
	LEAQ  (DX)(R13*1), R11
	TESTQ $16, CX
	JZ    pk8_res
	PK_MASK8(R11)

pk8_res:
	TESTQ $8, CX
	JZ    pk8_store
	PK_RES8(R11)

pk8_store:
	PK_STORE8(DX)
	MOVQ SI, AX
	LEAQ (DX)(R8*4), DX
	DECQ R10
	JNZ  pk8_tile

	MOVQ DI, BX
	ADDQ $64, R14
	ADDQ $64, R12
	SUBQ $8, nc+88(FP)
	JNZ  pk8_panel
	VZEROUPPER
	RET

// func packBAVX2(pb, b []float64, ldb, kc, n12, n8 int)
//
// Copies kc rows of B (ldb apart) into n12 panels of 12 columns, then
// n8 panels of 8:
//
//	for k := 0; k < kc; k++ {
//		for p := 0; p < n12; p++ {
//			copy(pb[p*kc*12+k*12:][:12], b[k*ldb+p*12:])
//		}
//		o, j := n12*kc*12, n12*12
//		for p := 0; p < n8; p++ {
//			copy(pb[o+p*kc*8+k*8:][:8], b[k*ldb+j+p*8:])
//		}
//	}
//
// Row by row, so that B is read in order, each cache line once.
//
// Registers: BX b at row k, SI b along it; R9 pb at step k of the first
// panel, DI pb at step k of the panel; R11 ldb*8, R12 kc*96, R13 kc*64,
// R14 pb's panels of 8 at step k; CX rows left, DX panels left.
TEXT ·packBAVX2(SB), NOSPLIT, $0-80
	MOVQ pb_base+0(FP), R9
	MOVQ b_base+24(FP), BX
	MOVQ ldb+48(FP), R11
	SHLQ $3, R11
	MOVQ kc+56(FP), CX
	LEAQ (CX)(CX*2), R12
	SHLQ $5, R12
	MOVQ CX, R13
	SHLQ $6, R13
	MOVQ n12+64(FP), R14
	IMULQ R12, R14
	ADDQ R9, R14

pb_row:
	MOVQ  BX, SI
	MOVQ  R9, DI
	MOVQ  n12+64(FP), DX
	TESTQ DX, DX
	JZ    pb_row8

pb_12:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	ADDQ    $96, SI
	ADDQ    R12, DI
	DECQ    DX
	JNZ     pb_12

pb_row8:
	MOVQ  R14, DI
	MOVQ  n8+72(FP), DX
	TESTQ DX, DX
	JZ    pb_next

pb_8:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    $64, SI
	ADDQ    R13, DI
	DECQ    DX
	JNZ     pb_8

pb_next:
	ADDQ R11, BX
	ADDQ $96, R9
	ADDQ $64, R14
	DECQ CX
	JNZ  pb_row
	VZEROUPPER
	RET

// func packAAVX2(pa, a []float64, ai, kc, mt int)
//
// Copies mt tiles of four rows of A (rows ai apart, steps contiguous)
// into pa, k-major within a tile:
//
//	for t := 0; t < mt; t++ {
//		for k := 0; k < kc; k++ {
//			for r := 0; r < 4; r++ {
//				pa[t*kc*4+k*4+r] = a[(4*t+r)*ai+k]
//			}
//		}
//	}
//
// Four steps of four rows go through registers as a 4×4 transpose; the
// last kc%4 steps one element at a time.
//
// Registers: DI pa, BX a at the tile, SI a at k for row 0, R8 ai*8, R9
// 3*ai*8, CX groups of four steps left, DX k%4 left, R10 tiles left.
TEXT ·packAAVX2(SB), NOSPLIT, $0-72
	MOVQ pa_base+0(FP), DI
	MOVQ a_base+24(FP), BX
	MOVQ ai+48(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ mt+64(FP), R10

pa_tile:
	MOVQ BX, SI
	MOVQ kc+56(FP), CX
	SHRQ $2, CX
	JZ   pa_rest

pa_k4:
	VMOVUPD     (SI), Y0
	VMOVUPD     (SI)(R8*1), Y1
	VMOVUPD     (SI)(R8*2), Y2
	VMOVUPD     (SI)(R9*1), Y3
	VUNPCKLPD   Y1, Y0, Y4
	VUNPCKHPD   Y1, Y0, Y5
	VUNPCKLPD   Y3, Y2, Y6
	VUNPCKHPD   Y3, Y2, Y7
	VPERM2F128  $0x20, Y6, Y4, Y0
	VPERM2F128  $0x20, Y7, Y5, Y1
	VPERM2F128  $0x31, Y6, Y4, Y2
	VPERM2F128  $0x31, Y7, Y5, Y3
	VMOVUPD     Y0, (DI)
	VMOVUPD     Y1, 32(DI)
	VMOVUPD     Y2, 64(DI)
	VMOVUPD     Y3, 96(DI)
	ADDQ        $32, SI
	ADDQ        $128, DI
	DECQ        CX
	JNZ         pa_k4

pa_rest:
	MOVQ kc+56(FP), DX
	ANDQ $3, DX
	JZ   pa_next

pa_k1:
	MOVSD (SI), X0
	MOVSD (SI)(R8*1), X1
	MOVSD (SI)(R8*2), X2
	MOVSD (SI)(R9*1), X3
	MOVSD X0, (DI)
	MOVSD X1, 8(DI)
	MOVSD X2, 16(DI)
	MOVSD X3, 24(DI)
	ADDQ  $8, SI
	ADDQ  $32, DI
	DECQ  DX
	JNZ   pa_k1

pa_next:
	LEAQ (BX)(R8*4), BX
	DECQ R10
	JNZ  pa_tile
	VZEROUPPER
	RET

// func packATAVX2(pa, a []float64, ak, kc, mt int)
//
// packAAVX2 for an A whose rows are contiguous (A's element (i, k) at
// a[i+k*ak], a transposed operand): a tile's four values of one step
// are one vector.
//
//	for k := 0; k < kc; k++ {
//		for t := 0; t < mt; t++ {
//			for r := 0; r < 4; r++ {
//				pa[t*kc*4+k*4+r] = a[4*t+r+k*ak]
//			}
//		}
//	}
//
// Step by step, so that each step's run of 4*mt values is read in order,
// four tiles (128 bytes) at a time.
//
// Registers: BX a at step k, SI a along it; R9 pa at step k of tile 0,
// DI pa at step k of the tile; R8 ak*8, R11 kc*32, R12 3*kc*32; CX steps
// left, DX tiles left.
TEXT ·packATAVX2(SB), NOSPLIT, $0-72
	MOVQ pa_base+0(FP), R9
	MOVQ a_base+24(FP), BX
	MOVQ ak+48(FP), R8
	SHLQ $3, R8
	MOVQ kc+56(FP), CX
	MOVQ CX, R11
	SHLQ $5, R11
	LEAQ (R11)(R11*2), R12

pat_k:
	MOVQ BX, SI
	MOVQ R9, DI
	MOVQ mt+64(FP), DX
	CMPQ DX, $4
	JLT  pat_1

pat_4:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, (DI)(R11*1)
	VMOVUPD Y2, (DI)(R11*2)
	VMOVUPD Y3, (DI)(R12*1)
	ADDQ    $128, SI
	LEAQ    (DI)(R11*4), DI
	SUBQ    $4, DX
	CMPQ    DX, $4
	JGE     pat_4

pat_1:
	TESTQ DX, DX
	JZ    pat_next

pat_1loop:
	VMOVUPD (SI), Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    R11, DI
	DECQ    DX
	JNZ     pat_1loop

pat_next:
	ADDQ R8, BX
	ADDQ $32, R9
	DECQ CX
	JNZ  pat_k
	VZEROUPPER
	RET
