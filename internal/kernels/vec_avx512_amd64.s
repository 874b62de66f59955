//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX-512 loops for the elementwise kernels, attention backward's softmax
// step, Adam and the sum of squares' lanes. Each lane does what the Go
// twin (vec.go) does to one element, with the same operations in the same
// order (and no fused multiply-add but where the Go twin writes
// math.FMA), so the bits are the Go twin's. The last len%8 elements go
// under an opmask. The hooks (vec_amd64.go) check the lengths.

// ewMask<>+2n is the opmask of lanes 0..n-1.
DATA ewMask<>+0x00(SB)/2, $0x00
DATA ewMask<>+0x02(SB)/2, $0x01
DATA ewMask<>+0x04(SB)/2, $0x03
DATA ewMask<>+0x06(SB)/2, $0x07
DATA ewMask<>+0x08(SB)/2, $0x0f
DATA ewMask<>+0x0a(SB)/2, $0x1f
DATA ewMask<>+0x0c(SB)/2, $0x3f
DATA ewMask<>+0x0e(SB)/2, $0x7f
GLOBL ewMask<>(SB), RODATA|NOPTR, $16

// TAIL_MASK sets K1 to the lanes of the len%8 elements left (n in CX,
// clobbers DX).
#define TAIL_MASK \
	MOVQ  CX, DX; \
	ANDQ  $7, DX; \
	LEAQ  ewMask<>(SB), R8; \
	KMOVW (R8)(DX*2), K1

// func reluAVX512(out, in []float64)
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
// VMAXPD(0, v) returns v when v is NaN or a zero (max's NaN), else the
// larger; adding +0 then turns -0 into +0, as max(-0, 0) is +0, and
// changes nothing else.
TEXT ·reluAVX512(SB), NOSPLIT, $0-48
	MOVQ   out_base+0(FP), DI
	MOVQ   in_base+24(FP), SI
	MOVQ   in_len+32(FP), CX
	VPXORQ Z0, Z0, Z0
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-8, BX
	JZ     relu_tail

relu_loop:
	VMOVUPD (SI)(AX*8), Z1
	VMAXPD  Z1, Z0, Z1
	VADDPD  Z0, Z1, Z1
	VMOVUPD Z1, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLT     relu_loop

relu_tail:
	TAIL_MASK
	VMOVUPD.Z (SI)(AX*8), K1, Z1
	VMAXPD    Z1, Z0, Z1
	VADDPD    Z0, Z1, Z1
	VMOVUPD   Z1, K1, (DI)(AX*8)
	VZEROUPPER
	RET

// func addAVX512(out, a, b []float64)
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
TEXT ·addAVX512(SB), NOSPLIT, $0-72
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R9
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX
	JZ   add_tail

add_loop:
	VMOVUPD (SI)(AX*8), Z1
	VADDPD  (R9)(AX*8), Z1, Z1
	VMOVUPD Z1, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLT     add_loop

add_tail:
	TAIL_MASK
	VMOVUPD.Z (SI)(AX*8), K1, Z1
	VMOVUPD.Z (R9)(AX*8), K1, Z2
	VADDPD    Z2, Z1, Z1
	VMOVUPD   Z1, K1, (DI)(AX*8)
	VZEROUPPER
	RET

// func reluMaskAVX512(d, inp []float64)
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0 // +0: the bits of d[i] masked away
//		}
//	}
//
// The compare is ordered: a NaN input masks, as inp[i] > 0 is false.
TEXT ·reluMaskAVX512(SB), NOSPLIT, $0-48
	MOVQ   d_base+0(FP), DI
	MOVQ   d_len+8(FP), CX
	MOVQ   inp_base+24(FP), SI
	VPXORQ Z0, Z0, Z0
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-8, BX
	JZ     mask_tail

mask_loop:
	VMOVUPD   (SI)(AX*8), Z1
	VCMPPD    $30, Z0, Z1, K2          // inp > 0, ordered, quiet
	VMOVUPD.Z (DI)(AX*8), K2, Z2
	VMOVUPD   Z2, (DI)(AX*8)
	ADDQ      $8, AX
	CMPQ      AX, BX
	JLT       mask_loop

mask_tail:
	TAIL_MASK
	VMOVUPD.Z (SI)(AX*8), K1, Z1
	VCMPPD    $30, Z0, Z1, K2
	VMOVUPD.Z (DI)(AX*8), K2, Z2
	VMOVUPD   Z2, K1, (DI)(AX*8)
	VZEROUPPER
	RET

// func softmaxBackwardAVX512(dp, p []float64, sum, scale float64)
//
//	for s, ps := range p {
//		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
//	}
//
// (p is as long as dp.) Three rounded operations per lane, in the Go
// loop's order; multiplication commutes bit for bit.
TEXT ·softmaxBackwardAVX512(SB), NOSPLIT, $0-64
	MOVQ         dp_base+0(FP), DI
	MOVQ         dp_len+8(FP), CX
	MOVQ         p_base+24(FP), SI
	VBROADCASTSD sum+48(FP), Z2
	VBROADCASTSD scale+56(FP), Z3
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	JZ           smb_tail

