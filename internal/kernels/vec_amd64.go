//go:build amd64 && gc && !purego

// vec_amd64.go owns the elementwise, sum-of-squares and transpose hooks on amd64 and their stubs.

package kernels

// reluAsm is ReLU's hook: every element on AVX-512 and AVX2.
func reluAsm(out, in []float64) int {
	switch level {
	case levelAVX512:
		reluAVX512(out, in)
	case levelAVX2:
		reluAVX2(out, in)
	default:
		return 0
	}
	return len(in)
}

// reluMaskAsm is ReLUMask's hook: every element on AVX-512 and AVX2.
func reluMaskAsm(d, inp []float64) int {
	switch level {
	case levelAVX512:
		reluMaskAVX512(d, inp)
	case levelAVX2:
		reluMaskAVX2(d, inp)
	default:
		return 0
	}
	return len(d)
}

// addAsm is Add's hook: every element on AVX-512 and AVX2.
func addAsm(out, a, b []float64) int {
	switch level {
	case levelAVX512:
		addAVX512(out, a, b)
	case levelAVX2:
		addAVX2(out, a, b)
	default:
		return 0
	}
	return len(out)
}

// softmaxBackwardAsm is SoftmaxBackward's hook: every element on
// AVX-512 and AVX2.
func softmaxBackwardAsm(dp, p []float64, sum, scale float64) int {
	switch level {
	case levelAVX512:
		softmaxBackwardAVX512(dp, p, sum, scale)
	case levelAVX2:
		softmaxBackwardAVX2(dp, p, sum, scale)
	default:
		return 0
	}
	return len(dp)
}

// adamAsm is Adam's hook: every element on AVX-512 and AVX2.
func adamAsm(params, grads, m, v []float64, k *AdamCoefficients) int {
	if level == levelGo {
		return 0
	}
	kk := [9]float64{k.Beta1, 1 - k.Beta1, k.Beta2, 1 - k.Beta2, k.C1, k.C2, k.LR, k.Eps, k.Shrink}
	if level == levelAVX512 {
		adamAVX512(params, grads, m, v, &kk)
	} else {
		adamAVX2(params, grads, m, v, &kk)
	}
	return len(params)
}

// sumSquares8Asm is SumSquares8's hook: it continues the eight chains s
// over the whole groups of eight of x on AVX-512 and AVX2 and returns
// how many elements it consumed (a multiple of eight; none on the Go
// path).
func sumSquares8Asm(x []float64, s *[8]float64) int {
	if level == levelGo || len(x) < 8 {
		return 0
	}
	if level == levelAVX512 {
		sumSquaresLanesAVX512(x, s)
	} else {
		sumSquaresLanesAVX2(x, s)
	}
	return len(x) &^ 7
}

// transposeAsm is Transpose's hook: it writes the whole destination
// rows [o0, o0+n), n the largest multiple of eight (AVX-512) or four
// (AVX2) that fits, the 8×8 or 8×4 blocks in registers and the last R%8
// source rows one element at a time, and returns n; none on the Go
// path.
func transposeAsm(dst, src []float64, R, W, o0, o1 int) int {
	if level == levelGo || R < 8 {
		return 0
	}
	w := 8
	if level == levelAVX2 {
		w = 4
	}
	n := (o1 - o0) &^ (w - 1)
	if n == 0 {
		return 0
	}
	i := 0
	for ; i+8 <= R; i += 8 {
		_ = src[(i+7)*W+o0+n-1]
		_ = dst[(o0+n-1)*R+i+7]
		if level == levelAVX512 {
			transpose8AVX512(dst[o0*R+i:], R, src[i*W+o0:], W, n/8)
		} else {
			transpose8x4AVX2(dst[o0*R+i:], R, src[i*W+o0:], W, n/4)
		}
	}
	transposeRowsGo(dst, src, R, W, i, o0, o0+n)
	return n
}

