//go:build amd64 && gc && !purego

#include "textflag.h"

// LayerNorm's per-row statistics (LayerNormStats and LayerNormRowSums
// in layernorm.go) for a block of rows at once: 8 rows to a ZMM
// register on AVX-512, 4 to a YMM register on AVX2, one row per lane.
// A row's statistics are chains of dependent adds (or fused
// multiply-adds) over its C elements in order, bound by the adder's
// latency; the Go loops overlap four rows' chains. Here a block of rows ×
// columns is loaded and transposed in registers, so that one register
// holds one column of the block (lane k = row k), and every lane's chain
// then advances one column at a time in ascending order: each row's chain
// does exactly the Go loop's operations in the Go loop's order (an add
// where it adds, a fused multiply-add where it writes math.FMA, a
// separately rounded multiply where it writes float64(x*y)), so the bits
// are the Go loop's. The mean and rstd (s/C, 1/sqrt(v/C+eps)) are IEEE
// divisions, an add and a square root, correctly rounded here as in Go.
// The last C%8 columns are loaded under an opmask on AVX-512 (masked
// lanes read +0 and never fault), the last C%4 on AVX2 two and then one
// at a time with loads of exactly those elements; the chains stop after
// the last real column (padding cannot stand in for a column: s + 0 is
// not s when s is -0). The hooks (layernorm_amd64.go) check the lengths.
//
// The rows of a block sit S bytes apart (DX, S = 8C). Their addresses are
// formed from three bases P, Q = P+3S, R = P+6S and the stride:
//
//	row 0 (P)  1 (P)(DX*1)  2 (P)(DX*2)  3 (Q)  4 (Q)(DX*1)  5 (Q)(DX*2)  6 (R)  7 (R)(DX*1)

// LNS_ROWS sets Q = P+3S and R = P+6S from P and S (DX).
#define LNS_ROWS(P, Q, R) \
	LEAQ (P)(DX*2), Q; \
	ADDQ DX, Q;        \
	LEAQ (Q)(DX*2), R; \
	ADDQ DX, R

// LNS_T8 loads the 8×8 block at byte offset off of the rows (P, Q, R)
// and transposes it into o0..o7 (o_j lane k = row k, column j), with
// Z16..Z23 for scratch. Z8..Z15 take the rows' halves paired so that
// one in-lane unpack and one 128-bit shuffle finish the transpose:
//
//	Z8 = [row0 c0..3 | row2 c0..3]  Z9 = [row1 | row3]  Z10 = [row4 | row6]  Z11 = [row5 | row7]
//	Z12..Z15 the same for c4..7
//	unpacklo(Z8, Z9) = [r0c0 r1c0 | r0c2 r1c2 | r2c0 r3c0 | r2c2 r3c2], likewise rows 4-7
//	column 0 = 128-bit lanes 0 and 2 of both; column 2 = lanes 1 and 3
//
// o0..o7 may be Z8..Z15: each is written after the loads it replaces
// were consumed.
#define LNS_T8(P, Q, R, off, o0, o1, o2, o3, o4, o5, o6, o7) \
	VMOVUPD      off(P), Y8;                      \
	VINSERTF64X4 $1, off(P)(DX*2), Z8, Z8;        \
	VMOVUPD      off(P)(DX*1), Y9;                \
	VINSERTF64X4 $1, off(Q), Z9, Z9;              \
	VMOVUPD      off(Q)(DX*1), Y10;               \
	VINSERTF64X4 $1, off(R), Z10, Z10;            \
	VMOVUPD      off(Q)(DX*2), Y11;               \
	VINSERTF64X4 $1, off(R)(DX*1), Z11, Z11;      \
	VMOVUPD      off+32(P), Y12;                  \
	VINSERTF64X4 $1, off+32(P)(DX*2), Z12, Z12;   \
	VMOVUPD      off+32(P)(DX*1), Y13;            \
	VINSERTF64X4 $1, off+32(Q), Z13, Z13;         \
	VMOVUPD      off+32(Q)(DX*1), Y14;            \
	VINSERTF64X4 $1, off+32(R), Z14, Z14;         \
	VMOVUPD      off+32(Q)(DX*2), Y15;            \
	VINSERTF64X4 $1, off+32(R)(DX*1), Z15, Z15;   \
	VUNPCKLPD    Z9, Z8, Z16;                     \
	VUNPCKHPD    Z9, Z8, Z17;                     \
	VUNPCKLPD    Z11, Z10, Z18;                   \
	VUNPCKHPD    Z11, Z10, Z19;                   \
	VUNPCKLPD    Z13, Z12, Z20;                   \
	VUNPCKHPD    Z13, Z12, Z21;                   \
	VUNPCKLPD    Z15, Z14, Z22;                   \
	VUNPCKHPD    Z15, Z14, Z23;                   \
	VSHUFF64X2   $0x88, Z18, Z16, o0;             \
	VSHUFF64X2   $0x88, Z19, Z17, o1;             \
	VSHUFF64X2   $0xdd, Z18, Z16, o2;             \
	VSHUFF64X2   $0xdd, Z19, Z17, o3;             \
	VSHUFF64X2   $0x88, Z22, Z20, o4;             \
	VSHUFF64X2   $0x88, Z23, Z21, o5;             \
	VSHUFF64X2   $0xdd, Z22, Z20, o6;             \
	VSHUFF64X2   $0xdd, Z23, Z21, o7