smb_loop:
	VMOVUPD (DI)(AX*8), Z0
	VSUBPD  Z2, Z0, Z0
	VMULPD  (SI)(AX*8), Z0, Z0
	VMULPD  Z3, Z0, Z0
	VMOVUPD Z0, (DI)(AX*8)
	ADDQ    $8, AX
	CMPQ    AX, BX
	JLT     smb_loop

smb_tail:
	TAIL_MASK
	VMOVUPD.Z (DI)(AX*8), K1, Z0
	VMOVUPD.Z (SI)(AX*8), K1, Z1
	VSUBPD    Z2, Z0, Z0
	VMULPD    Z1, Z0, Z0
	VMULPD    Z3, Z0, Z0
	VMOVUPD   Z0, K1, (DI)(AX*8)
	VZEROUPPER
	RET

// ADAM_STEP updates the eight elements at AX under the mask K1.
#define ADAM_STEP \
	VMOVUPD.Z (SI)(AX*8), K1, Z0; \
	VMOVUPD.Z (R9)(AX*8), K1, Z1; \
	VMOVUPD.Z (R10)(AX*8), K1, Z2; \
	VMOVUPD.Z (DI)(AX*8), K1, Z3; \
	VMULPD    Z20, Z1, Z1; \
	VMULPD    Z21, Z0, Z4; \
	VADDPD    Z4, Z1, Z1; \
	VMULPD    Z0, Z0, Z5; \
	VMULPD    Z22, Z2, Z2; \
	VMULPD    Z23, Z5, Z5; \
	VADDPD    Z5, Z2, Z2; \
	VMOVUPD   Z1, K1, (R9)(AX*8); \
	VMOVUPD   Z2, K1, (R10)(AX*8); \
	VDIVPD    Z24, Z1, Z1; \
	VDIVPD    Z25, Z2, Z2; \
	VSQRTPD   Z2, Z2; \
	VADDPD    Z27, Z2, Z2; \
	VMULPD    Z26, Z1, Z1; \
	VDIVPD    Z2, Z1, Z1; \
	VMULPD    Z28, Z3, Z3; \
	VSUBPD    Z1, Z3, Z3; \
	VMOVUPD   Z3, K1, (DI)(AX*8)

// func adamAVX512(params, grads, m, v []float64, k *[9]float64)
//
// With k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink}:
//
//	for i := range params {
//		g := grads[i]
//		m[i] = float64(b1*m[i]) + float64((1-b1)*g)
//		v[i] = float64(b2*v[i]) + float64((1-b2)*float64(g*g))
//		mh, vh := m[i]/c1, v[i]/c2
//		p := float64(params[i] * shrink)
//		params[i] = p - float64(lr*mh)/(math.Sqrt(vh)+eps)
//	}
//
// (shrink is 1 for a tensor without weight decay: p·1 is p.)
TEXT ·adamAVX512(SB), NOSPLIT, $0-104
	MOVQ         params_base+0(FP), DI
	MOVQ         params_len+8(FP), CX
	MOVQ         grads_base+24(FP), SI
	MOVQ         m_base+48(FP), R9
	MOVQ         v_base+72(FP), R10
	MOVQ         k+96(FP), R11
	VBROADCASTSD 0(R11), Z20           // b1
	VBROADCASTSD 8(R11), Z21           // 1-b1
	VBROADCASTSD 16(R11), Z22          // b2
	VBROADCASTSD 24(R11), Z23          // 1-b2
	VBROADCASTSD 32(R11), Z24          // c1
	VBROADCASTSD 40(R11), Z25          // c2
	VBROADCASTSD 48(R11), Z26          // lr
	VBROADCASTSD 56(R11), Z27          // eps
	VBROADCASTSD 64(R11), Z28          // shrink
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX
	KXNORW       K1, K1, K1            // all lanes
	JZ           adam_tail

adam_loop:
	ADAM_STEP
	ADDQ $8, AX
	CMPQ AX, BX
	JLT  adam_loop

adam_tail:
	TAIL_MASK
	ADAM_STEP
	VZEROUPPER
	RET


// func sumSquaresLanesAVX512(xs []float64, s *[8]float64)
//
// SumSquares8's eight chains over the whole groups of eight of xs, each
// lane of one register one chain, continued from s and stored back:
//
//	for i := 0; i+8 <= len(xs); i += 8 {
//		for l := 0; l < 8; l++ {
//			s[l] = math.FMA(xs[i+l], xs[i+l], s[l])
//		}
//	}
//
// Each lane is one chain, so the loop runs at one FMA's latency per
// group of eight: eight elements in the time the Go loop takes for one
// or two.
TEXT ·sumSquaresLanesAVX512(SB), NOSPLIT, $0-32
	MOVQ    xs_base+0(FP), SI
	MOVQ    xs_len+8(FP), CX
	MOVQ    s+24(FP), DI
	VMOVUPD (DI), Z0
	ANDQ    $-8, CX
	XORQ    AX, AX
	CMPQ    AX, CX
	JGE     ssq_done

ssq_loop:
	VMOVUPD     (SI)(AX*8), Z1
	VFMADD231PD Z1, Z1, Z0
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         ssq_loop

ssq_done:
	VMOVUPD Z0, (DI)
	VZEROUPPER
	RET