// The AVX-512 loops (vec_avx512_amd64.s), each the Go loop it computes.

// reluAVX512 computes
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
//go:noescape
func reluAVX512(out, in []float64)

// addAVX512 computes
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
//
//go:noescape
func addAVX512(out, a, b []float64)

// softmaxBackwardAVX512 computes
//
//	for s, ps := range p {
//		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
//	}
//
//go:noescape
func softmaxBackwardAVX512(dp, p []float64, sum, scale float64)

// reluMaskAVX512 computes
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0
//		}
//	}
//
//go:noescape
func reluMaskAVX512(d, inp []float64)

// adamAVX512 computes, with k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink},
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
//go:noescape
func adamAVX512(params, grads, m, v []float64, k *[9]float64)

// sumSquaresLanesAVX512 continues the eight chains s over the whole
// groups of eight of xs, one lane each:
//
//	for i := 0; i+8 <= len(xs); i += 8 {
//		for l := 0; l < 8; l++ {
//			s[l] = math.FMA(xs[i+l], xs[i+l], s[l])
//		}
//	}
//
//go:noescape
func sumSquaresLanesAVX512(xs []float64, s *[8]float64)

// transpose8AVX512 transposes n blocks of 8×8 (block b the columns
// 8b..8b+7 of src's 8 rows, written as the rows 8b..8b+7 of dst):
//
//	for b := 0; b < n; b++ {
//		for r := 0; r < 8; r++ {
//			for c := 0; c < 8; c++ {
//				dst[(8*b+c)*ldd+r] = src[r*lds+8*b+c]
//			}
//		}
//	}
//
//go:noescape
func transpose8AVX512(dst []float64, ldd int, src []float64, lds int, n int)

// The AVX2+FMA twins (vec_avx2_amd64.s), four lanes at a time, for CPUs
// without AVX-512: each computes the same bits as its AVX-512 twin and
// its Go twin.

// reluAVX2 computes
//
//	for i, v := range in {
//		out[i] = max(v, 0)
//	}
//
//go:noescape
func reluAVX2(out, in []float64)

// addAVX2 computes
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
//
//go:noescape
func addAVX2(out, a, b []float64)

// reluMaskAVX2 computes
//
//	for i := range d {
//		if !(inp[i] > 0) {
//			d[i] = 0
//		}
//	}
//
//go:noescape
func reluMaskAVX2(d, inp []float64)

// adamAVX2 computes, with k = {b1, 1-b1, b2, 1-b2, c1, c2, lr, eps, shrink},
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
//go:noescape
func adamAVX2(params, grads, m, v []float64, k *[9]float64)

// transpose8x4AVX2 transposes n blocks of 8 rows by 4 columns (block b
// the columns 4b..4b+3 of src's 8 rows, written as the rows 4b..4b+3 of
// dst, 8 values each):
//
//	for b := 0; b < n; b++ {
//		for r := 0; r < 8; r++ {
//			for c := 0; c < 4; c++ {
//				dst[(4*b+c)*ldd+r] = src[r*lds+4*b+c]
//			}
//		}
//	}
//
//go:noescape
func transpose8x4AVX2(dst []float64, ldd int, src []float64, lds int, n int)

// softmaxBackwardAVX2 is softmaxBackwardAVX512's Go loop, four lanes at
// a time:
//
//	for s, ps := range p {
//		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
//	}
//
//go:noescape
func softmaxBackwardAVX2(dp, p []float64, sum, scale float64)

// sumSquaresLanesAVX2 continues the eight chains s over the whole groups
// of eight of xs, lanes 0-3 in one register and 4-7 in another:
//
//	for i := 0; i+8 <= len(xs); i += 8 {
//		for l := 0; l < 8; l++ {
//			s[l] = math.FMA(xs[i+l], xs[i+l], s[l])
//		}
//	}
//
//go:noescape
func sumSquaresLanesAVX2(xs []float64, s *[8]float64)
