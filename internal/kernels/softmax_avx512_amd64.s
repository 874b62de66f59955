//go:build amd64 && gc && !purego

#include "textflag.h"

// Constants of Exp (math.go), one ZMM-broadcastable float64 each.
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
DATA expConst<>+0x80(SB)/8, $0xfff0000000000000          // -Inf
GLOBL expConst<>(SB), RODATA|NOPTR, $136

// expTail<>+2n is the opmask of lanes 0..n-1.
DATA expTail<>+0x00(SB)/2, $0x00
DATA expTail<>+0x02(SB)/2, $0x01
DATA expTail<>+0x04(SB)/2, $0x03
DATA expTail<>+0x06(SB)/2, $0x07
DATA expTail<>+0x08(SB)/2, $0x0f
DATA expTail<>+0x0a(SB)/2, $0x1f
DATA expTail<>+0x0c(SB)/2, $0x3f
DATA expTail<>+0x0e(SB)/2, $0x7f
GLOBL expTail<>(SB), RODATA|NOPTR, $16

#define C(off) expConst<>+off(SB)

// EXP_BLOCK computes, from src - shift in Z0, Exp's ordinary path in
// Z10 for eight lanes, and sets the flags for JNZ if any lane is special
// (K1: NaN, k outside (-1020, 1020)). The lanes with |x| < nearZero
// (K4), which include the row's maximum itself, get Exp's 1 + x in
// place of the polynomial, so they need no detour through the scalar
// Exp. EXP_BLOCK_MASKED counts only the lanes of K3. EXP_SPECIAL
// finds the special lanes and EXP_POLY computes every lane; neither
// touches the flags KORTESTW sets between them.
#define EXP_SPECIAL \
	VSUBPD  Z31, Z0, Z0; \
	VMULPD.BCST C(0x00), Z0, Z1; \
	VPANDQ.BCST C(0x70), Z0, Z2; \
	VPORQ.BCST  C(0x08), Z2, Z2; \
	VADDPD      Z2, Z1, Z1; \
	VCVTTPD2DQ  Z1, Y3; \
	VCVTDQ2PD   Y3, Z4; \
	VCMPPD        $3, Z0, Z0, K1; \
	VPANDQ.BCST   C(0x78), Z0, Z5; \
	VCMPPD.BCST   $1, C(0x58), Z5, K4; \
	VCMPPD.BCST   $13, C(0x60), Z4, K2; \
	KORW          K2, K1, K1; \
	VCMPPD.BCST   $2, C(0x68), Z4, K2; \
	KORW          K2, K1, K1

#define EXP_POLY \
	VMULPD.BCST C(0x10), Z4, Z5; \
	VSUBPD      Z5, Z0, Z5; \
	VMULPD.BCST C(0x18), Z4, Z6; \
	VSUBPD      Z6, Z5, Z7; \
	VMULPD      Z7, Z7, Z8; \
	VMULPD.BCST C(0x40), Z8, Z9; \
	VADDPD.BCST C(0x38), Z9, Z9; \
	VMULPD      Z9, Z8, Z9; \
	VADDPD.BCST C(0x30), Z9, Z9; \
	VMULPD      Z9, Z8, Z9; \
	VADDPD.BCST C(0x28), Z9, Z9; \
	VMULPD      Z9, Z8, Z9; \
	VADDPD.BCST C(0x20), Z9, Z9; \
	VMULPD      Z9, Z8, Z9; \
	VSUBPD      Z9, Z7, Z9; \
	VMULPD      Z9, Z7, Z10; \
	VBROADCASTSD C(0x50), Z11; \
	VSUBPD      Z9, Z11, Z11; \
	VDIVPD      Z11, Z10, Z10; \
	VSUBPD      Z10, Z6, Z10; \
	VSUBPD      Z5, Z10, Z10; \
	VBROADCASTSD C(0x48), Z11; \
	VSUBPD      Z10, Z11, Z10; \
	VPMOVSXDQ Y3, Z3; \
	VPSLLQ    $52, Z3, Z3; \
	VPADDQ    Z3, Z10, Z10; \
	VADDPD.BCST C(0x48), Z0, K4, Z10

