//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX2+FMA twins of the AVX-512 LayerNorm loops (layernorm_avx512_amd64.s),
// four lanes to a YMM register, for CPUs without AVX-512. Each lane does
// what the Go twin (layernorm.go) does to one element (in lnColumns, one
// column's chain does what the Go twin does to it, row by row), with the
// same operations in the same order and a fused multiply-add exactly where
// the Go twin writes math.FMA, so the bits are the Go twin's. The last
// len%4 elements go through VMASKMOVPD (masked lanes load +0 and are
// never stored). The hooks (layernorm_amd64.go) check the lengths.

// vecMask<>+32-8n, 32 bytes long, is the VMASKMOVPD mask of lanes
// 0..n-1 (n = 0..4).
DATA vecMask<>+0x00(SB)/8, $-1
DATA vecMask<>+0x08(SB)/8, $-1
DATA vecMask<>+0x10(SB)/8, $-1
DATA vecMask<>+0x18(SB)/8, $-1
DATA vecMask<>+0x20(SB)/8, $0
DATA vecMask<>+0x28(SB)/8, $0
DATA vecMask<>+0x30(SB)/8, $0
DATA vecMask<>+0x38(SB)/8, $0
GLOBL vecMask<>(SB), RODATA|NOPTR, $64

// VEC_TAIL jumps to done when no element is left (n = len in CX, the
// full blocks done up to AX) and otherwise sets the mask reg to the
// len%4 lanes left, clobbering DX and R8.
#define VEC_TAIL(reg, done) \
	MOVQ    CX, DX; \
	ANDQ    $3, DX; \
	JZ      done; \
	LEAQ    vecMask<>+32(SB), R8; \
	NEGQ    DX; \
	VMOVDQU (R8)(DX*8), reg

// func lnNormalizeAVX2(o, x, w, b []float64, mu, r float64)
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
TEXT ·lnNormalizeAVX2(SB), NOSPLIT, $0-112
	MOVQ         o_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	MOVQ         w_base+48(FP), R9
	MOVQ         b_base+72(FP), R10
	VBROADCASTSD mu+96(FP), Y12
	VBROADCASTSD r+104(FP), Y13
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JZ           lnn_tail

lnn_loop:
	VMOVUPD     (SI)(AX*8), Y0
	VSUBPD      Y12, Y0, Y0
	VMULPD      Y13, Y0, Y0
	VMOVUPD     (R9)(AX*8), Y1
	VFMADD213PD (R10)(AX*8), Y1, Y0
	VMOVUPD     Y0, (DI)(AX*8)
	ADDQ        $4, AX
	CMPQ        AX, BX
	JLT         lnn_loop

lnn_tail:
	VEC_TAIL(Y15, lnn_done)
	VMASKMOVPD  (SI)(AX*8), Y15, Y0
	VSUBPD      Y12, Y0, Y0
	VMULPD      Y13, Y0, Y0
	VMASKMOVPD  (R9)(AX*8), Y15, Y1
	VMASKMOVPD  (R10)(AX*8), Y15, Y2
	VFMADD213PD Y2, Y1, Y0
	VMASKMOVPD  Y0, Y15, (DI)(AX*8)

lnn_done:
	VZEROUPPER
	RET

// func lnBackwardRowAVX2(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
TEXT ·lnBackwardRowAVX2(SB), NOSPLIT, $0-152
	MOVQ         di_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	MOVQ         d_base+48(FP), R9
	MOVQ         w_base+72(FP), R10
	MOVQ         src_base+128(FP), R11
	VBROADCASTSD mu+96(FP), Y12
	VBROADCASTSD r+104(FP), Y13
	VBROADCASTSD m1+112(FP), Y14
	VBROADCASTSD m2+120(FP), Y11
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JZ           lnb_tail

lnb_loop:
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD  Y12, Y0, Y0
	VMULPD  Y13, Y0, Y0        // xhat
	VMOVUPD (R10)(AX*8), Y1
	VMULPD  (R9)(AX*8), Y1, Y1 // dxhat
	VSUBPD  Y14, Y1, Y1
	VMULPD  Y11, Y0, Y0
	VSUBPD  Y0, Y1, Y1
	VMULPD  Y13, Y1, Y1
	VADDPD  (R11)(AX*8), Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     lnb_loop

