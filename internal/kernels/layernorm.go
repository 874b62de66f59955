// layernorm.go owns LayerNorm's kernels (statistics, normalisation, backward row sums, input and parameter gradients) and their Go twins.

package kernels

import "math"

// The LayerNorm loops are chains of dependent additions (a mean, a
// variance, two sums per row in backward, two per column), each as long
// as a row or a column and bound by the adder's latency. The Go twins
// run four rows (or columns) at a time as independent chains the CPU
// overlaps, and the assembly 8 or 4 rows (32, 16, 8 or 4 columns), one
// chain to a lane; every chain keeps its own order, so the bits are
// those of one row (column) at a time.

// LayerNormStats computes, for each of the N rows of inp (C wide), its
// mean and its reciprocal standard deviation, each sum a chain in column
// order from +0:
//
//	s := 0.0
//	for _, x := range row {
//		s += x
//	}
//	mean = s / C
//	v := 0.0
//	for _, x := range row {
//		d := x - mean
//		v = math.FMA(d, d, v)
//	}
//	rstd = 1 / math.Sqrt(v/C+eps)
func LayerNormStats(mean, rstd, inp []float64, N, C int, eps float64) {
	if N <= 0 {
		return
	}
	mean, rstd, inp = mean[:N], rstd[:N], inp[:N*C]
	n := lnStatsAsm(mean, rstd, inp, N, C, eps)
	lnStatsGo(mean[n:], rstd[n:], inp[n*C:], N-n, C, eps)
}

// LayerNormApply normalises the N rows of inp (C wide) with their
// statistics: out = fma((x - mean)·rstd, weight, bias), the product
// (x - mean)·rstd rounded on its own.
func LayerNormApply(out, inp, weight, bias, mean, rstd []float64, N, C int) {
	if N <= 0 {
		return
	}
	out, inp, mean, rstd = out[:N*C], inp[:N*C], mean[:N], rstd[:N]
	weight, bias = weight[:C], bias[:C]
	n := lnApplyAsm(out, inp, weight, bias, mean, rstd, N, C)
	lnApplyGo(out[n*C:], inp[n*C:], weight, bias, mean[n:], rstd[n:], N-n, C)
}

// LayerNormRowSums computes, for each of the N rows, the two sums the
// input gradient needs, each a chain in column order from +0:
//
//	xhat := float64((x[i] - mean) * rstd)
//	dxhat := float64(weight[i] * dout[i])
//	s1 += dxhat
//	s2 = math.FMA(dxhat, xhat, s2)
func LayerNormRowSums(s1, s2, inp, dout, weight, mean, rstd []float64, N, C int) {
	if N <= 0 {
		return
	}
	s1, s2, inp, dout, weight, mean, rstd = s1[:N], s2[:N], inp[:N*C], dout[:N*C], weight[:C], mean[:N], rstd[:N]
	n := lnRowSumsAsm(s1, s2, inp, dout, weight, mean, rstd, N, C)
	lnRowSumsGo(s1[n:], s2[n:], inp[n*C:], dout[n*C:], weight, mean[n:], rstd[n:], N-n, C)
}

// LayerNormInputGrad computes the input gradient of the N rows from
// their row sums (LayerNormRowSums), m1 = s1/C and m2 = s2/C:
//
//	dinp[i] = src[i] + float64(rstd * (dxhat - m1 - float64(xhat*m2)))
//
// with xhat and dxhat as in LayerNormRowSums. src is dinp itself to add
// to it, or the rows the gradient starts from.
func LayerNormInputGrad(dinp, src, inp, dout, weight, mean, rstd, s1, s2 []float64, N, C int) {
	if N <= 0 {
		return
	}
	dinp, src, inp, dout, weight = dinp[:N*C], src[:N*C], inp[:N*C], dout[:N*C], weight[:C]
	mean, rstd, s1, s2 = mean[:N], rstd[:N], s1[:N], s2[:N]
	n := lnInputGradAsm(dinp, src, inp, dout, weight, mean, rstd, s1, s2, N, C)
	lnInputGradGo(dinp[n*C:], src[n*C:], inp[n*C:], dout[n*C:], weight, mean[n:], rstd[n:], s1[n:], s2[n:], N-n, C)
}