#define EXP_BLOCK \
	EXP_SPECIAL; \
	KORTESTW K1, K1; \
	EXP_POLY

#define EXP_BLOCK_MASKED \
	EXP_SPECIAL; \
	KANDW    K3, K1, K1; \
	KORTESTW K1, K1; \
	EXP_POLY

// func expShiftedAVX512(dst, src []float64, shift float64) int
//
// From the start, eight elements at a time and then the last 1-7 under
// a mask, while no element needs Exp's special cases:
//
//	for i := range src[:n] {
//		dst[i] = Exp(src[i] - shift)
//	}
//
// and it returns n: len(src), or the start of the first block with a
// lane that Exp treats apart (NaN, ±Inf, or a result outside the
// normal range, where Exp calls Ldexp); lanes with |x| < 2^-28 get
// Exp's 1 + x right here. Each lane performs
// Exp's operations in Exp's order, with the same explicit roundings
// (no fused multiply-add), so its bits are Exp's; the caller finishes
// the rest with Exp itself. EXP_BLOCK's steps, in Exp's terms:
//
//	x = src - shift
//	k = int(float64(log2e*x) ± 0.5)   (the sign of 0.5 that of x)
//	hi = x - float64(fk*ln2Hi); lo = float64(fk*ln2Lo); r = hi - lo
//	t = float64(r*r)
//	poly = p1 + float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))
//	c = r - float64(t*poly)
//	y = 1 - ((lo - float64(r*c)/(2-c)) - hi)
//	bits(y) + k<<52, or 1 + x where |x| < 2^-28
TEXT ·expShiftedAVX512(SB), NOSPLIT, $0-64
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSD shift+48(FP), Z31
	LEAQ         expTail<>(SB), R8
	XORQ         AX, AX
	SUBQ         $8, CX
	JLT          exp_tail

exp_loop:
	VMOVUPD (SI)(AX*8), Z0
	EXP_BLOCK
	JNZ     exp_done
	VMOVUPD Z10, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLE     exp_loop

exp_tail:
	// The last 1-7 elements under the mask K3 (inactive lanes load +0,
	// which may look special: EXP_BLOCK_MASKED leaves them out).
	ADDQ      $8, CX
	MOVQ      CX, DX
	SUBQ      AX, DX
	JZ        exp_done
	KMOVW     (R8)(DX*2), K3
	VMOVUPD.Z (SI)(AX*8), K3, Z0
	EXP_BLOCK_MASKED
	JNZ       exp_done
	VMOVUPD   Z10, K3, (DI)(AX*8)
	MOVQ      CX, AX

exp_done:
	MOVQ AX, ret+56(FP)
	VZEROUPPER
	RET

// MAX_REDUCE folds the eight lanes of Z1 into X1 with VMAXPD (Y2 a
// temporary): the maximum's horizontal step, shared by maxAVX512 and
// softmaxScaledAVX512.
#define MAX_REDUCE \
	VEXTRACTF64X4 $1, Z1, Y2; \
	VMAXPD        Y2, Y1, Y1; \
	VEXTRACTF128  $1, Y1, X2; \
	VMAXPD        X2, X1, X1; \
	VPERMILPD     $1, X1, X2; \
	VMAXSD        X2, X1, X1

// func maxAVX512(src []float64) (m float64, nan bool)
//
// m is the largest element of src (-Inf if src is empty), nan whether any
// element is a NaN, in which case m means nothing. VMAXPD's answer for a
// NaN and for a pair of zeros depends on its operands' order, unlike Go's
// max; the caller takes m only when nan is false and m is not zero (so no
// zero's sign can matter), and otherwise runs its Go loop:
//
//	m = math.Inf(-1)
//	for _, v := range src {
//		m = max(m, v)
//	}
TEXT ·maxAVX512(SB), NOSPLIT, $0-33
	MOVQ         src_base+0(FP), SI
	MOVQ         src_len+8(FP), CX
	VBROADCASTSD C(0x80), Z1
	LEAQ         expTail<>(SB), R8
	KXORW        K5, K5, K5
	XORQ         AX, AX
	SUBQ         $8, CX
	JLT          max_tail