lnb_tail:
	VEC_TAIL(Y15, lnb_done)
	VMASKMOVPD (SI)(AX*8), Y15, Y0
	VSUBPD     Y12, Y0, Y0
	VMULPD     Y13, Y0, Y0
	VMASKMOVPD (R10)(AX*8), Y15, Y1
	VMASKMOVPD (R9)(AX*8), Y15, Y2
	VMULPD     Y2, Y1, Y1
	VSUBPD     Y14, Y1, Y1
	VMULPD     Y11, Y0, Y0
	VSUBPD     Y0, Y1, Y1
	VMULPD     Y13, Y1, Y1
	VMASKMOVPD (R11)(AX*8), Y15, Y2
	VADDPD     Y1, Y2, Y1
	VMASKMOVPD Y1, Y15, (DI)(AX*8)

lnb_done:
	VZEROUPPER
	RET

// One row of lnColumns16AVX2 for the four columns at byte offset off:
// xhat = float64((x - mu) * r); dw = fma(d, xhat, dw); db += d.
#define LNC4(off, w, b) \
	VMOVUPD     off(R9), Y10; \
	VSUBPD      Y8, Y10, Y10; \
	VMULPD      Y9, Y10, Y10; \
	VMOVUPD     off(R8), Y11; \
	VFMADD231PD Y10, Y11, w; \
	VADDPD      Y11, b, b

// func lnColumns16AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)
//
// LayerNorm's weight and bias gradients for 16 columns (dw[:16], db[:16];
// dout and inp start at the first of them, rows C apart), each column a
// chain over the N rows in order, four columns per register:
//
//	for i := 0; i < 16; i++ {
//		for n := 0; n < N; n++ {
//			d := dout[n*C+i]
//			dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//			db[i] += d
//		}
//	}
TEXT ·lnColumns16AVX2(SB), NOSPLIT, $0-160
	MOVQ    dw_base+0(FP), DI
	MOVQ    db_base+24(FP), SI
	MOVQ    dout_base+48(FP), R8
	MOVQ    inp_base+72(FP), R9
	MOVQ    mean_base+96(FP), R10
	MOVQ    rstd_base+120(FP), R11
	MOVQ    N+144(FP), CX
	MOVQ    C+152(FP), DX
	SHLQ    $3, DX
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VMOVUPD (SI), Y4
	VMOVUPD 32(SI), Y5
	VMOVUPD 64(SI), Y6
	VMOVUPD 96(SI), Y7
	TESTQ   CX, CX
	JZ      lnc16_done

lnc16_loop:
	VBROADCASTSD (R10), Y8
	VBROADCASTSD (R11), Y9
	LNC4(0, Y0, Y4)
	LNC4(32, Y1, Y5)
	LNC4(64, Y2, Y6)
	LNC4(96, Y3, Y7)
	ADDQ         DX, R8
	ADDQ         DX, R9
	ADDQ         $8, R10
	ADDQ         $8, R11
	DECQ         CX
	JNZ          lnc16_loop

lnc16_done:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, (SI)
	VMOVUPD Y5, 32(SI)
	VMOVUPD Y6, 64(SI)
	VMOVUPD Y7, 96(SI)
	VZEROUPPER
	RET

// func lnColumns4AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)
//
// lnColumns16AVX2 for 4 columns.
TEXT ·lnColumns4AVX2(SB), NOSPLIT, $0-160
	MOVQ    dw_base+0(FP), DI
	MOVQ    db_base+24(FP), SI
	MOVQ    dout_base+48(FP), R8
	MOVQ    inp_base+72(FP), R9
	MOVQ    mean_base+96(FP), R10
	MOVQ    rstd_base+120(FP), R11
	MOVQ    N+144(FP), CX
	MOVQ    C+152(FP), DX
	SHLQ    $3, DX
	VMOVUPD (DI), Y0
	VMOVUPD (SI), Y4
	TESTQ   CX, CX
	JZ      lnc4_done

lnc4_loop:
	VBROADCASTSD (R10), Y8
	VBROADCASTSD (R11), Y9
	LNC4(0, Y0, Y4)
	ADDQ         DX, R8
	ADDQ         DX, R9
	ADDQ         $8, R10
	ADDQ         $8, R11
	DECQ         CX
	JNZ          lnc4_loop

lnc4_done:
	VMOVUPD Y0, (DI)
	VMOVUPD Y4, (SI)
	VZEROUPPER
	RET

