//go:build amd64 && gc && !purego

// softmax_amd64.go owns the softmax family's hooks on amd64 and their stubs (softmax_avx512_amd64.s, softmax_avx2_amd64.s).

package kernels

// expShiftedAsm is expShiftedFrom's hook: it sets dst[i] = Exp(src[i] -
// shift) for i < n and returns n, the largest multiple of the block (8
// on AVX-512, 4 on AVX2) or len(src) such that no element before n
// needs Exp's special cases (none on the Go path).
func expShiftedAsm(dst, src []float64, shift float64) int {
	switch level {
	case levelAVX512:
		return expShiftedAVX512(dst[:len(src)], src, shift)
	case levelAVX2:
		return expShiftedAVX2(dst[:len(src)], src, shift)
	}
	return 0
}

// maxAsm is rowMax's hook: it sets *m = max(*m, src...) and returns
// len(src) when the vector maximum is Go's max (no NaN in src and a
// non-zero result, so that no zero's sign can matter), and returns 0
// otherwise and on the Go path.
func maxAsm(src []float64, m *float64) int {
	var v float64
	var nan bool
	switch level {
	case levelAVX512:
		v, nan = maxAVX512(src)
	case levelAVX2:
		v, nan = maxAVX2(src)
	default:
		return 0
	}
	if nan || v == 0 {
		return 0
	}
	*m = max(*m, v)
	return len(src)
}

// divAsm is divideBy's hook: every element on AVX-512 and AVX2.
func divAsm(x []float64, d float64) int {
	switch level {
	case levelAVX512:
		divAVX512(x, d)
	case levelAVX2:
		divAVX2(x, d)
	default:
		return 0
	}
	return len(x)
}

// softmaxScaledAsm is SoftmaxScaled's hook: the row (1) on AVX-512 and
// AVX2, none (0) on the Go path. On AVX-512 one kernel call does what it
// can and the entry points of the steps it hands back finish the row:
// the exponentials from the block it stopped at, or, when it declined
// the maximum (a NaN or a zero maximum), the softmax of the scaled row.
// AVX2 has no kernel of its own: the row is scaled, then Softmax runs
// on the AVX2 loops.
func softmaxScaledAsm(row []float64, scale float64) int {
	switch level {
	case levelAVX512:
		m, done := softmaxScaledAVX512(row, scale)
		switch {
		case done == len(row):
		case done >= 0:
			expShiftedFrom(row, row, m, done)
			divideBy(row, SumInOrder(row))
		default: // declined: row is scaled
			Softmax(row, row)
		}
	case levelAVX2:
		for s, v := range row {
			row[s] = float64(v * scale)
		}
		Softmax(row, row)
	default:
		return 0
	}
	return 1
}

// softmaxScaledRowsAsm is SoftmaxScaledRows's hook: all n rows on
// AVX-512 and AVX2, none on the Go path. Each whole block of four rows
// that fits the AVX-512 kernel runs side by side; the rows it hands back (left as
// they were) and every other row go through SoftmaxScaled's hook, which
// does the whole row on these paths.
func softmaxScaledRowsAsm(rows []float64, ld, n, n0 int, scale float64) int {
	if level == levelGo {
		return 0
	}
	done := 0 // bit r: row r finished
	if level == levelAVX512 && ld >= n0+n-1 {
		var scratch [128]float64
		for r0 := 0; r0+4 <= n && n0+r0+3 <= 32; r0 += 4 {
			if b := n0 + r0; b >= 1 {
				_ = rows[(r0+3)*ld+b+2]
				done |= softmaxScaled4AVX512(rows[r0*ld:], ld, b, scale, &scratch) << r0
			}
		}
	}
	for r := 0; r < n; r++ {
		if done&(1<<r) == 0 {
			softmaxScaledAsm(rows[r*ld:r*ld+n0+r], scale) // all of the row on these paths
		}
	}
	return n
}

// The softmax kernels, each the Go loop it computes (the .s files give
// the details of what each hands back).

// expShiftedAVX512 returns n as expShiftedAsm does, having computed
//
//	for i := range src[:n] {
//		dst[i] = Exp(src[i] - shift)
//	}
//
//go:noescape
func expShiftedAVX512(dst, src []float64, shift float64) int

// maxAVX512 computes, with nan reporting whether src holds a NaN (and
// m then meaning nothing),
//
//	m = math.Inf(-1)
//	for _, v := range src {
//		m = max(m, v)
//	}
//
// up to the sign of a zero result, which VMAXPD may get wrong.
//
//go:noescape
func maxAVX512(src []float64) (m float64, nan bool)

// divAVX512 computes
//
//	for i := range x {
//		x[i] /= d
//	}
//
//go:noescape
func divAVX512(x []float64, d float64)

// softmaxScaledAVX512 computes, done being len(row) when it finished,
//
//	for s, v := range row {
//		row[s] = float64(v * scale)
//	}
//	m = max(row...)
//	for s := range row {
//		row[s] = Exp(row[s] - m)
//	}
//	sum := SumInOrder(row)
//	for s := range row {
//		row[s] /= sum
//	}
//
// It stops with done = -1 after the scaling when the maximum is a NaN
// or zero (m then meaning nothing), and with 0 <= done < len(row) and m
// the maximum at the first block holding an exponential Exp treats
// apart, the exponentials before it written.
//
//go:noescape
func softmaxScaledAVX512(row []float64, scale float64) (m float64, done int)

// softmaxScaled4AVX512 computes, for each of the four rows r < 4 it
// finishes (bit r of done; a row it does not finish is left as it was),
//
//	row := rows[r*ld : r*ld+n0+r]
//	for s, v := range row {
//		row[s] = float64(v * scale)
//	}
//	Softmax(row, row)
//
// with n0 >= 1, n0+3 <= 32 and scratch its working space.
//
//go:noescape
func softmaxScaled4AVX512(rows []float64, ld, n0 int, scale float64, scratch *[128]float64) (done int)

// expShiftedAVX2 is expShiftedAVX512's Go loop above with blocks of 4.
//
//go:noescape
func expShiftedAVX2(dst, src []float64, shift float64) int

// maxAVX2 is maxAVX512's Go loop above, four lanes at a time.
//
//go:noescape
func maxAVX2(src []float64) (m float64, nan bool)

// divAVX2 computes
//
//	for i := range x {
//		x[i] /= d
//	}
//
//go:noescape
func divAVX2(x []float64, d float64)