max_loop:
	VMOVUPD (SI)(AX*8), Z0
	VCMPPD  $3, Z0, Z0, K1
	KORW    K1, K5, K5
	VMAXPD  Z0, Z1, Z1
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLE     max_loop

max_tail:
	// The last 1-7 elements under the mask K3; the other lanes keep the
	// running maximum, which changes nothing.
	ADDQ    $8, CX
	MOVQ    CX, DX
	SUBQ    AX, DX
	JZ      max_reduce
	KMOVW   (R8)(DX*2), K3
	VMOVAPD Z1, Z0
	VMOVUPD (SI)(AX*8), K3, Z0
	VCMPPD  $3, Z0, Z0, K1
	KORW    K1, K5, K5
	VMAXPD  Z0, Z1, Z1

max_reduce:
	MAX_REDUCE
	VMOVSD        X1, m+24(FP)
	KMOVW         K5, AX
	TESTW         AX, AX
	SETNE         nan+32(FP)
	VZEROUPPER
	RET

// func divAVX512(x []float64, d float64)
//
// Eight at a time and then the last 1-7 under a mask, with the same
// correctly rounded division:
//
//	for i := range x {
//		x[i] /= d
//	}
TEXT ·divAVX512(SB), NOSPLIT, $0-32
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSD d+24(FP), Z1
	LEAQ         expTail<>(SB), R8
	XORQ         AX, AX
	SUBQ         $8, CX
	JLT          div_tail

div_loop:
	VMOVUPD (DI)(AX*8), Z0
	VDIVPD  Z1, Z0, Z0
	VMOVUPD Z0, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLE     div_loop

div_tail:
	ADDQ      $8, CX
	MOVQ      CX, DX
	SUBQ      AX, DX
	JZ        div_done
	KMOVW     (R8)(DX*2), K3
	VMOVUPD.Z (DI)(AX*8), K3, Z0
	VDIVPD    Z1, Z0, Z0
	VMOVUPD   Z0, K3, (DI)(AX*8)

div_done:
	VZEROUPPER
	RET

// func softmaxScaledAVX512(row []float64, scale float64) (m float64, done int)
//
// SoftmaxScaled in one call, for the attention's short rows, where four
// calls and three Go loops a row cost more than the arithmetic:
//
//	for s, v := range row {
//		row[s] = float64(v * scale)
//	}
//	m = max(row...)                  // maxAVX512's, declined as there
//	for s := range row {
//		row[s] = Exp(row[s] - m) // expShiftedAVX512's blocks
//	}
//	sum := 0.0
//	for _, e := range row {
//		sum += e
//	}
//	for s := range row {
//		row[s] /= sum
//	}
//
// done = len(row) when all of it ran. done = -1 when the maximum was
// declined (a NaN, or a zero maximum whose sign VMAXPD might get wrong):
// row is scaled and nothing more. Otherwise row[:done] holds the
// exponentials, row[done:] the scaled values, and done is the start of
// the first block with a lane Exp treats apart: the caller finishes
// from there with Exp, the sum and the division.
TEXT ·softmaxScaledAVX512(SB), NOSPLIT, $0-48
	MOVQ         row_base+0(FP), DI
	MOVQ         row_len+8(FP), CX
	MOVQ         CX, R9
	TESTQ        CX, CX
	JZ           sms_done
	VBROADCASTSD scale+24(FP), Z30
	LEAQ         expTail<>(SB), R8
	MOVQ         CX, BX
	SUBQ         $8, BX

	// Scale in place, and the maximum with maxAVX512's NaN flag (K5).
	VBROADCASTSD C(0x80), Z1
	KXORW        K5, K5, K5
	XORQ         AX, AX
	CMPQ         BX, $0
	JLT          sms_scale_tail