// LNS_T8TAIL loads the first columns of the rows (P, Q, R) under the
// opmask K1 (the others read as +0 and never fault) and transposes the
// 8×8 block into o0..o7, with Z8..Z23 for scratch: an unpack of row
// pairs, then two rounds of 128-bit shuffles. o0..o7 may be Z16..Z23
// (the unpacked pairs, dead after the first round), not Z8..Z15.
//
//	unpacklo(r0, r1) = [r0c0 r1c0 | r0c2 r1c2 | r0c4 r1c4 | r0c6 r1c6]
//	shuffle lanes 0,2 | 0,2 of rows 0-1 and 2-3: [c0 r01 | c4 r01 | c0 r23 | c4 r23]
//	shuffle lanes 0,2 | 0,2 of that and rows 4-7's: column 0
#define LNS_T8TAIL(P, Q, R, o0, o1, o2, o3, o4, o5, o6, o7) \
	VMOVUPD.Z  (P), K1, Z8;          \
	VMOVUPD.Z  (P)(DX*1), K1, Z9;    \
	VMOVUPD.Z  (P)(DX*2), K1, Z10;   \
	VMOVUPD.Z  (Q), K1, Z11;         \
	VMOVUPD.Z  (Q)(DX*1), K1, Z12;   \
	VMOVUPD.Z  (Q)(DX*2), K1, Z13;   \
	VMOVUPD.Z  (R), K1, Z14;         \
	VMOVUPD.Z  (R)(DX*1), K1, Z15;   \
	VUNPCKLPD  Z9, Z8, Z16;          \
	VUNPCKHPD  Z9, Z8, Z17;          \
	VUNPCKLPD  Z11, Z10, Z18;        \
	VUNPCKHPD  Z11, Z10, Z19;        \
	VUNPCKLPD  Z13, Z12, Z20;        \
	VUNPCKHPD  Z13, Z12, Z21;        \
	VUNPCKLPD  Z15, Z14, Z22;        \
	VUNPCKHPD  Z15, Z14, Z23;        \
	VSHUFF64X2 $0x88, Z18, Z16, Z8;  \
	VSHUFF64X2 $0xdd, Z18, Z16, Z9;  \
	VSHUFF64X2 $0x88, Z22, Z20, Z10; \
	VSHUFF64X2 $0xdd, Z22, Z20, Z11; \
	VSHUFF64X2 $0x88, Z19, Z17, Z12; \
	VSHUFF64X2 $0xdd, Z19, Z17, Z13; \
	VSHUFF64X2 $0x88, Z23, Z21, Z14; \
	VSHUFF64X2 $0xdd, Z23, Z21, Z15; \
	VSHUFF64X2 $0x88, Z10, Z8, o0;   \
	VSHUFF64X2 $0xdd, Z10, Z8, o4;   \
	VSHUFF64X2 $0x88, Z11, Z9, o2;   \
	VSHUFF64X2 $0xdd, Z11, Z9, o6;   \
	VSHUFF64X2 $0x88, Z14, Z12, o1;  \
	VSHUFF64X2 $0xdd, Z14, Z12, o5;  \
	VSHUFF64X2 $0x88, Z15, Z13, o3;  \
	VSHUFF64X2 $0xdd, Z15, Z13, o7

