//go:build amd64 && gc && !purego

// gemm_pack_amd64.go owns the AVX2 path's packed gemmNN: its blocking, its packing buffers and its kernels' stubs.

package kernels

import "sync/atomic"

// packBufs are one product's packing buffers: a block of A and a block
// of B.
type packBufs struct {
	a [mcPack * kcPack]float64
	b [kcPack * ncPack]float64
}

// packPool lends packBufs to products running on any number of
// goroutines at once, without a lock and, once it holds as many as run
// at once, without allocating: a buffer is taken from a slot and put
// back into a free one.
type packPool struct {
	slots [16]atomic.Pointer[packBufs]
}

var packs packPool

func (p *packPool) get() *packBufs {
	for i := range p.slots {
		if b := p.slots[i].Swap(nil); b != nil {
			return b
		}
	}
	return new(packBufs)
}

func (p *packPool) put(b *packBufs) {
	for i := range p.slots {
		if p.slots[i].CompareAndSwap(nil, b) {
			return
		}
	}
}

// stridedAFast is StridedAFast: the AVX2 path's products pack A.
func stridedAFast() bool { return level == levelAVX2 }

// usePacked reports whether gemmNN of this shape goes through the packed
// AVX2 kernels: at least 16 rows (a panel of B is then reused by four
// tiles or more, which pays for its copy) and 16 columns.
func usePacked(M, N, K int) bool {
	return M >= 16 && N >= 16 && K >= 4
}

// gemmNNPacked is gemmNN (M, N, K >= 1, strides >= 0, in bounds) on the
// packed AVX2 kernels, the chains started from C (mode 0), the bias
// (1) or +0 (2), then epi (aux laid out as C): the rows and columns
// in whole tiles and panels (M&^3 by N&^3) through the packed kernels,
// with epi in their stores; the last N%4 columns and M%4 rows through
// the unpacked kernels (gemmNNBlock), epi after them.
func gemmNNPacked(c []float64, ldc int, bias []float64, mode int, a []float64, ai, ak int, b []float64, ldb int, M, N, K int, epi Epilogue, aux []float64) {
	M4, N4 := M&^3, N&^3
	bufs := packs.get()
	for j0 := 0; j0 < N4; j0 += ncPack {
		nc := min(ncPack, N4-j0)
		// Panels: 12 columns each, then 8 for the last 8 or 16.
		n12, n8 := nc/12, 0
		switch nc % 12 {
		case 4:
			n12, n8 = n12-1, 2
		case 8:
			n8 = 1
		}
		var bj []float64
		if mode == 1 {
			bj = bias[j0:]
		}
		for k0 := 0; k0 < K; k0 += kcPack {
			kc := min(kcPack, K-k0)
			packBAVX2(bufs.b[:], b[k0*ldb+j0:], ldb, kc, n12, n8)
			m := mode
			if k0 > 0 {
				m = 0
			}
			if k0+kc == K {
				m |= int(epi)
			}
			for i0 := 0; i0 < M4; i0 += mcPack {
				mc := min(mcPack, M4-i0)
				packA(bufs.a[:], a[i0*ai+k0*ak:], ai, ak, kc, mc/4)
				ci := c[i0*ldc+j0:]
				var ri []float64
				if m&int(EpiResidual|EpiMask) != 0 {
					ri = aux[i0*ldc+j0:]
				}
				if n12 > 0 {
					gemmNNPack12AVX2(ci, ldc, bufs.a[:], bufs.b[:], mc/4, 12*n12, kc, bj, m, ri)
				}
				if n8 > 0 {
					if ri != nil {
						ri = ri[12*n12:]
					}
					var b8 []float64
					if bj != nil {
						b8 = bj[12*n12:]
					}
					gemmNNPack8AVX2(ci[12*n12:], ldc, bufs.a[:], bufs.b[kc*12*n12:], mc/4, 8*n8, kc, b8, m, ri)
				}
			}
		}
	}
	packs.put(bufs)
	if N4 < N {
		var bj []float64
		if mode == 1 {
			bj = bias[N4:]
		}
		gemmNNBlock(c[N4:], ldc, bj, mode, a, ai, ak, b[N4:], ldb, M4, N-N4, K, EpiNone, nil, noNext)
		if epi != EpiNone {
			var rj []float64
			if aux != nil {
				rj = aux[N4:]
			}
			epilogue(c[N4:], ldc, M4, N-N4, epi, rj)
		}
	}
	if M4 < M {
		gemmNNBlock(c[M4*ldc:], ldc, bias, mode, a[M4*ai:], ai, ak, b, ldb, M-M4, N, K, EpiNone, nil, noNext)
		if epi != EpiNone {
			var ri []float64
			if aux != nil {
				ri = aux[M4*ldc:]
			}
			epilogue(c[M4*ldc:], ldc, M-M4, N, epi, ri)
		}
	}
}

// packA copies mt tiles of four rows of A (element (i, k) at
// a[i*ai+k*ak]) by kc steps into pa, as packAAVX2 lays them out.
func packA(pa, a []float64, ai, ak, kc, mt int) {
	switch {
	case ak == 1:
		packAAVX2(pa, a, ai, kc, mt)
	case ai == 1:
		packATAVX2(pa, a, ak, kc, mt)
	default:
		for t := 0; t < mt; t++ {
			for k := 0; k < kc; k++ {
				p := pa[t*kc*4+k*4:][:4]
				for r := range p {
					p[r] = a[(4*t+r)*ai+k*ak]
				}
			}
		}
	}
}

// gemmNNPack12AVX2 is mt tiles of four rows of C by nc columns (a
// multiple of 12) from packed A and B, the chains started from
// x0 = c[i*ldc+j] (mode&3 = 0), bias[j] (1) or 0 (2), then the layers of
// epi (mode&EpiReLU, mode&EpiMask, mode&EpiResidual; never the last two
// together) applied as C is stored:
//
//	for i := 0; i < 4*mt; i++ {
//		for j := 0; j < nc; j++ {
//			x := x0(i, j)
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
//go:noescape
func gemmNNPack12AVX2(c []float64, ldc int, pa, pb []float64, mt, nc, kc int, bias []float64, mode int, aux []float64)

// gemmNNPack8AVX2 is gemmNNPack12AVX2's Go loop above with panels of 8
// columns (nc a multiple of 8): pb[(j/8)*kc*8+k*8+j%8].
//
//go:noescape
func gemmNNPack8AVX2(c []float64, ldc int, pa, pb []float64, mt, nc, kc int, bias []float64, mode int, aux []float64)

// packBAVX2 copies kc rows of B (ldb apart) into n12 panels of 12
// columns, then n8 panels of 8:
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
//go:noescape
func packBAVX2(pb, b []float64, ldb, kc, n12, n8 int)

// packAAVX2 copies mt tiles of four rows of A (rows ai apart, steps
// contiguous) into pa:
//
//	for t := 0; t < mt; t++ {
//		for k := 0; k < kc; k++ {
//			for r := 0; r < 4; r++ {
//				pa[t*kc*4+k*4+r] = a[(4*t+r)*ai+k]
//			}
//		}
//	}
//
//go:noescape
func packAAVX2(pa, a []float64, ai, kc, mt int)

// packATAVX2 is packAAVX2 for A's element (i, k) at a[i+k*ak]:
//
//	for k := 0; k < kc; k++ {
//		for t := 0; t < mt; t++ {
//			for r := 0; r < 4; r++ {
//				pa[t*kc*4+k*4+r] = a[4*t+r+k*ak]
//			}
//		}
//	}
//
//go:noescape
func packATAVX2(pa, a []float64, ak, kc, mt int)
