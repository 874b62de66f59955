//go:build amd64 && gc && !purego

#include "textflag.h"

// AVX2+FMA twins of the AVX-512 elementwise and Adam loops
// (vec_avx512_amd64.s), four lanes to a YMM register, for CPUs without
// AVX-512. Each lane does what the Go twin (vec.go) does to one element,
// with the same operations in the same order, so the bits are the Go
// twin's. The last len%4 elements go through VMASKMOVPD (masked lanes
// load +0 and are never stored). The hooks (vec_amd64.go) check the
// lengths.

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

// func reluAVX2(out, in []float64)
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
// VMAXPD(0, v) returns v when v is NaN or a zero (max's NaN), else the
// larger; adding +0 then turns -0 into +0, as max(-0, 0) is +0, and
// changes nothing else.
TEXT ·reluAVX2(SB), NOSPLIT, $0-48
	MOVQ   out_base+0(FP), DI
	MOVQ   in_base+24(FP), SI
	MOVQ   in_len+32(FP), CX
	VXORPD Y0, Y0, Y0
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-4, BX
	JZ     relu_tail

relu_loop:
	VMOVUPD (SI)(AX*8), Y1
	VMAXPD  Y1, Y0, Y1
	VADDPD  Y0, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     relu_loop

relu_tail:
	VEC_TAIL(Y15, relu_done)
	VMASKMOVPD (SI)(AX*8), Y15, Y1
	VMAXPD     Y1, Y0, Y1
	VADDPD     Y0, Y1, Y1
	VMASKMOVPD Y1, Y15, (DI)(AX*8)

relu_done:
	VZEROUPPER
	RET

// func addAVX2(out, a, b []float64)
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
TEXT ·addAVX2(SB), NOSPLIT, $0-72
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R9
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-4, BX
	JZ   add_tail

add_loop:
	VMOVUPD (SI)(AX*8), Y1
	VADDPD  (R9)(AX*8), Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     add_loop

add_tail:
	VEC_TAIL(Y15, add_done)
	VMASKMOVPD (SI)(AX*8), Y15, Y1
	VMASKMOVPD (R9)(AX*8), Y15, Y2
	VADDPD     Y2, Y1, Y1
	VMASKMOVPD Y1, Y15, (DI)(AX*8)

add_done:
	VZEROUPPER
	RET

// func reluMaskAVX2(d, inp []float64)
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0 // +0: the bits of d[i] masked away
//		}
//	}
//
// The compare is ordered: a NaN input masks, as inp[i] > 0 is false.
TEXT ·reluMaskAVX2(SB), NOSPLIT, $0-48
	MOVQ   d_base+0(FP), DI
	MOVQ   d_len+8(FP), CX
	MOVQ   inp_base+24(FP), SI
	VXORPD Y0, Y0, Y0
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-4, BX
	JZ     mask_tail

mask_loop:
	VMOVUPD (SI)(AX*8), Y1
	VCMPPD  $30, Y0, Y1, Y1    // inp > 0, ordered, quiet
	VANDPD  (DI)(AX*8), Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     mask_loop

mask_tail:
	VEC_TAIL(Y15, mask_done)
	VMASKMOVPD (SI)(AX*8), Y15, Y1
	VCMPPD     $30, Y0, Y1, Y1
	VMASKMOVPD (DI)(AX*8), Y15, Y2
	VANDPD     Y2, Y1, Y1
	VMASKMOVPD Y1, Y15, (DI)(AX*8)

mask_done:
	VZEROUPPER
	RET

// ADAM4 updates four elements: grads in Y0, m in Y1, v in Y2, params in
// Y3; the new m and v are left in Y4 and Y5 (to be stored), the new
// params in Y3.
#define ADAM4 \
	VMULPD  Y6, Y1, Y1; \
	VMULPD  Y7, Y0, Y4; \
	VADDPD  Y4, Y1, Y4; \
	VMULPD  Y0, Y0, Y0; \
	VMULPD  Y8, Y2, Y2; \
	VMULPD  Y9, Y0, Y0; \
	VADDPD  Y0, Y2, Y5; \
	VDIVPD  Y10, Y4, Y1; \
	VDIVPD  Y11, Y5, Y2; \
	VSQRTPD Y2, Y2; \
	VADDPD  Y13, Y2, Y2; \
	VMULPD  Y12, Y1, Y1; \
	VDIVPD  Y2, Y1, Y1; \
	VMULPD  Y14, Y3, Y3; \
	VSUBPD  Y1, Y3, Y3

