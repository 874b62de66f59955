//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX-512 loops for LayerNorm (layernorm.go). Each lane does what the Go
// twin does to one element (or, in lnColumns, one column's chain does
// what the Go twin does to it, row by row), with the same operations in
// the same order and a fused multiply-add exactly where the Go twin
// writes math.FMA, so the bits are the Go twin's. The last
// len%8 elements go under an opmask; the hooks (layernorm_amd64.go) check
// the lengths.

// lnMask<>+2n is the opmask of lanes 0..n-1.
DATA lnMask<>+0x00(SB)/2, $0x00
DATA lnMask<>+0x02(SB)/2, $0x01
DATA lnMask<>+0x04(SB)/2, $0x03
DATA lnMask<>+0x06(SB)/2, $0x07
DATA lnMask<>+0x08(SB)/2, $0x0f
DATA lnMask<>+0x0a(SB)/2, $0x1f
DATA lnMask<>+0x0c(SB)/2, $0x3f
DATA lnMask<>+0x0e(SB)/2, $0x7f
GLOBL lnMask<>(SB), RODATA|NOPTR, $16

// func lnNormalizeAVX512(o, x, w, b []float64, mu, r float64)
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
TEXT ·lnNormalizeAVX512(SB), NOSPLIT, $0-112
	MOVQ         o_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	MOVQ         w_base+48(FP), R9
	MOVQ         b_base+72(FP), R10
	VBROADCASTSD mu+96(FP), Z30
	VBROADCASTSD r+104(FP), Z31
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	JZ           lnn_tail

lnn_loop:
	VMOVUPD     (SI)(AX*8), Z0
	VSUBPD      Z30, Z0, Z0
	VMULPD      Z31, Z0, Z0
	VMOVUPD     (R9)(AX*8), Z1
	VFMADD213PD (R10)(AX*8), Z1, Z0
	VMOVUPD     Z0, (DI)(AX*8)
	ADDQ        $8, AX
	CMPQ        AX, BX
	JLT         lnn_loop

lnn_tail:
	MOVQ        CX, DX
	ANDQ        $7, DX
	JZ          lnn_done
	LEAQ        lnMask<>(SB), R8
	KMOVW       (R8)(DX*2), K1
	VMOVUPD.Z   (SI)(AX*8), K1, Z0
	VSUBPD      Z30, Z0, Z0
	VMULPD      Z31, Z0, Z0
	VMOVUPD.Z   (R9)(AX*8), K1, Z1
	VMOVUPD.Z   (R10)(AX*8), K1, Z2
	VFMADD213PD Z2, Z1, Z0
	VMOVUPD     Z0, K1, (DI)(AX*8)

lnn_done:
	VZEROUPPER
	RET

// func lnBackwardRowAVX512(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
TEXT ·lnBackwardRowAVX512(SB), NOSPLIT, $0-152
	MOVQ         di_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	MOVQ         d_base+48(FP), R9
	MOVQ         w_base+72(FP), R10
	MOVQ         src_base+128(FP), R11
	VBROADCASTSD mu+96(FP), Z28
	VBROADCASTSD r+104(FP), Z29
	VBROADCASTSD m1+112(FP), Z30
	VBROADCASTSD m2+120(FP), Z31
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	JZ           lnb_tail

lnb_loop:
	VMOVUPD (SI)(AX*8), Z0
	VSUBPD  Z28, Z0, Z0
	VMULPD  Z29, Z0, Z0  // xhat
	VMOVUPD (R10)(AX*8), Z1
	VMULPD  (R9)(AX*8), Z1, Z1 // dxhat
	VSUBPD  Z30, Z1, Z1
	VMULPD  Z31, Z0, Z0
	VSUBPD  Z0, Z1, Z1
	VMULPD  Z29, Z1, Z1
	VADDPD  (R11)(AX*8), Z1, Z1
	VMOVUPD Z1, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLT     lnb_loop

