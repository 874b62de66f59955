//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX2+FMA twins of softmax_avx512_amd64.s's softmax loops, four lanes to a YMM
// register, for CPUs without AVX-512. Each lane does what the AVX-512
// lane does (and so what the Go loop does) to one element: the same
// operations in the same order, with the same explicit roundings and no
// fused multiply-add. The last len%4 elements go through VMASKMOVPD
// (masked lanes load +0 and are never stored).

// Constants of Exp (math.go), each four times over (32 bytes), so
// that an instruction can take one as its memory operand.
#define EXPC(i, v) \
	DATA expC4<>+(32*i)(SB)/8, v; \
	DATA expC4<>+(32*i+8)(SB)/8, v; \
	DATA expC4<>+(32*i+16)(SB)/8, v; \
	DATA expC4<>+(32*i+24)(SB)/8, v

EXPC(0, $1.44269504088896338700e+00)  // log2e
EXPC(1, $0.5)
EXPC(2, $6.93147180369123816490e-01)  // ln2Hi
EXPC(3, $1.90821492927058770002e-10)  // ln2Lo
EXPC(4, $1.66666666666666657415e-01)  // p1
EXPC(5, $-2.77777777770155933842e-03) // p2
EXPC(6, $6.61375632143793436117e-05)  // p3
EXPC(7, $-1.65339022054652515390e-06) // p4
EXPC(8, $4.13813679705723846039e-08)  // p5
EXPC(9, $1.0)
EXPC(10, $2.0)
EXPC(11, $0x3e30000000000000)         // nearZero = 2^-28
EXPC(12, $1020.0)
EXPC(13, $-1020.0)
EXPC(14, $0x8000000000000000)         // sign bit
EXPC(15, $0x7fffffffffffffff)         // all but the sign
EXPC(16, $0xfff0000000000000)         // -Inf
GLOBL expC4<>(SB), RODATA|NOPTR, $544

#define C4(i) expC4<>+(32*i)(SB)

// sdMask<>+32-8n, 32 bytes long, is the VMASKMOVPD mask of lanes 0..n-1
// (n = 0..4).
DATA sdMask<>+0x00(SB)/8, $-1
DATA sdMask<>+0x08(SB)/8, $-1
DATA sdMask<>+0x10(SB)/8, $-1
DATA sdMask<>+0x18(SB)/8, $-1
DATA sdMask<>+0x20(SB)/8, $0
DATA sdMask<>+0x28(SB)/8, $0
DATA sdMask<>+0x30(SB)/8, $0
DATA sdMask<>+0x38(SB)/8, $0
GLOBL sdMask<>(SB), RODATA|NOPTR, $64

// SD_TAIL_MASK sets Y14 to the mask of the DX (1..3) lanes left and
// clobbers R8 and DX.
#define SD_TAIL_MASK \
	LEAQ    sdMask<>+32(SB), R8; \
	NEGQ    DX; \
	VMOVDQU (R8)(DX*8), Y14

// EXP_SPECIAL computes, from src - shift in Y0, the mask BX (bit l for
// lane l) of the lanes Exp treats apart (NaN, or k outside
// (-1020, 1020), which covers ±Inf, overflow and results below the
// normal range), with k in X3 (int32) and Y4 (float64), and Y12 the
// lanes with |x| < nearZero, which get Exp's 1 + x.
#define EXP_SPECIAL \
	VANDPD      C4(15), Y0, Y5; \
	VCMPPD      $1, C4(11), Y5, Y12; \
	VMULPD      C4(0), Y0, Y1; \
	VANDPD      C4(14), Y0, Y2; \
	VORPD       C4(1), Y2, Y2; \
	VADDPD      Y2, Y1, Y1; \
	VCVTTPD2DQY Y1, X3; \
	VCVTDQ2PD   X3, Y4; \
	VCMPPD      $3, Y0, Y0, Y6; \
	VCMPPD      $13, C4(12), Y4, Y7; \
	VORPD       Y7, Y6, Y6; \
	VCMPPD      $2, C4(13), Y4, Y7; \
	VORPD       Y7, Y6, Y6; \
	VMOVMSKPD   Y6, BX

// EXP_VALUE computes Exp's ordinary path into Y10 from EXP_SPECIAL's
// registers, and 1 + x in the lanes of Y12.
#define EXP_VALUE \
	VMULPD    C4(2), Y4, Y5; \
	VSUBPD    Y5, Y0, Y5; \
	VMULPD    C4(3), Y4, Y6; \
	VSUBPD    Y6, Y5, Y7; \
	VMULPD    Y7, Y7, Y8; \
	VMULPD    C4(8), Y8, Y9; \
	VADDPD    C4(7), Y9, Y9; \
	VMULPD    Y9, Y8, Y9; \
	VADDPD    C4(6), Y9, Y9; \
	VMULPD    Y9, Y8, Y9; \
	VADDPD    C4(5), Y9, Y9; \
	VMULPD    Y9, Y8, Y9; \
	VADDPD    C4(4), Y9, Y9; \
	VMULPD    Y9, Y8, Y9; \
	VSUBPD    Y9, Y7, Y9; \
	VMULPD    Y9, Y7, Y10; \
	VMOVUPD   C4(10), Y11; \
	VSUBPD    Y9, Y11, Y11; \
	VDIVPD    Y11, Y10, Y10; \
	VSUBPD    Y10, Y6, Y10; \
	VSUBPD    Y5, Y10, Y10; \
	VMOVUPD   C4(9), Y11; \
	VSUBPD    Y10, Y11, Y10; \
	VPMOVSXDQ X3, Y3; \
	VPSLLQ    $52, Y3, Y3; \
	VPADDQ    Y3, Y10, Y10; \
	VADDPD    C4(9), Y0, Y11; \
	VBLENDVPD Y12, Y11, Y10, Y10