sms_scale_loop:
	VMULPD  (DI)(AX*8), Z30, Z0
	VMOVUPD Z0, (DI)(AX*8)
	VCMPPD  $3, Z0, Z0, K1
	KORW    K1, K5, K5
	VMAXPD  Z0, Z1, Z1
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLE     sms_scale_loop

sms_scale_tail:
	// The last 1-7 under K3; the other lanes keep the running maximum.
	MOVQ    CX, DX
	SUBQ    AX, DX
	JZ      sms_max_reduce
	KMOVW   (R8)(DX*2), K3
	VMOVAPD Z1, Z0
	VMOVUPD (DI)(AX*8), K3, Z0
	VMULPD  Z30, Z0, K3, Z0
	VMOVUPD Z0, K3, (DI)(AX*8)
	VCMPPD  $3, Z0, Z0, K1
	KORW    K1, K5, K5
	VMAXPD  Z0, Z1, Z1

sms_max_reduce:
	MAX_REDUCE
	VMOVSD        X1, m+32(FP)
	MOVQ          $-1, R9
	KORTESTW      K5, K5
	JNZ           sms_done
	VXORPD        X2, X2, X2
	VUCOMISD      X2, X1
	JEQ           sms_done

	// The exponentials, as expShiftedAVX512.
	VBROADCASTSD X1, Z31
	XORQ         AX, AX
	CMPQ         BX, $0
	JLT          sms_exp_tail

sms_exp_loop:
	VMOVUPD (DI)(AX*8), Z0
	EXP_BLOCK
	JNZ     sms_exp_stop
	VMOVUPD Z10, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLE     sms_exp_loop

sms_exp_tail:
	MOVQ      CX, DX
	SUBQ      AX, DX
	JZ        sms_sum
	KMOVW     (R8)(DX*2), K3
	VMOVUPD.Z (DI)(AX*8), K3, Z0
	EXP_BLOCK_MASKED
	JNZ       sms_exp_stop
	VMOVUPD   Z10, K3, (DI)(AX*8)

sms_sum:
	// One chain in index order from +0, as expShifted's Go loop.
	VXORPD X0, X0, X0
	XORQ   AX, AX

sms_sum_loop:
	VADDSD (DI)(AX*8), X0, X0
	INCQ   AX
	CMPQ   AX, CX
	JLT    sms_sum_loop

	// The division, as divAVX512.
	VBROADCASTSD X0, Z1
	XORQ         AX, AX
	CMPQ         BX, $0
	JLT          sms_div_tail

sms_div_loop:
	VMOVUPD (DI)(AX*8), Z0
	VDIVPD  Z1, Z0, Z0
	VMOVUPD Z0, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLE     sms_div_loop

sms_div_tail:
	MOVQ      CX, DX
	SUBQ      AX, DX
	JZ        sms_all
	KMOVW     (R8)(DX*2), K3
	VMOVUPD.Z (DI)(AX*8), K3, Z0
	VDIVPD    Z1, Z0, Z0
	VMOVUPD   Z0, K3, (DI)(AX*8)

sms_all:
	MOVQ CX, R9
	JMP  sms_done

sms_exp_stop:
	MOVQ AX, R9

sms_done:
	MOVQ R9, done+40(FP)
	VZEROUPPER
	RET


// ---------------------------------------------------------------------
// Four rows of attention's softmax at once.

// SM4_MASK sets K3 to the lanes of the current block (BX = its first
// element, 8b) that row r (length n0 + r, R10 = n0) has: the low
// n0 + r - 8b bits, none when that is negative (more than 8 bits only
// set lanes a ZMM register does not have). CX and DX are temporaries.
#define SM4_MASK(r) \
	LEAQ    r(R10), CX; \
	SUBQ    BX, CX; \
	XORQ    DX, DX; \
	CMPQ    CX, $0; \
	CMOVQLT DX, CX; \
	MOVQ    $1, DX; \
	SHLQ    CX, DX; \
	DECQ    DX; \
	KMOVW   DX, K3