lnb_tail:
	MOVQ      CX, DX
	ANDQ      $7, DX
	JZ        lnb_done
	LEAQ      lnMask<>(SB), R8
	KMOVW     (R8)(DX*2), K1
	VMOVUPD.Z (SI)(AX*8), K1, Z0
	VSUBPD    Z28, Z0, Z0
	VMULPD    Z29, Z0, Z0
	VMOVUPD.Z (R10)(AX*8), K1, Z1
	VMOVUPD.Z (R9)(AX*8), K1, Z2
	VMULPD    Z2, Z1, Z1
	VSUBPD    Z30, Z1, Z1
	VMULPD    Z31, Z0, Z0
	VSUBPD    Z0, Z1, Z1
	VMULPD    Z29, Z1, Z1
	VMOVUPD.Z (R11)(AX*8), K1, Z2
	VADDPD    Z1, Z2, Z1
	VMOVUPD   Z1, K1, (DI)(AX*8)

lnb_done:
	VZEROUPPER
	RET

// One row of lnColumns32AVX512 for column vector q (at byte offset off):
// xhat = float64((x - mu) * r); dw = fma(d, xhat, dw); db += d.
#define LNC_COL(off, w, b) \
	VMOVUPD     off(R9), Z10; \
	VSUBPD      Z8, Z10, Z10; \
	VMULPD      Z9, Z10, Z10; \
	VMOVUPD     off(R8), Z11; \
	VFMADD231PD Z10, Z11, w; \
	VADDPD      Z11, b, b

// func lnColumns32AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)
//
// LayerNorm's weight and bias gradients for 32 columns (dw[:32], db[:32];
// dout and inp start at the first of them, rows C apart), each column a
// chain over the N rows in order, eight columns per register:
//
//	for i := 0; i < 32; i++ {
//		for n := 0; n < N; n++ {
//			d := dout[n*C+i]
//			dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//			db[i] += d
//		}
//	}
TEXT ·lnColumns32AVX512(SB), NOSPLIT, $0-160
	MOVQ    dw_base+0(FP), DI
	MOVQ    db_base+24(FP), SI
	MOVQ    dout_base+48(FP), R8
	MOVQ    inp_base+72(FP), R9
	MOVQ    mean_base+96(FP), R10
	MOVQ    rstd_base+120(FP), R11
	MOVQ    N+144(FP), CX
	MOVQ    C+152(FP), DX
	SHLQ    $3, DX
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	VMOVUPD 128(DI), Z2
	VMOVUPD 192(DI), Z3
	VMOVUPD (SI), Z4
	VMOVUPD 64(SI), Z5
	VMOVUPD 128(SI), Z6
	VMOVUPD 192(SI), Z7
	TESTQ   CX, CX
	JZ      lnc32_done

lnc32_loop:
	VBROADCASTSD (R10), Z8
	VBROADCASTSD (R11), Z9
	LNC_COL(0, Z0, Z4)
	LNC_COL(64, Z1, Z5)
	LNC_COL(128, Z2, Z6)
	LNC_COL(192, Z3, Z7)
	ADDQ         DX, R8
	ADDQ         DX, R9
	ADDQ         $8, R10
	ADDQ         $8, R11
	DECQ         CX
	JNZ          lnc32_loop

lnc32_done:
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VMOVUPD Z4, (SI)
	VMOVUPD Z5, 64(SI)
	VMOVUPD Z6, 128(SI)
	VMOVUPD Z7, 192(SI)
	VZEROUPPER
	RET

// func lnColumns8AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)
//
// lnColumns32AVX512 for 8 columns.
TEXT ·lnColumns8AVX512(SB), NOSPLIT, $0-160
	MOVQ    dw_base+0(FP), DI
	MOVQ    db_base+24(FP), SI
	MOVQ    dout_base+48(FP), R8
	MOVQ    inp_base+72(FP), R9
	MOVQ    mean_base+96(FP), R10
	MOVQ    rstd_base+120(FP), R11
	MOVQ    N+144(FP), CX
	MOVQ    C+152(FP), DX
	SHLQ    $3, DX
	VMOVUPD (DI), Z0
	VMOVUPD (SI), Z4
	TESTQ   CX, CX
	JZ      lnc8_done

lnc8_loop:
	VBROADCASTSD (R10), Z8
	VBROADCASTSD (R11), Z9
	LNC_COL(0, Z0, Z4)
	ADDQ         DX, R8
	ADDQ         DX, R9
	ADDQ         $8, R10
	ADDQ         $8, R11
	DECQ         CX
	JNZ          lnc8_loop

lnc8_done:
	VMOVUPD Z0, (DI)
	VMOVUPD Z4, (SI)
	VZEROUPPER
	RET