// LayerNormParamGrads adds the weight and bias gradients of W columns
// over N rows (dout and inp ld apart), each column's chain in row order:
//
//	for n := 0; n < N; n++ {
//		d := dout[n*ld+i]
//		dweight[i] = math.FMA(d, float64((inp[n*ld+i]-mean[n])*rstd[n]), dweight[i])
//		dbias[i] += d
//	}
func LayerNormParamGrads(dweight, dbias, dout, inp, mean, rstd []float64, N, W, ld int) {
	if N <= 0 || W <= 0 {
		return
	}
	dweight, dbias, mean, rstd = dweight[:W], dbias[:W], mean[:N], rstd[:N]
	n := lnParamGradsAsm(dweight, dbias, dout, inp, mean, rstd, N, W, ld)
	lnParamGradsGo(dweight, dbias, dout, inp, mean, rstd, N, n, W, ld)
}

// lnStatsGo is LayerNormStats's Go twin.
func lnStatsGo(mean, rstd, inp []float64, N, C int, eps float64) {
	fc := float64(C)
	n := 0
	for ; n+4 <= N; n += 4 {
		x0, x1, x2, x3 := inp[n*C:n*C+C], inp[(n+1)*C:(n+1)*C+C], inp[(n+2)*C:(n+2)*C+C], inp[(n+3)*C:(n+3)*C+C]
		var s0, s1, s2, s3 float64
		for i := range x0 {
			s0 += x0[i]
			s1 += x1[i]
			s2 += x2[i]
			s3 += x3[i]
		}
		m0, m1, m2, m3 := s0/fc, s1/fc, s2/fc, s3/fc
		var v0, v1, v2, v3 float64
		for i := range x0 {
			d0, d1, d2, d3 := x0[i]-m0, x1[i]-m1, x2[i]-m2, x3[i]-m3
			v0 = math.FMA(d0, d0, v0)
			v1 = math.FMA(d1, d1, v1)
			v2 = math.FMA(d2, d2, v2)
			v3 = math.FMA(d3, d3, v3)
		}
		mean[n], mean[n+1], mean[n+2], mean[n+3] = m0, m1, m2, m3
		rstd[n] = 1 / math.Sqrt(v0/fc+eps)
		rstd[n+1] = 1 / math.Sqrt(v1/fc+eps)
		rstd[n+2] = 1 / math.Sqrt(v2/fc+eps)
		rstd[n+3] = 1 / math.Sqrt(v3/fc+eps)
	}
	for ; n < N; n++ {
		x := inp[n*C : n*C+C]
		s := 0.0
		for _, v := range x {
			s += v
		}
		mu := s / fc
		v := 0.0
		for _, xi := range x {
			d := xi - mu
			v = math.FMA(d, d, v)
		}
		mean[n], rstd[n] = mu, 1/math.Sqrt(v/fc+eps)
	}
}

// lnApplyGo is LayerNormApply's Go twin.
func lnApplyGo(out, inp, weight, bias, mean, rstd []float64, N, C int) {
	for n := 0; n < N; n++ {
		x, o := inp[n*C:n*C+C], out[n*C:n*C+C]
		mu, r := mean[n], rstd[n]
		for i, xi := range x {
			o[i] = math.FMA(float64((xi-mu)*r), weight[i], bias[i])
		}
	}
}

