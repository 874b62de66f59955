// vec.go owns the elementwise kernels, Adam's update and the sums of squares, with their Go twins.

package kernels

import "math"

// ReLU sets out[i] = max(in[i], 0) (Go's max: NaN stays NaN, -0 becomes
// +0); out may be in.
func ReLU(out, in []float64) {
	out = out[:len(in)]
	n := reluAsm(out, in)
	reluGo(out[n:], in[n:])
}

// ReLUMask sets d[i] to +0 where inp[i] is not > 0 (a NaN input masks),
// and leaves it otherwise: the ReLU's backward step, inp its input or,
// the same mask, its output. The mask is applied to the bits, without a
// branch, because the sign of inp is random and mispredicted branches
// cost more than the rest of the loop.
func ReLUMask(d, inp []float64) {
	inp = inp[:len(d)]
	n := reluMaskAsm(d, inp)
	reluMaskGo(d[n:], inp[n:])
}

// Add sets out[i] = a[i] + b[i]; out may be a or b.
func Add(out, a, b []float64) {
	a, b = a[:len(out)], b[:len(out)]
	n := addAsm(out, a, b)
	addGo(out[n:], a[n:], b[n:])
}

// Scale sets x[i] *= s. It has no assembly: the loop is memory-bound.
func Scale(x []float64, s float64) {
	for i := range x {
		x[i] *= s
	}
}

// SoftmaxBackward is attention backward's softmax step on one row of
// probabilities p, with sum = Σ p[s]·dp[s]:
//
//	dp[s] = float64(float64(p[s]*(dp[s]-sum)) * scale)
func SoftmaxBackward(dp, p []float64, sum, scale float64) {
	p = p[:len(dp)]
	n := softmaxBackwardAsm(dp, p, sum, scale)
	softmaxBackwardGo(dp[n:], p[n:], sum, scale)
}

// AdamCoefficients are the constants of one Adam update: the moments'
// decay rates, the bias corrections C1 = 1-β1^t and C2 = 1-β2^t, the
// learning rate, ε, and the decoupled weight decay's factor Shrink
// (1 - lr·wd for a decayed tensor, exactly 1 otherwise).
type AdamCoefficients struct {
	Beta1, Beta2 float64
	C1, C2       float64
	LR, Eps      float64
	Shrink       float64
}

// Adam applies one update to every element of params (grads, m and v
// at least as long):
//
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	p = p·Shrink - lr·(m/C1) / (sqrt(v/C2) + ε)
//
// every product rounded on its own (no fused multiply-add), the multiply
// by Shrink skipped when it is 1 (the same bits).
func Adam(params, grads, m, v []float64, k AdamCoefficients) {
	N := len(params)
	grads, m, v = grads[:N], m[:N], v[:N]
	n := adamAsm(params, grads, m, v, &k)
	adamGo(params[n:], grads[n:], m[n:], v[n:], &k)
}

// SumSquares is Σ x² as one chain of fused multiply-adds in index order
// from +0: the gradient norm that decides clipping.
func SumSquares(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s = math.FMA(v, v, s)
	}
	return s
}

// SumSquares8 is Σ x² in its own fixed order: eight interleaved chains of
// fused multiply-adds from +0 (element i into chain i%8), added pairwise
// as ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)). Eight multiply-adds are in
// flight instead of one; the gradient norm's quick test sums blocks of
// the gradients this way.
func SumSquares8(x []float64) float64 {
	var s [8]float64
	n := sumSquares8Asm(x, &s) // the same chains, one vector lane each
	sumSquares8Go(&s, x[n:])
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// reluGo is ReLU's Go twin.
func reluGo(out, in []float64) {
	for i, v := range in {
		out[i] = max(v, 0)
	}
}

// reluMaskGo is ReLUMask's Go twin.
func reluMaskGo(d, inp []float64) {
	for i := range d {
		var keep uint64
		if inp[i] > 0 {
			keep = ^uint64(0)
		}
		d[i] = math.Float64frombits(math.Float64bits(d[i]) & keep)
	}
}

// addGo is Add's Go twin.
func addGo(out, a, b []float64) {
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

// softmaxBackwardGo is SoftmaxBackward's Go twin.
func softmaxBackwardGo(dp, p []float64, sum, scale float64) {
	for s, ps := range p {
		dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
	}
}

// adamGo is Adam's Go twin.
func adamGo(params, grads, m, v []float64, k *AdamCoefficients) {
	b1, b2, c1, c2, lr, eps, shrink := k.Beta1, k.Beta2, k.C1, k.C2, k.LR, k.Eps, k.Shrink
	for i := range params {
		g := grads[i]
		m[i] = float64(b1*m[i]) + float64((1-b1)*g)
		v[i] = float64(b2*v[i]) + float64((1-b2)*float64(g*g))
		mh, vh := m[i]/c1, v[i]/c2
		p := params[i]
		if shrink != 1 {
			p = float64(p * shrink)
		}
		params[i] = p - float64(lr*mh)/(math.Sqrt(vh)+eps)
	}
}

// sumSquares8Go continues SumSquares8's chains s over x, whose element 0
// goes to chain 0 (the hook consumes whole groups of eight).
func sumSquares8Go(s *[8]float64, x []float64) {
	i := 0
	for ; i+8 <= len(x); i += 8 {
		y := (*[8]float64)(x[i : i+8])
		s[0] = math.FMA(y[0], y[0], s[0])
		s[1] = math.FMA(y[1], y[1], s[1])
		s[2] = math.FMA(y[2], y[2], s[2])
		s[3] = math.FMA(y[3], y[3], s[3])
		s[4] = math.FMA(y[4], y[4], s[4])
		s[5] = math.FMA(y[5], y[5], s[5])
		s[6] = math.FMA(y[6], y[6], s[6])
		s[7] = math.FMA(y[7], y[7], s[7])
	}
	for ; i < len(x); i++ {
		s[i%8] = math.FMA(x[i], x[i], s[i%8])
	}
}