// SM4_SCALE: one block (AX = 64b bytes) of row r (at row, its scratch
// row at soff(SI)): scaled into scratch (the lanes past the row +0:
// 0·scale), and the row's running maximum mx over its own lanes.
#define SM4_SCALE(row, soff, r, mx) \
	SM4_MASK(r); \
	VMOVUPD.Z (row)(AX*1), K3, Z0; \
	VMULPD    Z30, Z0, Z0; \
	VMOVUPD   Z0, soff(SI)(AX*1); \
	VMAXPD    Z0, mx, K3, mx

// SM4_REDUCE folds a row's maximum mx into X1 and back into every lane
// of mx.
#define SM4_REDUCE(mx) \
	VMOVAPD      mx, Z1; \
	MAX_REDUCE; \
	VBROADCASTSD X1, mx

// SM4_EXP: one block of one row's exponentials (the maximum mx), as
// softmaxScaledAVX512's, from scratch back into scratch (the lanes past
// the row stay +0); a special lane jumps to fail.
#define SM4_EXP(soff, r, mx, fail) \
	SM4_MASK(r); \
	VMOVUPD.Z soff(SI)(AX*1), K3, Z0; \
	VMOVAPD   mx, Z31; \
	EXP_BLOCK_MASKED; \
	JNZ       fail; \
	VMOVUPD   Z10, K3, soff(SI)(AX*1)

// SM4_DIV: one block of one row divided by its sum (sm, every lane) and
// stored into the row's own lanes.
#define SM4_DIV(row, soff, r, sm) \
	SM4_MASK(r); \
	VMOVUPD.Z soff(SI)(AX*1), K3, Z0; \
	VDIVPD    sm, Z0, Z0; \
	VMOVUPD   Z0, K3, (row)(AX*1)

// func softmaxScaled4AVX512(rows []float64, ld, n0 int, scale float64, scratch *[128]float64) (done int)
//
// SoftmaxScaled on the four rows rows[r*ld : r*ld+n0+r], r = 0..3 (the
// rows of one four-row block of attention, each one longer than the
// last; n0+3 <= 32), with the same bits: the four rows' independent
// chains interleaved, where one row at a time waits on each step's
// latency. done has bit r set for each row it finished; a row with an
// exponential off Exp's ordinary path is left exactly as it was (its
// work stays in scratch), for the caller's SoftmaxScaled. Per row, in
// softmaxScaledAVX512's operations:
//
//	x[s] = float64(row[s] * scale)          (scratch; lanes past the row +0)
//	m = max(x)                              (VMAXPD)
//	e[s] = Exp(x[s] - m)                 (EXP_BLOCK_MASKED)
//	sum = ((+0 + e[0]) + e[1]) + ...        (index order; +0 past the row
//	                                         changes no bit of a sum >= +0)
//	row[s] = e[s] / sum
//
// softmaxScaledAVX512 declines a NaN or zero maximum, where VMAXPD's
// answer can differ from Go's max; here neither can change a bit: a NaN
// anywhere in the row makes its exponentials NaN, which stops the row,
// and a maximum of +0 or -0 gives every x[s] - m the same value but for
// the sign of a zero, whose exponential is 1 either way.
//
// Registers: DI, R12, R13, R14 the rows; SI scratch (row r at 256r);
// R10 n0, R8 n0+3 (the longest row); R9 the rows that stopped (bit r);
// AX the block's offset in bytes, BX its first element; Z24-Z27 the
// rows' maxima, then their sums (X12-X15 on the way), Z30 scale.
TEXT ·softmaxScaled4AVX512(SB), NOSPLIT, $0-64
	MOVQ         rows_base+0(FP), DI
	MOVQ         ld+24(FP), DX
	SHLQ         $3, DX
	LEAQ         (DI)(DX*1), R12
	LEAQ         (R12)(DX*1), R13
	LEAQ         (R13)(DX*1), R14
	MOVQ         n0+32(FP), R10
	LEAQ         3(R10), R8
	MOVQ         scratch+48(FP), SI
	VBROADCASTSD scale+40(FP), Z30
	XORQ         R9, R9

	// Phase 1: scale and maxima.
	VBROADCASTSD C(0x80), Z24
	VMOVAPD      Z24, Z25
	VMOVAPD      Z24, Z26
	VMOVAPD      Z24, Z27
	XORQ         AX, AX
	XORQ         BX, BX