// lnRowSumsGo is LayerNormRowSums's Go twin.
func lnRowSumsGo(s1, s2, inp, dout, weight, mean, rstd []float64, N, C int) {
	n := 0
	for ; n+4 <= N; n += 4 {
		x0, x1, x2, x3 := inp[n*C:n*C+C], inp[(n+1)*C:(n+1)*C+C], inp[(n+2)*C:(n+2)*C+C], inp[(n+3)*C:(n+3)*C+C]
		d0, d1, d2, d3 := dout[n*C:n*C+C], dout[(n+1)*C:(n+1)*C+C], dout[(n+2)*C:(n+2)*C+C], dout[(n+3)*C:(n+3)*C+C]
		mu0, mu1, mu2, mu3 := mean[n], mean[n+1], mean[n+2], mean[n+3]
		r0, r1, r2, r3 := rstd[n], rstd[n+1], rstd[n+2], rstd[n+3]
		var a0, a1, a2, a3, b0, b1, b2, b3 float64 // sums of dxhat, of dxhat·xhat
		for i, w := range weight {
			xh0, xh1, xh2, xh3 := float64((x0[i]-mu0)*r0), float64((x1[i]-mu1)*r1), float64((x2[i]-mu2)*r2), float64((x3[i]-mu3)*r3)
			g0, g1, g2, g3 := float64(w*d0[i]), float64(w*d1[i]), float64(w*d2[i]), float64(w*d3[i])
			a0 += g0
			a1 += g1
			a2 += g2
			a3 += g3
			b0 = math.FMA(g0, xh0, b0)
			b1 = math.FMA(g1, xh1, b1)
			b2 = math.FMA(g2, xh2, b2)
			b3 = math.FMA(g3, xh3, b3)
		}
		s1[n], s1[n+1], s1[n+2], s1[n+3] = a0, a1, a2, a3
		s2[n], s2[n+1], s2[n+2], s2[n+3] = b0, b1, b2, b3
	}
	for ; n < N; n++ {
		x := inp[n*C : n*C+C]
		d := dout[n*C : n*C+C]
		mu, r := mean[n], rstd[n]
		a, b := 0.0, 0.0
		for i, xi := range x {
			xhat := float64((xi - mu) * r)
			dxhat := float64(weight[i] * d[i])
			a += dxhat
			b = math.FMA(dxhat, xhat, b)
		}
		s1[n], s2[n] = a, b
	}
}

// lnInputGradGo is LayerNormInputGrad's Go twin.
func lnInputGradGo(dinp, src, inp, dout, weight, mean, rstd, s1, s2 []float64, N, C int) {
	fc := float64(C)
	for n := 0; n < N; n++ {
		x, d, di, sr := inp[n*C:n*C+C], dout[n*C:n*C+C], dinp[n*C:n*C+C], src[n*C:n*C+C]
		mu, r := mean[n], rstd[n]
		m1, m2 := s1[n]/fc, s2[n]/fc
		for i, xi := range x {
			xhat := float64((xi - mu) * r)
			dxhat := float64(weight[i] * d[i])
			di[i] = sr[i] + float64(r*(dxhat-m1-float64(xhat*m2)))
		}
	}
}

// lnParamGradsGo is LayerNormParamGrads's Go twin for the columns
// [i0, W).
func lnParamGradsGo(dweight, dbias, dout, inp, mean, rstd []float64, N, i0, W, ld int) {
	i := i0
	for ; i+4 <= W; i += 4 {
		dw := (*[4]float64)(dweight[i : i+4])
		db := (*[4]float64)(dbias[i : i+4])
		w0, w1, w2, w3 := dw[0], dw[1], dw[2], dw[3]
		b0, b1, b2, b3 := db[0], db[1], db[2], db[3]
		for n := 0; n < N; n++ {
			d := (*[4]float64)(dout[n*ld+i : n*ld+i+4])
			x := (*[4]float64)(inp[n*ld+i : n*ld+i+4])
			mu, r := mean[n], rstd[n]
			w0 = math.FMA(d[0], float64((x[0]-mu)*r), w0)
			w1 = math.FMA(d[1], float64((x[1]-mu)*r), w1)
			w2 = math.FMA(d[2], float64((x[2]-mu)*r), w2)
			w3 = math.FMA(d[3], float64((x[3]-mu)*r), w3)
			b0 += d[0]
			b1 += d[1]
			b2 += d[2]
			b3 += d[3]
		}
		dw[0], dw[1], dw[2], dw[3] = w0, w1, w2, w3
		db[0], db[1], db[2], db[3] = b0, b1, b2, b3
	}
	for ; i < W; i++ {
		dw, db := dweight[i], dbias[i]
		for n := 0; n < N; n++ {
			d := dout[n*ld+i]
			xhat := float64((inp[n*ld+i] - mean[n]) * rstd[n])
			dw = math.FMA(d, xhat, dw)
			db += d
		}
		dweight[i], dbias[i] = dw, db
	}
}