// func expShiftedAVX2(dst, src []float64, shift float64) int
//
// expShiftedAVX512 four lanes at a time: from the start, while no element
// needs Exp's special cases,
//
//	for i := range src[:n] {
//		dst[i] = Exp(src[i] - shift)
//	}
//
// and it returns n: len(src), or the start of the first block of four
// (or of the last 1-3) with a lane that Exp treats apart. In Exp's
// terms (see expShiftedAVX512 for the steps):
//
//	x = src - shift
//	k = int(float64(log2e*x) ± 0.5)   (the sign of 0.5 that of x)
//	hi = x - float64(fk*ln2Hi); lo = float64(fk*ln2Lo); r = hi - lo
//	t = float64(r*r)
//	poly = p1 + float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))
//	c = r - float64(t*poly)
//	y = 1 - ((lo - float64(r*c)/(2-c)) - hi)
//	bits(y) + k<<52, or 1 + x where |x| < 2^-28
TEXT ·expShiftedAVX2(SB), NOSPLIT, $0-64
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSD shift+48(FP), Y15
	XORQ         AX, AX
	SUBQ         $4, CX
	JLT          exp_tail

exp_loop:
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD  Y15, Y0, Y0
	EXP_SPECIAL
	TESTL   BX, BX
	JNZ     exp_done
	EXP_VALUE
	VMOVUPD Y10, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLE     exp_loop

exp_tail:
	// The last 1-3 elements under the mask Y14; the inactive lanes load
	// +0, which may look special: their bits are cleared from BX.
	ADDQ       $4, CX
	MOVQ       CX, DX
	SUBQ       AX, DX
	JZ         exp_done
	SD_TAIL_MASK
	VMASKMOVPD (SI)(AX*8), Y14, Y0
	VSUBPD     Y15, Y0, Y0
	EXP_SPECIAL
	VMOVMSKPD  Y14, DX
	ANDL       DX, BX
	JNZ        exp_done
	EXP_VALUE
	VMASKMOVPD Y10, Y14, (DI)(AX*8)
	MOVQ       CX, AX

exp_done:
	MOVQ AX, ret+56(FP)
	VZEROUPPER
	RET

// func maxAVX2(src []float64) (m float64, nan bool)
//
// maxAVX512 four lanes at a time: m is the largest element of src (-Inf
// if src is empty), nan whether any element is a NaN, in which case m
// means nothing. VMAXPD's answer for a NaN and for a pair of zeros
// depends on its operands' order, unlike Go's max; the caller takes m
// only when nan is false and m is not zero, and otherwise runs its Go
// loop:
//
//	m = math.Inf(-1)
//	for _, v := range src {
//		m = max(m, v)
//	}
TEXT ·maxAVX2(SB), NOSPLIT, $0-33
	MOVQ    src_base+0(FP), SI
	MOVQ    src_len+8(FP), CX
	VMOVUPD C4(16), Y1
	VXORPD  Y5, Y5, Y5
	XORQ    AX, AX
	SUBQ    $4, CX
	JLT     max_tail

max_loop:
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $3, Y0, Y0, Y2
	VORPD   Y2, Y5, Y5
	VMAXPD  Y0, Y1, Y1
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLE     max_loop

max_tail:
	// The last 1-3 elements under the mask Y14; the other lanes take the
	// running maximum, which changes nothing.
	ADDQ       $4, CX
	MOVQ       CX, DX
	SUBQ       AX, DX
	JZ         max_reduce
	SD_TAIL_MASK
	VMASKMOVPD (SI)(AX*8), Y14, Y0
	VBLENDVPD  Y14, Y0, Y1, Y0
	VCMPPD     $3, Y0, Y0, Y2
	VORPD      Y2, Y5, Y5
	VMAXPD     Y0, Y1, Y1

max_reduce:
	VEXTRACTF128 $1, Y1, X2
	VMAXPD       X2, X1, X1
	VPERMILPD    $1, X1, X2
	VMAXSD       X2, X1, X1
	VMOVSD       X1, m+24(FP)
	VMOVMSKPD    Y5, AX
	TESTL        AX, AX
	SETNE        nan+32(FP)
	VZEROUPPER
	RET

// func divAVX2(x []float64, d float64)
//
// Four at a time and then the last 1-3 under a mask, with the same
// correctly rounded division:
//
//	for i := range x {
//		x[i] /= d
//	}
TEXT ·divAVX2(SB), NOSPLIT, $0-32
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSD d+24(FP), Y1
	XORQ         AX, AX
	SUBQ         $4, CX
	JLT          div_tail

div_loop:
	VMOVUPD (DI)(AX*8), Y0
	VDIVPD  Y1, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLE     div_loop

div_tail:
	ADDQ       $4, CX
	MOVQ       CX, DX
	SUBQ       AX, DX
	JZ         div_done
	SD_TAIL_MASK
	VMASKMOVPD (DI)(AX*8), Y14, Y0
	VDIVPD     Y1, Y0, Y0
	VMASKMOVPD Y0, Y14, (DI)(AX*8)

div_done:
	VZEROUPPER
	RET