// func adamAVX2(params, grads, m, v []float64, k *[9]float64)
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
TEXT ·adamAVX2(SB), NOSPLIT, $0-104
	MOVQ         params_base+0(FP), DI
	MOVQ         params_len+8(FP), CX
	MOVQ         grads_base+24(FP), SI
	MOVQ         m_base+48(FP), R9
	MOVQ         v_base+72(FP), R10
	MOVQ         k+96(FP), R11
	VBROADCASTSD 0(R11), Y6            // b1
	VBROADCASTSD 8(R11), Y7            // 1-b1
	VBROADCASTSD 16(R11), Y8           // b2
	VBROADCASTSD 24(R11), Y9           // 1-b2
	VBROADCASTSD 32(R11), Y10          // c1
	VBROADCASTSD 40(R11), Y11          // c2
	VBROADCASTSD 48(R11), Y12          // lr
	VBROADCASTSD 56(R11), Y13          // eps
	VBROADCASTSD 64(R11), Y14          // shrink
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JZ           adam_tail

adam_loop:
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (R9)(AX*8), Y1
	VMOVUPD (R10)(AX*8), Y2
	VMOVUPD (DI)(AX*8), Y3
	ADAM4
	VMOVUPD Y4, (R9)(AX*8)
	VMOVUPD Y5, (R10)(AX*8)
	VMOVUPD Y3, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     adam_loop

adam_tail:
	VEC_TAIL(Y15, adam_done)
	VMASKMOVPD (SI)(AX*8), Y15, Y0
	VMASKMOVPD (R9)(AX*8), Y15, Y1
	VMASKMOVPD (R10)(AX*8), Y15, Y2
	VMASKMOVPD (DI)(AX*8), Y15, Y3
	ADAM4
	VMASKMOVPD Y4, Y15, (R9)(AX*8)
	VMASKMOVPD Y5, Y15, (R10)(AX*8)
	VMASKMOVPD Y3, Y15, (DI)(AX*8)

adam_done:
	VZEROUPPER
	RET

// func softmaxBackwardAVX2(dp, p []float64, sum, scale float64)
//
//	for s, ps := range p {
//		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
//	}
//
// (p is as long as dp.) Three rounded operations per lane, in the Go
// loop's order, as softmaxBackwardAVX512; the last len%4 elements under
// a mask.
TEXT ·softmaxBackwardAVX2(SB), NOSPLIT, $0-64
	MOVQ         dp_base+0(FP), DI
	MOVQ         dp_len+8(FP), CX
	MOVQ         p_base+24(FP), SI
	VBROADCASTSD sum+48(FP), Y2
	VBROADCASTSD scale+56(FP), Y3
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JZ           smb_tail

smb_loop:
	VMOVUPD (DI)(AX*8), Y0
	VSUBPD  Y2, Y0, Y0
	VMULPD  (SI)(AX*8), Y0, Y0
	VMULPD  Y3, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, BX
	JLT     smb_loop

smb_tail:
	VEC_TAIL(Y15, smb_done)
	VMASKMOVPD (DI)(AX*8), Y15, Y0
	VMASKMOVPD (SI)(AX*8), Y15, Y1
	VSUBPD     Y2, Y0, Y0
	VMULPD     Y1, Y0, Y0
	VMULPD     Y3, Y0, Y0
	VMASKMOVPD Y0, Y15, (DI)(AX*8)

smb_done:
	VZEROUPPER
	RET

// func sumSquaresLanesAVX2(xs []float64, s *[8]float64)
//
// SumSquares8's eight chains over the whole groups of eight of xs,
// lanes 0-3 in one register and 4-7 in another, continued from s and
// stored back:
//
//	for i := 0; i+8 <= len(xs); i += 8 {
//		for l := 0; l < 8; l++ {
//			s[l] = math.FMA(xs[i+l], xs[i+l], s[l])
//		}
//	}
TEXT ·sumSquaresLanesAVX2(SB), NOSPLIT, $0-32
	MOVQ    xs_base+0(FP), SI
	MOVQ    xs_len+8(FP), CX
	MOVQ    s+24(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	ANDQ    $-8, CX
	XORQ    AX, AX
	CMPQ    AX, CX
	JGE     ssq_done

ssq_loop:
	VMOVUPD     (SI)(AX*8), Y2
	VMOVUPD     32(SI)(AX*8), Y3
	VFMADD231PD Y2, Y2, Y0
	VFMADD231PD Y3, Y3, Y1
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         ssq_loop

ssq_done:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET
