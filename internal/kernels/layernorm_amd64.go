//go:build amd64 && gc && !purego

// layernorm_amd64.go owns LayerNorm's hooks on amd64 and their stubs.

package kernels

// lnStatsAsm is LayerNormStats's hook: blocks of 8 rows on AVX-512 while
// 8 are left, then (on AVX-512 and AVX2) blocks of 4 while 4 are left;
// it returns the rows done (none on the Go path or for C < 1).
func lnStatsAsm(mean, rstd, inp []float64, N, C int, eps float64) int {
	if level == levelGo || C <= 0 {
		return 0
	}
	n := 0
	if level == levelAVX512 {
		for ; n+8 <= N; n += 8 {
			lnStatsAVX512(mean[n:n+8], rstd[n:n+8], inp[n*C:(n+8)*C], C, eps)
		}
	}
	for ; n+4 <= N; n += 4 {
		lnStatsAVX2(mean[n:n+4], rstd[n:n+4], inp[n*C:(n+4)*C], C, eps)
	}
	return n
}

// lnApplyAsm is LayerNormApply's hook: every row on AVX-512 and AVX2.
func lnApplyAsm(out, inp, weight, bias, mean, rstd []float64, N, C int) int {
	if level == levelGo {
		return 0
	}
	for n := 0; n < N; n++ {
		o, x := out[n*C:n*C+C], inp[n*C:n*C+C]
		if level == levelAVX512 {
			lnNormalizeAVX512(o, x, weight, bias, mean[n], rstd[n])
		} else {
			lnNormalizeAVX2(o, x, weight, bias, mean[n], rstd[n])
		}
	}
	return N
}

// lnRowSumsAsm is LayerNormRowSums's hook, in blocks of rows as
// lnStatsAsm.
func lnRowSumsAsm(s1, s2, inp, dout, weight, mean, rstd []float64, N, C int) int {
	if level == levelGo || C <= 0 {
		return 0
	}
	n := 0
	if level == levelAVX512 {
		for ; n+8 <= N; n += 8 {
			lnRowSumsAVX512(s1[n:n+8], s2[n:n+8], inp[n*C:(n+8)*C], dout[n*C:(n+8)*C], weight, mean[n:n+8], rstd[n:n+8], C)
		}
	}
	for ; n+4 <= N; n += 4 {
		lnRowSumsAVX2(s1[n:n+4], s2[n:n+4], inp[n*C:(n+4)*C], dout[n*C:(n+4)*C], weight, mean[n:n+4], rstd[n:n+4], C)
	}
	return n
}

// lnInputGradAsm is LayerNormInputGrad's hook: every row on AVX-512 and
// AVX2.
func lnInputGradAsm(dinp, src, inp, dout, weight, mean, rstd, s1, s2 []float64, N, C int) int {
	if level == levelGo {
		return 0
	}
	fc := float64(C)
	for n := 0; n < N; n++ {
		di, x, d, sr := dinp[n*C:n*C+C], inp[n*C:n*C+C], dout[n*C:n*C+C], src[n*C:n*C+C]
		if level == levelAVX512 {
			lnBackwardRowAVX512(di, x, d, weight, mean[n], rstd[n], s1[n]/fc, s2[n]/fc, sr)
		} else {
			lnBackwardRowAVX2(di, x, d, weight, mean[n], rstd[n], s1[n]/fc, s2[n]/fc, sr)
		}
	}
	return N
}

// lnParamGradsAsm is LayerNormParamGrads's hook: blocks of 32 and then
// 8 columns on AVX-512, 16 and then 4 on AVX2; it returns the columns
// done (none on the Go path).
func lnParamGradsAsm(dweight, dbias, dout, inp, mean, rstd []float64, N, W, ld int) int {
	if level == levelGo {
		return 0
	}
	last := (N - 1) * ld // the last row's offset in dout and inp
	i := 0
	if level == levelAVX512 {
		for ; i+32 <= W; i += 32 {
			_, _ = dout[last+i+31], inp[last+i+31]
			lnColumns32AVX512(dweight[i:i+32], dbias[i:i+32], dout[i:], inp[i:], mean, rstd, N, ld)
		}
		for ; i+8 <= W; i += 8 {
			_, _ = dout[last+i+7], inp[last+i+7]
			lnColumns8AVX512(dweight[i:i+8], dbias[i:i+8], dout[i:], inp[i:], mean, rstd, N, ld)
		}
		return i
	}
	for ; i+16 <= W; i += 16 {
		_, _ = dout[last+i+15], inp[last+i+15]
		lnColumns16AVX2(dweight[i:i+16], dbias[i:i+16], dout[i:], inp[i:], mean, rstd, N, ld)
	}
	for ; i+4 <= W; i += 4 {
		_, _ = dout[last+i+3], inp[last+i+3]
		lnColumns4AVX2(dweight[i:i+4], dbias[i:i+4], dout[i:], inp[i:], mean, rstd, N, ld)
	}
	return i
}

// The LayerNorm kernels, each the Go loop it computes.

// lnStatsAVX512 computes, for the 8 rows k of x (lnStatsAVX2 for 4 rows),
// each sum a chain in column order,
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
//
//go:noescape
func lnStatsAVX512(mean, rstd, x []float64, C int, eps float64)

// lnStatsAVX2 is lnStatsAVX512's Go loop above for 4 rows.
//
//go:noescape
func lnStatsAVX2(mean, rstd, x []float64, C int, eps float64)

// lnRowSumsAVX512 computes, for the 8 rows k of x and d (lnRowSumsAVX2
// for 4 rows), each sum a chain in column order,
//
//	a[k], b[k] = 0, 0
//	for i := range w {
//		xhat := float64((x[k*C+i] - mean[k]) * rstd[k])
//		dxhat := float64(w[i] * d[k*C+i])
//		a[k] += dxhat
//		b[k] = math.FMA(dxhat, xhat, b[k])
//	}
//
//go:noescape
func lnRowSumsAVX512(a, b, x, d, w, mean, rstd []float64, C int)

// lnRowSumsAVX2 is lnRowSumsAVX512's Go loop above for 4 rows.
//
//go:noescape
func lnRowSumsAVX2(a, b, x, d, w, mean, rstd []float64, C int)

// lnNormalizeAVX512 computes
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
//
//go:noescape
func lnNormalizeAVX512(o, x, w, b []float64, mu, r float64)

// lnBackwardRowAVX512 computes
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
//
// src is di itself to add to it, or the row the gradient starts from.
//
//go:noescape
func lnBackwardRowAVX512(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)

// lnColumns32AVX512 computes, for the 32 columns i < 32 (8 for
// lnColumns8AVX512), each a chain over the rows in order,
//
//	for n := 0; n < N; n++ {
//		d := dout[n*C+i]
//		dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//		db[i] += d
//	}
//
//go:noescape
func lnColumns32AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnColumns8AVX512 is lnColumns32AVX512's Go loop above for 8 columns.
//
//go:noescape
func lnColumns8AVX512(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnNormalizeAVX2 computes
//
//	for i, xi := range x {
//		o[i] = math.FMA(float64((xi-mu)*r), w[i], b[i])
//	}
//
//go:noescape
func lnNormalizeAVX2(o, x, w, b []float64, mu, r float64)

// lnBackwardRowAVX2 computes
//
//	for i, xi := range x {
//		xhat := float64((xi - mu) * r)
//		dxhat := float64(w[i] * d[i])
//		di[i] = src[i] + float64(r * (dxhat - m1 - float64(xhat*m2)))
//	}
//
// src is di itself to add to it, or the row the gradient starts from.
//
//go:noescape
func lnBackwardRowAVX2(di, x, d, w []float64, mu, r, m1, m2 float64, src []float64)

// lnColumns16AVX2 computes, for the 16 columns i < 16 (4 for
// lnColumns4AVX2), each a chain over the rows in order,
//
//	for n := 0; n < N; n++ {
//		d := dout[n*C+i]
//		dw[i] = math.FMA(d, float64((inp[n*C+i]-mean[n])*rstd[n]), dw[i])
//		db[i] += d
//	}
//
//go:noescape
func lnColumns16AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)

// lnColumns4AVX2 is lnColumns16AVX2's Go loop above for 4 columns.
//
//go:noescape
func lnColumns4AVX2(dw, db, dout, inp, mean, rstd []float64, N, C int)