// LNS_MASK sets K1 to the lanes 0..CX-1 (CX = C%8), clobbering AX.
#define LNS_MASK \
	MOVL  $1, AX;  \
	SHLL  CX, AX;  \
	DECL  AX;      \
	KMOVW AX, K1

// LNS_TAIL runs step(o_j) for the columns j < CX (1..7) of a tail block.
#define LNS_TAIL(step, o0, o1, o2, o3, o4, o5, o6, done) \
	step(o0);     \
	CMPQ CX, $1;  \
	JEQ  done;    \
	step(o1);     \
	CMPQ CX, $2;  \
	JEQ  done;    \
	step(o2);     \
	CMPQ CX, $3;  \
	JEQ  done;    \
	step(o3);     \
	CMPQ CX, $4;  \
	JEQ  done;    \
	step(o4);     \
	CMPQ CX, $5;  \
	JEQ  done;    \
	step(o5);     \
	CMPQ CX, $6;  \
	JEQ  done;    \
	step(o6)

// The forward steps: s += x; v = fma(x - mean, x - mean, v).
#define LNS_SUM(c) VADDPD c, Z24, Z24
#define LNS_VAR(c) \
	VSUBPD      Z25, c, c; \
	VFMADD231PD c, c, Z24

// func lnStatsAVX512(mean, rstd, x []float64, C int, eps float64)
//
// For the 8 rows k of x (C wide), as lnStatsGo computes them:
//
//	s := 0.0
//	for _, xi := range x[k*C : k*C+C] {
//		s += xi
//	}
//	mean[k] = s / float64(C)
//	v := 0.0
//	for _, xi := range x[k*C : k*C+C] {
//		d := xi - mean[k]
//		v = math.FMA(d, d, v)
//	}
//	rstd[k] = 1 / math.Sqrt(v/float64(C)+eps)
TEXT ·lnStatsAVX512(SB), NOSPLIT, $0-88
	MOVQ         x_base+48(FP), SI
	MOVQ         C+72(FP), CX
	VCVTSI2SDQ   CX, X26, X26
	VBROADCASTSD X26, Z26                 // float64(C)
	MOVQ         CX, DX
	SHLQ         $3, DX                   // S
	MOVQ         CX, BX
	SHRQ         $3, BX                   // full 8-column blocks
	ANDQ         $7, CX                   // columns left
	LNS_MASK

	// s
	VXORPD Z24, Z24, Z24
	MOVQ   SI, R8
	LNS_ROWS(R8, R9, R10)
	MOVQ   BX, R11
	TESTQ  R11, R11
	JZ     lns_sumtail

