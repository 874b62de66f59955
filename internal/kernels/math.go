// math.go owns the deterministic elementary functions: Exp, Log, PowInt and the Normal sampler.

package kernels

import "math"

// The standard library's math.Exp and math.Log are written in assembly on
// some architectures and in Go on others, and Go code may be compiled with
// or without fused multiply-adds; neither promises the same last bit
// everywhere. Exp and Log are the classic fdlibm algorithms written so
// that every product is explicitly rounded (a float64 conversion forbids
// fusion), so they return the same bits on every platform. Both are
// within one ulp of the exact result.

const (
	ln2Hi = 6.93147180369123816490e-01 // high bits of ln 2
	ln2Lo = 1.90821492927058770002e-10 // ln 2 - ln2Hi
	log2e = 1.44269504088896338700e+00 // 1 / ln 2
)

// Exp returns e**x with platform-independent rounding.
func Exp(x float64) float64 {
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

// Log returns the natural logarithm of x with platform-independent
// rounding.
func Log(x float64) float64 {
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

// Normal draws standard normal numbers by Marsaglia's polar method from
// a uniform source (a PCG stream's Float64), using only exactly rounded
// operations and Log, so that the same seed gives the same numbers on
// every platform (the standard library's NormFloat64 goes through
// math.Exp). Each accepted pair (u, v) gives two numbers, u's first.
type Normal struct {
	// Uniform returns numbers in [0, 1).
	Uniform  func() float64
	spare    float64
	hasSpare bool
}

// Next returns the next standard normal number.
func (n *Normal) Next() float64 {
	if n.hasSpare {
		n.hasSpare = false
		return n.spare
	}
	for {
		u := 2*n.Uniform() - 1
		v := 2*n.Uniform() - 1
		s := float64(u*u) + float64(v*v)
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(-2 * Log(s) / s)
		n.spare, n.hasSpare = float64(v*f), true
		return float64(u * f)
	}
}

// PowInt returns b**n (n >= 0; 1 for n <= 0) by repeated squaring: only
// exactly rounded multiplications, so the same bits everywhere (math.Pow
// promises no such thing).
func PowInt(b float64, n int) float64 {
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