sm4_scale:
	SM4_SCALE(DI, 0, 0, Z24)
	SM4_SCALE(R12, 256, 1, Z25)
	SM4_SCALE(R13, 512, 2, Z26)
	SM4_SCALE(R14, 768, 3, Z27)
	ADDQ $64, AX
	ADDQ $8, BX
	CMPQ BX, R8
	JLT  sm4_scale

	// Each row's maximum in all its lanes.
	SM4_REDUCE(Z24)
	SM4_REDUCE(Z25)
	SM4_REDUCE(Z26)
	SM4_REDUCE(Z27)

sm4_exps:
	// Phase 2: the exponentials, block by block, the rows side by side.
	XORQ AX, AX
	XORQ BX, BX

sm4_exp:
	BTQ $0, R9
	JC  sm4_exp1
	SM4_EXP(0, 0, Z24, sm4_fail0)
sm4_exp1:
	BTQ $1, R9
	JC  sm4_exp2
	SM4_EXP(256, 1, Z25, sm4_fail1)
sm4_exp2:
	BTQ $2, R9
	JC  sm4_exp3
	SM4_EXP(512, 2, Z26, sm4_fail2)
sm4_exp3:
	BTQ $3, R9
	JC  sm4_exp_next
	SM4_EXP(768, 3, Z27, sm4_fail3)
sm4_exp_next:
	ADDQ $64, AX
	ADDQ $8, BX
	CMPQ BX, R8
	JLT  sm4_exp
	JMP  sm4_sums

sm4_fail0:
	ORQ $1, R9
	JMP sm4_exp1
sm4_fail1:
	ORQ $2, R9
	JMP sm4_exp2
sm4_fail2:
	ORQ $4, R9
	JMP sm4_exp3
sm4_fail3:
	ORQ $8, R9
	JMP sm4_exp_next

sm4_sums:
	// Phase 3: four chains in index order from +0, side by side, over
	// n0+3 elements (a shorter row adds its +0s).
	VXORPD X12, X12, X12
	VXORPD X13, X13, X13
	VXORPD X14, X14, X14
	VXORPD X15, X15, X15
	XORQ   AX, AX

sm4_sum:
	VADDSD (SI)(AX*8), X12, X12
	VADDSD 256(SI)(AX*8), X13, X13
	VADDSD 512(SI)(AX*8), X14, X14
	VADDSD 768(SI)(AX*8), X15, X15
	INCQ   AX
	CMPQ   AX, R8
	JLT    sm4_sum
	VBROADCASTSD X12, Z24
	VBROADCASTSD X13, Z25
	VBROADCASTSD X14, Z26
	VBROADCASTSD X15, Z27

	// Phase 4: the division, into the rows that went through.
	XORQ AX, AX
	XORQ BX, BX

sm4_div:
	BTQ $0, R9
	JC  sm4_div1
	SM4_DIV(DI, 0, 0, Z24)
sm4_div1:
	BTQ $1, R9
	JC  sm4_div2
	SM4_DIV(R12, 256, 1, Z25)
sm4_div2:
	BTQ $2, R9
	JC  sm4_div3
	SM4_DIV(R13, 512, 2, Z26)
sm4_div3:
	BTQ $3, R9
	JC  sm4_div_next
	SM4_DIV(R14, 768, 3, Z27)
sm4_div_next:
	ADDQ $64, AX
	ADDQ $8, BX
	CMPQ BX, R8
	JLT  sm4_div

	XORQ $15, R9
	MOVQ R9, done+56(FP)
	VZEROUPPER
	RET