lns_sumloop:
	LNS_T8(R8, R9, R10, 0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_SUM(Z0)
	LNS_SUM(Z1)
	LNS_SUM(Z2)
	LNS_SUM(Z3)
	LNS_SUM(Z4)
	LNS_SUM(Z5)
	LNS_SUM(Z6)
	LNS_SUM(Z7)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ R11
	JNZ  lns_sumloop

lns_sumtail:
	TESTQ CX, CX
	JZ    lns_mean
	LNS_T8TAIL(R8, R9, R10, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_TAIL(LNS_SUM, Z0, Z1, Z2, Z3, Z4, Z5, Z6, lns_mean)

lns_mean:
	VDIVPD Z26, Z24, Z25 // mean = s / float64(C)

	// v
	VXORPD Z24, Z24, Z24
	MOVQ   SI, R8
	LNS_ROWS(R8, R9, R10)
	MOVQ   BX, R11
	TESTQ  R11, R11
	JZ     lns_vartail

lns_varloop:
	LNS_T8(R8, R9, R10, 0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_VAR(Z0)
	LNS_VAR(Z1)
	LNS_VAR(Z2)
	LNS_VAR(Z3)
	LNS_VAR(Z4)
	LNS_VAR(Z5)
	LNS_VAR(Z6)
	LNS_VAR(Z7)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ R11
	JNZ  lns_varloop

lns_vartail:
	TESTQ CX, CX
	JZ    lns_rstd
	LNS_T8TAIL(R8, R9, R10, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_TAIL(LNS_VAR, Z0, Z1, Z2, Z3, Z4, Z5, Z6, lns_rstd)

lns_rstd:
	MOVQ         $0x3ff0000000000000, AX // 1.0
	VPBROADCASTQ AX, Z27
	VBROADCASTSD eps+80(FP), Z28
	VDIVPD       Z26, Z24, Z24           // v / float64(C)
	VADDPD       Z28, Z24, Z24           // + eps
	VSQRTPD      Z24, Z24
	VDIVPD       Z24, Z27, Z24           // 1 / sqrt
	MOVQ         mean_base+0(FP), DI
	MOVQ         rstd_base+24(FP), SI
	VMOVUPD      Z25, (DI)
	VMOVUPD      Z24, (SI)
	VZEROUPPER
	RET

// The backward step for one column: xhat = float64((x-mean)*rstd),
// dxhat = float64(w*d) (w broadcast from woff(BX)); a += dxhat;
// b = fma(dxhat, xhat, b).
#define LNS_GRAD(x, d, woff) \
	VSUBPD      Z26, x, x;        \
	VMULPD      Z27, x, x;        \
	VMULPD.BCST woff(BX), d, d;   \
	VADDPD      d, Z24, Z24;      \
	VFMADD231PD x, d, Z25

// func lnRowSumsAVX512(a, b, x, d, w, mean, rstd []float64, C int)
//
// For the 8 rows k of x and d (C wide), as lnRowSumsGo computes them:
//
//	a[k], b[k] = 0, 0
//	for i := range w {
//		xhat := float64((x[k*C+i] - mean[k]) * rstd[k])
//		dxhat := float64(w[i] * d[k*C+i])
//		a[k] += dxhat
//		b[k] = math.FMA(dxhat, xhat, b[k])
//	}
TEXT ·lnRowSumsAVX512(SB), NOSPLIT, $0-176
	MOVQ    x_base+48(FP), R8
	MOVQ    d_base+72(FP), R11
	MOVQ    w_base+96(FP), BX
	MOVQ    mean_base+120(FP), AX
	VMOVUPD (AX), Z26
	MOVQ    rstd_base+144(FP), AX
	VMOVUPD (AX), Z27
	MOVQ    C+168(FP), CX
	MOVQ    CX, DX
	SHLQ    $3, DX
	MOVQ    CX, SI
	SHRQ    $3, SI                    // full 8-column blocks
	ANDQ    $7, CX                    // columns left
	LNS_MASK
	LNS_ROWS(R8, R9, R10)
	LNS_ROWS(R11, R12, R13)
	VXORPD  Z24, Z24, Z24
	VXORPD  Z25, Z25, Z25
	TESTQ   SI, SI
	JZ      lng_tail

lng_loop:
	LNS_T8(R8, R9, R10, 0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_T8(R11, R12, R13, 0, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	LNS_GRAD(Z0, Z8, 0)
	LNS_GRAD(Z1, Z9, 8)
	LNS_GRAD(Z2, Z10, 16)
	LNS_GRAD(Z3, Z11, 24)
	LNS_GRAD(Z4, Z12, 32)
	LNS_GRAD(Z5, Z13, 40)
	LNS_GRAD(Z6, Z14, 48)
	LNS_GRAD(Z7, Z15, 56)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, BX
	DECQ SI
	JNZ  lng_loop

lng_tail:
	TESTQ CX, CX
	JZ    lng_done
	LNS_T8TAIL(R8, R9, R10, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	LNS_T8TAIL(R11, R12, R13, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	LNS_GRAD(Z0, Z16, 0)
	CMPQ CX, $1
	JEQ  lng_done
	LNS_GRAD(Z1, Z17, 8)
	CMPQ CX, $2
	JEQ  lng_done
	LNS_GRAD(Z2, Z18, 16)
	CMPQ CX, $3
	JEQ  lng_done
	LNS_GRAD(Z3, Z19, 24)
	CMPQ CX, $4
	JEQ  lng_done
	LNS_GRAD(Z4, Z20, 32)
	CMPQ CX, $5
	JEQ  lng_done
	LNS_GRAD(Z5, Z21, 40)
	CMPQ CX, $6
	JEQ  lng_done
	LNS_GRAD(Z6, Z22, 48)

lng_done:
	MOVQ    a_base+0(FP), DI
	MOVQ    b_base+24(FP), SI
	VMOVUPD Z24, (DI)
	VMOVUPD Z25, (SI)
	VZEROUPPER
	RET

// The AVX2 twins, 4 rows to a YMM register: rows 0 (P), 1 (P)(DX*1),
// 2 (P)(DX*2), 3 (Q = P+3S).

// LNS_T2 loads columns c, c+1 (at byte offset off) of the 4 rows
// (P, Q) and transposes them into o0, o1 (lane k = row k), with Y8, Y9
// for scratch:
//
//	Y8 = [r0c r0c+1 | r2c r2c+1]  Y9 = [r1c r1c+1 | r3c r3c+1]
//	unpacklo(Y8, Y9) = [r0c r1c r2c r3c], unpackhi = column c+1
#define LNS_T2(P, Q, off, o0, o1) \
	VMOVUPD     off(P), X8;                \
	VINSERTF128 $1, off(P)(DX*2), Y8, Y8;  \
	VMOVUPD     off(P)(DX*1), X9;          \
	VINSERTF128 $1, off(Q), Y9, Y9;        \
	VUNPCKLPD   Y9, Y8, o0;                \
	VUNPCKHPD   Y9, Y8, o1

// LNS_T1 loads column c (at P, Q) of the 4 rows into o0.
#define LNS_T1(P, Q, o0) \
	VMOVSD      (P), X8;           \
	VMOVHPD     (P)(DX*1), X8, X8; \
	VMOVSD      (P)(DX*2), X9;     \
	VMOVHPD     (Q), X9, X9;       \
	VINSERTF128 $1, X9, Y8, o0

#define LNS2_SUM(c) VADDPD c, Y12, Y12
#define LNS2_VAR(c) \
	VSUBPD      Y13, c, c; \
	VFMADD231PD c, c, Y12

// func lnStatsAVX2(mean, rstd, x []float64, C int, eps float64)
//
// lnStatsAVX512 for 4 rows.
TEXT ·lnStatsAVX2(SB), NOSPLIT, $0-88
	MOVQ         x_base+48(FP), SI
	MOVQ         C+72(FP), CX
	VCVTSI2SDQ   CX, X14, X14
	VBROADCASTSD X14, Y14                 // float64(C)
	MOVQ         CX, DX
	SHLQ         $3, DX                   // S
	MOVQ         CX, BX
	SHRQ         $2, BX                   // full 4-column blocks
	ANDQ         $3, CX                   // columns left

	// s
	VXORPD Y12, Y12, Y12
	MOVQ   SI, R8
	LEAQ   (R8)(DX*2), R9
	ADDQ   DX, R9
	MOVQ   BX, R11
	TESTQ  R11, R11
	JZ     lns2_sumtail

lns2_sumloop:
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS_T2(R8, R9, 16, Y2, Y3)
	LNS2_SUM(Y0)
	LNS2_SUM(Y1)
	LNS2_SUM(Y2)
	LNS2_SUM(Y3)
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ R11
	JNZ  lns2_sumloop

lns2_sumtail:
	TESTQ $2, CX
	JZ    lns2_sumlast
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS2_SUM(Y0)
	LNS2_SUM(Y1)
	ADDQ  $16, R8
	ADDQ  $16, R9

lns2_sumlast:
	TESTQ $1, CX
	JZ    lns2_mean
	LNS_T1(R8, R9, Y0)
	LNS2_SUM(Y0)

lns2_mean:
	VDIVPD Y14, Y12, Y13 // mean = s / float64(C)

	// v
	VXORPD Y12, Y12, Y12
	MOVQ   SI, R8
	LEAQ   (R8)(DX*2), R9
	ADDQ   DX, R9
	MOVQ   BX, R11
	TESTQ  R11, R11
	JZ     lns2_vartail

lns2_varloop:
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS_T2(R8, R9, 16, Y2, Y3)
	LNS2_VAR(Y0)
	LNS2_VAR(Y1)
	LNS2_VAR(Y2)
	LNS2_VAR(Y3)
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ R11
	JNZ  lns2_varloop

lns2_vartail:
	TESTQ $2, CX
	JZ    lns2_varlast
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS2_VAR(Y0)
	LNS2_VAR(Y1)
	ADDQ  $16, R8
	ADDQ  $16, R9

lns2_varlast:
	TESTQ $1, CX
	JZ    lns2_rstd
	LNS_T1(R8, R9, Y0)
	LNS2_VAR(Y0)

lns2_rstd:
	MOVQ         $0x3ff0000000000000, AX // 1.0
	VMOVQ        AX, X15
	VBROADCASTSD X15, Y15
	VBROADCASTSD eps+80(FP), Y0
	VDIVPD       Y14, Y12, Y12           // v / float64(C)
	VADDPD       Y0, Y12, Y12            // + eps
	VSQRTPD      Y12, Y12
	VDIVPD       Y12, Y15, Y12           // 1 / sqrt
	MOVQ         mean_base+0(FP), DI
	MOVQ         rstd_base+24(FP), SI
	VMOVUPD      Y13, (DI)
	VMOVUPD      Y12, (SI)
	VZEROUPPER
	RET

// LNS_GRAD for 4 rows: x, d one column; w[i] at woff(BX).
#define LNS2_GRAD(x, d, woff) \
	VSUBPD       Y14, x, x;     \
	VMULPD       Y15, x, x;     \
	VBROADCASTSD woff(BX), Y10; \
	VMULPD       Y10, d, d;     \
	VADDPD       d, Y12, Y12;   \
	VFMADD231PD  x, d, Y13

// func lnRowSumsAVX2(a, b, x, d, w, mean, rstd []float64, C int)
//
// lnRowSumsAVX512 for 4 rows.
TEXT ·lnRowSumsAVX2(SB), NOSPLIT, $0-176
	MOVQ    x_base+48(FP), R8
	MOVQ    d_base+72(FP), R10
	MOVQ    w_base+96(FP), BX
	MOVQ    mean_base+120(FP), AX
	VMOVUPD (AX), Y14
	MOVQ    rstd_base+144(FP), AX
	VMOVUPD (AX), Y15
	MOVQ    C+168(FP), CX
	MOVQ    CX, DX
	SHLQ    $3, DX
	MOVQ    CX, SI
	SHRQ    $2, SI                    // full 4-column blocks
	ANDQ    $3, CX                    // columns left
	LEAQ    (R8)(DX*2), R9
	ADDQ    DX, R9
	LEAQ    (R10)(DX*2), R11
	ADDQ    DX, R11
	VXORPD  Y12, Y12, Y12
	VXORPD  Y13, Y13, Y13
	TESTQ   SI, SI
	JZ      lng2_tail

lng2_loop:
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS_T2(R10, R11, 0, Y4, Y5)
	LNS_T2(R8, R9, 16, Y2, Y3)
	LNS_T2(R10, R11, 16, Y6, Y7)
	LNS2_GRAD(Y0, Y4, 0)
	LNS2_GRAD(Y1, Y5, 8)
	LNS2_GRAD(Y2, Y6, 16)
	LNS2_GRAD(Y3, Y7, 24)
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, BX
	DECQ SI
	JNZ  lng2_loop

lng2_tail:
	TESTQ $2, CX
	JZ    lng2_last
	LNS_T2(R8, R9, 0, Y0, Y1)
	LNS_T2(R10, R11, 0, Y4, Y5)
	LNS2_GRAD(Y0, Y4, 0)
	LNS2_GRAD(Y1, Y5, 8)
	ADDQ  $16, R8
	ADDQ  $16, R9
	ADDQ  $16, R10
	ADDQ  $16, R11
	ADDQ  $16, BX

lng2_last:
	TESTQ $1, CX
	JZ    lng2_done
	LNS_T1(R8, R9, Y0)
	LNS_T1(R10, R11, Y4)
	LNS2_GRAD(Y0, Y4, 0)

lng2_done:
	MOVQ    a_base+0(FP), DI
	MOVQ    b_base+24(FP), SI
	VMOVUPD Y12, (DI)
	VMOVUPD Y13, (SI)
	VZEROUPPER
	RET
