// transpose.go owns the matrix transpose's entry point and its Go twin.

package kernels

// Transpose writes rows [o0, o1) of dst = srcᵀ, src being R rows of W:
//
//	dst[o*R+i] = src[i*W+o]  for o0 <= o < o1, i < R
//
// Data is only moved, so every path gives src's bits. The Go twin goes
// in blocks of 8×8: each of eight source rows gives eight values in one
// read and each of eight destination rows receives eight in a run, so
// every cache line is used whole while it is in L1; the AVX-512 hook
// moves those blocks through registers.
func Transpose(dst, src []float64, R, W, o0, o1 int) {
	if o0 >= o1 {
		return
	}
	transposeGo(dst, src, R, W, o0+transposeAsm(dst, src, R, W, o0, o1), o1)
}

// transposeGo is Transpose's Go twin.
func transposeGo(dst, src []float64, R, W, o0, o1 int) {
	i := 0
	for ; i+8 <= R; i += 8 {
		o := o0
		for ; o+8 <= o1; o += 8 {
			d0 := (*[8]float64)(dst[o*R+i:])
			d1 := (*[8]float64)(dst[(o+1)*R+i:])
			d2 := (*[8]float64)(dst[(o+2)*R+i:])
			d3 := (*[8]float64)(dst[(o+3)*R+i:])
			d4 := (*[8]float64)(dst[(o+4)*R+i:])
			d5 := (*[8]float64)(dst[(o+5)*R+i:])
			d6 := (*[8]float64)(dst[(o+6)*R+i:])
			d7 := (*[8]float64)(dst[(o+7)*R+i:])
			for r := 0; r < 8; r++ {
				s := (*[8]float64)(src[(i+r)*W+o:])
				d0[r], d1[r], d2[r], d3[r] = s[0], s[1], s[2], s[3]
				d4[r], d5[r], d6[r], d7[r] = s[4], s[5], s[6], s[7]
			}
		}
		for ; o < o1; o++ {
			d := dst[o*R+i : o*R+i+8]
			for r := range d {
				d[r] = src[(i+r)*W+o]
			}
		}
	}
	transposeRowsGo(dst, src, R, W, i, o0, o1)
}

// transposeRowsGo moves the source rows [i0, R) of dst's rows [o0, o1)
// one element at a time: the rows left below a multiple of eight.
func transposeRowsGo(dst, src []float64, R, W, i0, o0, o1 int) {
	for i := i0; i < R; i++ {
		for o := o0; o < o1; o++ {
			dst[o*R+i] = src[i*W+o]
		}
	}
}
