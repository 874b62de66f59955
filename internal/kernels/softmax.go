// softmax.go owns the softmax family (ExpShifted, SumInOrder, Softmax, SoftmaxScaled, SoftmaxScaledRows) and its Go twins.

package kernels

import "math"

// ExpShifted writes exp(x - max(src)) into dst (which may be src) for
// every element x of src, one Exp each, and returns the maximum (Go's
// max: NaN if any element is NaN) and the sum of the exponentials in
// index order (SumInOrder): the one softmax core shared by attention,
// the loss and the sampler. -Inf entries get 0.
func ExpShifted(dst, src []float64) (maxv, sum float64) {
	dst = dst[:len(src)]
	maxv = rowMax(src)
	expShiftedFrom(dst, src, maxv, 0)
	return maxv, SumInOrder(dst)
}

// SumInOrder is x[0] + x[1] + ... as one chain in index order from +0:
// softmax's normaliser.
func SumInOrder(x []float64) float64 {
	sum := 0.0
	for _, e := range x {
		sum += e
	}
	return sum
}

// Softmax writes exp(row - max) / sum into probs (which may be row):
// ExpShifted, then each exponential divided by the sum.
func Softmax(probs, row []float64) {
	_, sum := ExpShifted(probs, row)
	divideBy(probs[:len(row)], sum)
}

// SoftmaxScaled sets row to softmax(row·scale) with the bits of
//
//	for s, v := range row {
//		row[s] = float64(v * scale)
//	}
//	Softmax(row, row)
//
// On AVX-512 one kernel call does all of it for the attention's short
// rows, where the separate loops cost more in calls than in arithmetic.
func SoftmaxScaled(row []float64, scale float64) {
	if softmaxScaledAsm(row, scale) == 0 {
		softmaxScaledGo(row, scale)
	}
}

// SoftmaxScaledRows runs SoftmaxScaled on the n rows
// rows[r*ld : r*ld+n0+r] (r < n), each one longer than the last: a block
// of causal attention rows. On AVX-512 a block of four rows (n0+3 <= 32)
// runs side by side, each row's chains waiting on latency alone; the
// bits are those of one row at a time.
func SoftmaxScaledRows(rows []float64, ld, n, n0 int, scale float64) {
	for r := softmaxScaledRowsAsm(rows, ld, n, n0, scale); r < n; r++ {
		softmaxScaledGo(rows[r*ld:r*ld+n0+r], scale)
	}
}

// rowMax is max(src...) by Go's max, -Inf for an empty src: the maximum
// of ExpShifted.
func rowMax(src []float64) float64 {
	m := math.Inf(-1)
	n := maxAsm(src, &m)
	return maxGo(m, src[n:])
}

// expShiftedFrom sets dst[i] = Exp(src[i] - maxv) for i >= from. The
// hook stops before a block holding an element Exp treats apart; the Go
// twin does that block, and the hook goes on after it.
func expShiftedFrom(dst, src []float64, maxv float64, from int) {
	for i := from; i < len(src); {
		i += expShiftedAsm(dst[i:], src[i:], maxv)
		end := min(i+8, len(src))
		expShiftedGo(dst[i:end], src[i:end], maxv)
		i = end
	}
}

// divideBy sets x[i] /= d for every i: softmax's division.
func divideBy(x []float64, d float64) {
	n := divAsm(x, d)
	divGo(x[n:], d)
}

// maxGo is rowMax's Go twin, continuing from m.
func maxGo(m float64, src []float64) float64 {
	for _, v := range src {
		m = max(m, v)
	}
	return m
}

// expShiftedGo is expShiftedFrom's Go twin.
func expShiftedGo(dst, src []float64, shift float64) {
	for i, v := range src {
		dst[i] = Exp(v - shift)
	}
}

// divGo is divideBy's Go twin.
func divGo(x []float64, d float64) {
	for i := range x {
		x[i] /= d
	}
}

// softmaxGo is Softmax's Go twin.
func softmaxGo(probs, row []float64) {
	probs = probs[:len(row)]
	maxv := maxGo(math.Inf(-1), row)
	expShiftedGo(probs, row, maxv)
	divGo(probs, SumInOrder(probs))
}

// softmaxScaledGo is SoftmaxScaled's Go twin.
func softmaxScaledGo(row []float64, scale float64) {
	for s, v := range row {
		row[s] = float64(v * scale)
	}
	softmaxGo(row, row)
}
