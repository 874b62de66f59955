//go:build amd64 && gc && !purego

#include "textflag.h"

// Constants of expDet (mathdet.go), one ZMM-broadcastable float64 each.
DATA expConst<>+0x00(SB)/8, $1.44269504088896338700e+00  // log2e
DATA expConst<>+0x08(SB)/8, $0.5
DATA expConst<>+0x10(SB)/8, $6.93147180369123816490e-01  // ln2Hi
DATA expConst<>+0x18(SB)/8, $1.90821492927058770002e-10  // ln2Lo
DATA expConst<>+0x20(SB)/8, $1.66666666666666657415e-01  // p1
DATA expConst<>+0x28(SB)/8, $-2.77777777770155933842e-03 // p2
DATA expConst<>+0x30(SB)/8, $6.61375632143793436117e-05  // p3
DATA expConst<>+0x38(SB)/8, $-1.65339022054652515390e-06 // p4
DATA expConst<>+0x40(SB)/8, $4.13813679705723846039e-08  // p5
DATA expConst<>+0x48(SB)/8, $1.0
DATA expConst<>+0x50(SB)/8, $2.0
DATA expConst<>+0x58(SB)/8, $0x3e30000000000000          // nearZero = 2^-28
DATA expConst<>+0x60(SB)/8, $1020.0
DATA expConst<>+0x68(SB)/8, $-1020.0
DATA expConst<>+0x70(SB)/8, $0x8000000000000000          // sign bit
DATA expConst<>+0x78(SB)/8, $0x7fffffffffffffff          // all but the sign
GLOBL expConst<>(SB), RODATA|NOPTR, $128

#define C(off) expConst<>+off(SB)

// func expShiftedAVX512(dst, src []float64, shift float64) int
//
// For blocks of eight from the start, while every element of a block is
// on expDet's ordinary path:
//
//	for i := range src[:n] {
//		dst[i] = expDet(src[i] - shift)
//	}
//
// and it returns n, a multiple of 8: it stops before the first block
// (or partial block at the end) with a lane that expDet would treat
// apart (NaN, ±Inf, |x| < 2^-28, or a result outside the normal range
// where expDet calls Ldexp). Each lane performs expDet's operations in
// expDet's order, with the same explicit roundings (no fused
// multiply-add), so its bits are expDet's; the caller finishes the rest
// with expDet itself.
TEXT ·expShiftedAVX512(SB), NOSPLIT, $0-64
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSD shift+48(FP), Z31
	XORQ         AX, AX
	SUBQ         $8, CX
	JLT          exp_done

exp_loop:
	VMOVUPD (SI)(AX*8), Z0
	VSUBPD  Z31, Z0, Z0                    // x = src - shift

	// k = int(log2e*x ± 0.5), the sign of 0.5 that of x (x = ±0 is
	// special, so x < 0 and the sign bit agree on ordinary lanes).
	VMULPD.BCST C(0x00), Z0, Z1            // log2e*x
	VPANDQ.BCST C(0x70), Z0, Z2            // sign of x
	VPORQ.BCST  C(0x08), Z2, Z2            // ±0.5
	VADDPD      Z2, Z1, Z1
	VCVTTPD2DQ  Z1, Y3                     // k (int32, truncated)
	VCVTDQ2PD   Y3, Z4                     // fk

	// Special lanes: NaN, |x| < nearZero, k outside (-1020, 1020).
	VCMPPD        $3, Z0, Z0, K1           // unordered: NaN
	VPANDQ.BCST   C(0x78), Z0, Z5          // |x|
	VCMPPD.BCST   $1, C(0x58), Z5, K2      // |x| < nearZero
	KORW          K2, K1, K1
	VCMPPD.BCST   $13, C(0x60), Z4, K2     // fk >= 1020
	KORW          K2, K1, K1
	VCMPPD.BCST   $2, C(0x68), Z4, K2      // fk <= -1020
	KORW          K2, K1, K1
	KORTESTW      K1, K1
	JNZ           exp_done

	VMULPD.BCST C(0x10), Z4, Z5            // fk*ln2Hi
	VSUBPD      Z5, Z0, Z5                 // hi = x - fk*ln2Hi
	VMULPD.BCST C(0x18), Z4, Z6            // lo = fk*ln2Lo
	VSUBPD      Z6, Z5, Z7                 // r = hi - lo
	VMULPD      Z7, Z7, Z8                 // t = r*r
	VMULPD.BCST C(0x40), Z8, Z9            // t*p5
	VADDPD.BCST C(0x38), Z9, Z9            // p4 + t*p5
	VMULPD      Z9, Z8, Z9                 // t*(...)
	VADDPD.BCST C(0x30), Z9, Z9            // p3 + ...
	VMULPD      Z9, Z8, Z9
	VADDPD.BCST C(0x28), Z9, Z9            // p2 + ...
	VMULPD      Z9, Z8, Z9
	VADDPD.BCST C(0x20), Z9, Z9            // poly = p1 + ...
	VMULPD      Z9, Z8, Z9                 // t*poly
	VSUBPD      Z9, Z7, Z9                 // c = r - t*poly
	VMULPD      Z9, Z7, Z10                // r*c
	VBROADCASTSD C(0x50), Z11
	VSUBPD      Z9, Z11, Z11               // 2 - c
	VDIVPD      Z11, Z10, Z10              // r*c / (2-c)
	VSUBPD      Z10, Z6, Z10               // lo - ...
	VSUBPD      Z5, Z10, Z10               // (...) - hi
	VBROADCASTSD C(0x48), Z11
	VSUBPD      Z10, Z11, Z10              // y = 1 - (...)

	// y·2^k: add k to the exponent bits.
	VPMOVSXDQ Y3, Z3
	VPSLLQ    $52, Z3, Z3
	VPADDQ    Z3, Z10, Z10
	VMOVUPD   Z10, (DI)(AX*8)

	ADDQ $8, AX
	CMPQ AX, CX
	JLE  exp_loop

exp_done:
	MOVQ AX, ret+56(FP)
	VZEROUPPER
	RET
