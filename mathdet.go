package minigpt

import "math"

// The standard library's math.Exp and math.Log are written in assembly on
// some architectures and in Go on others, and Go code may be compiled with
// or without fused multiply-adds; neither promises the same last bit
// everywhere. These two functions are the classic fdlibm algorithms
// written so that every product is explicitly rounded (a float64
// conversion forbids fusion), so they return the same bits on every
// platform. Both are within one ulp of the exact result.

const (
	ln2Hi = 6.93147180369123816490e-01 // high bits of ln 2
	ln2Lo = 1.90821492927058770002e-10 // ln 2 - ln2Hi
	log2e = 1.44269504088896338700e+00 // 1 / ln 2
)

// expDet returns e**x with platform-independent rounding.
func expDet(x float64) float64 {
	const (
		p1        = 1.66666666666666657415e-01
		p2        = -2.77777777770155933842e-03
		p3        = 6.61375632143793436117e-05
		p4        = -1.65339022054652515390e-06
		p5        = 4.13813679705723846039e-08
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
		nearZero  = 1.0 / (1 << 28)
	)
	switch {
	case x != x || x > overflow:
		return x + math.Inf(1) // NaN stays NaN, too large is +Inf
	case x < underflow:
		return 0
	case -nearZero < x && x < nearZero:
		return 1 + x
	}
	// x = k·ln2 + r, |r| <= ln2/2.
	var k int
	if x < 0 {
		k = int(float64(log2e*x) - 0.5)
	} else {
		k = int(float64(log2e*x) + 0.5)
	}
	fk := float64(k)
	hi := x - float64(fk*ln2Hi)
	lo := float64(fk * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	poly := p1 + float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))
	c := r - float64(t*poly)
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	if k > -1020 && k < 1020 {
		// y is in [0.5, 2), so y·2^k is normal: add k to the exponent
		// bits, exactly what Ldexp does, without its call.
		return math.Float64frombits(math.Float64bits(y) + uint64(int64(k))<<52)
	}
	return math.Ldexp(y, k)
}

// logDet returns the natural logarithm of x with platform-independent
// rounding.
func logDet(x float64) float64 {
	const (
		l1 = 6.666666666666735130e-01
		l2 = 3.999999999940941908e-01
		l3 = 2.857142874366239149e-01
		l4 = 2.222219843214978396e-01
		l5 = 1.818357216161805012e-01
		l6 = 1.531383769920937332e-01
		l7 = 1.479819860511658591e-01
	)
	switch {
	case x != x || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	R := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+R)) + float64(k*ln2Lo))) - f)
}

// normalSource draws standard normal numbers by Marsaglia's polar method
// from a PCG stream, using only exactly rounded operations and logDet, so
// that the same seed gives the same numbers on every platform (the
// standard library's NormFloat64 goes through math.Exp).
type normalSource struct {
	uniform  func() float64
	spare    float64
	hasSpare bool
}

func (n *normalSource) next() float64 {
	if n.hasSpare {
		n.hasSpare = false
		return n.spare
	}
	for {
		u := 2*n.uniform() - 1
		v := 2*n.uniform() - 1
		s := float64(u*u) + float64(v*v)
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(-2 * logDet(s) / s)
		n.spare, n.hasSpare = float64(v*f), true
		return float64(u * f)
	}
}

// powInt returns b**n by repeated squaring: only exactly rounded
// multiplications, so the same bits everywhere (math.Pow promises no such
// thing).
func powInt(b float64, n int) float64 {
	r := 1.0
	for n > 0 {
		if n&1 == 1 {
			r *= b
		}
		b *= b
		n >>= 1
	}
	return r
}

// expShifted writes exp(x - max(src)) into dst (which may be src) and
// returns the max and the sum of the exponentials, summed in index order:
// the one softmax core shared by attention, the loss and the sampler.
// -Inf entries get 0.
func expShifted(dst, src []float64) (maxv, sum float64) {
	dst = dst[:len(src)]
	maxv, ok := maxBlocks(src)
	if !ok {
		maxv = math.Inf(-1)
		for _, v := range src {
			maxv = max(maxv, v)
		}
	}
	expShiftedFrom(dst, src, maxv, 0)
	return maxv, sumInOrder(dst)
}

// sumInOrder is x[0] + x[1] + ... as one chain in index order from +0:
// softmax's normaliser.
func sumInOrder(x []float64) float64 {
	sum := 0.0
	for _, e := range x {
		sum += e
	}
	return sum
}

// expShiftedFrom sets dst[i] = expDet(src[i] - maxv) for i >= from.
func expShiftedFrom(dst, src []float64, maxv float64, from int) {
	// The exponentials are independent: the AVX-512 (AVX2) kernel
	// computes them eight (four) at a time with expDet's operations (same
	// bits) as far as it can; expDet does the rest, one at a time.
	for i := from; i < len(src); {
		i += expShiftedBlocks(dst[i:], src[i:], maxv)
		for end := min(i+8, len(src)); i < end; i++ {
			dst[i] = expDet(src[i] - maxv)
		}
	}
}

// softmaxScaled sets row to softmax(row·scale) with the bits of
//
//	for s, v := range row {
//		row[s] = float64(v * scale)
//	}
//	softmax(row, row)
//
// On AVX-512 one kernel call does all of it for the attention's short
// rows, where the separate loops cost more in calls than in arithmetic;
// where the kernel stops (a NaN, a zero maximum, an exponential outside
// its ordinary path) the Go code goes on from there.
func softmaxScaled(row []float64, scale float64) {
	m, done := softmaxScaledBlocks(row, scale)
	switch {
	case done == len(row):
	case done >= 0:
		expShiftedFrom(row, row, m, done)
		divideBy(row, sumInOrder(row))
	default:
		if done == scaleNotDone {
			for s, v := range row {
				row[s] = float64(v * scale)
			}
		}
		softmax(row, row)
	}
}

// The answers of softmaxScaledBlocks when it did not finish and gave no
// exponentials: the row is only scaled (maxDeclined) or untouched.
const (
	maxDeclined  = -1
	scaleNotDone = -2
)

// divideBy sets x[i] /= d for every i.
func divideBy(x []float64, d float64) {
	if divBlocks(x, d) {
		return
	}
	for i := range x {
		x[i] /= d
	}
}

// softmax writes exp(row - max) / sum into probs (which may be row).
func softmax(probs, row []float64) {
	_, sum := expShifted(probs, row)
	divideBy(probs[:len(row)], sum)
}
