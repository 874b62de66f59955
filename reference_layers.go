// reference_layers.go holds the reference model's layers (section 3 of reference.go): each a forward/backward pair of plain loops.

package minigpt

import (
	"math"

	"example.org/minigpt/internal/kernels"
)

// ---------------------------------------------------------------------
// 3. The layers
// ---------------------------------------------------------------------

// encoderForward is x = wte[token] + wpe[position]: each row is its
// token's embedding plus its position's. From the lessons: the first
// step of MiniGPT.forward.
func encoderForward(out []float64, inputs []int, wte, wpe []float64, B, T, C int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			o := out[(b*T+t)*C:][:C]
			e := wte[inputs[b*T+t]*C:][:C]
			p := wpe[t*C:][:C]
			for i := range o {
				o[i] = e[i] + p[i]
			}
		}
	}
}

// encoderBackward undoes x = wte[token] + wpe[position]:
//
//	dwte[token] += dout;  dwpe[position] += dout
//
// row by row in order, so that every embedding's gradient is a chain
// over the rows that use it. From the lessons: the last step of
// MiniGPT.backward (its scatter-add into the token table, its sum over
// the batch for the positions).
func encoderBackward(dwte, dwpe, dout []float64, inputs []int, B, T, C int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			d := dout[(b*T+t)*C:][:C]
			de := dwte[inputs[b*T+t]*C:][:C]
			dp := dwpe[t*C:][:C]
			for i := range d {
				de[i] += d[i]
				dp[i] += d[i]
			}
		}
	}
}

// refLayerNormEps is LayerNorm's ε, the lessons'.
const refLayerNormEps = 1e-5

// layernormForward normalises each row of C values:
//
//	mean = Σx/C;  rstd = 1/sqrt(Σ(x-mean)²/C + ε)
//	xhat = (x - mean)·rstd;  out = xhat·weight + bias
//
// keeping mean and rstd for the backward pass (from the lessons:
// MiniGPT._ln_f). The sum is sumInOrder, the sum of squares a chain of
// fused multiply-adds in column order; xhat is rounded before it meets
// the weight in one fused multiply-add.
func layernormForward(out, mean, rstd, inp, weight, bias []float64, B, T, C int) {
	fc := float64(C)
	for n := 0; n < B*T; n++ {
		x := inp[n*C:][:C]
		m := sumInOrder(x) / fc
		v := 0.0
		for _, xi := range x {
			d := xi - m
			v = math.FMA(d, d, v)
		}
		r := 1 / math.Sqrt(v/fc+refLayerNormEps)
		o := out[n*C:][:C]
		for i, xi := range x {
			o[i] = math.FMA(float64((xi-m)*r), weight[i], bias[i])
		}
		mean[n], rstd[n] = m, r
	}
}

// layernormBackward undoes out = xhat·weight + bias, xhat = (x-mean)·rstd
// (from the lessons: MiniGPT._ln_b):
//
//	dxhat = dout·weight
//	dinp += rstd·(dxhat - mean(dxhat) - xhat·mean(dxhat·xhat))
//	dweight += Σ_rows dout·xhat;  dbias += Σ_rows dout
//
// The two means of each row are chains in column order (of additions,
// and of fused multiply-adds); the weight's and bias's gradients are
// chains over the rows in order, one per column.
func layernormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd []float64, B, T, C int) {
	fc := float64(C)
	for n := 0; n < B*T; n++ {
		x, d, di := inp[n*C:][:C], dout[n*C:][:C], dinp[n*C:][:C]
		m, r := mean[n], rstd[n]
		s1, s2 := 0.0, 0.0 // Σ dxhat, Σ dxhat·xhat
		for i := range x {
			xhat := float64((x[i] - m) * r)
			dxhat := float64(weight[i] * d[i])
			s1 += dxhat
			s2 = math.FMA(dxhat, xhat, s2)
		}
		m1, m2 := s1/fc, s2/fc
		for i := range x {
			xhat := float64((x[i] - m) * r)
			dxhat := float64(weight[i] * d[i])
			di[i] += float64(r * (dxhat - m1 - float64(xhat*m2)))
			dweight[i] = math.FMA(d[i], xhat, dweight[i])
			dbias[i] += d[i]
		}
	}
}

// matmulForward is out = inp·weight + bias for every row (bias may be
// nil): weight is (C, OC), stored (in, out) as in the lessons. Every
// output is a chain of fused multiply-adds over the C inputs in order,
// starting from its bias (+0 without one): the engine's GemmNN order,
// here as each input scaling a row of the weight. From the lessons:
// every projection of MiniGPT.forward (queries, keys and values, the
// attention's output, the feed-forward network's two layers, the head).
func matmulForward(out, inp, weight, bias []float64, B, T, C, OC int) {
	for n := 0; n < B*T; n++ {
		o := out[n*OC:][:OC]
		if bias != nil {
			copy(o, bias)
		}
		for c, x := range inp[n*C:][:C] {
			w := weight[c*OC:][:OC]
			for j := range o {
				o[j] = math.FMA(x, w[j], o[j])
			}
		}
	}
}

// matmulBackward undoes out = inp·weight + bias (dbias may be nil):
//
//	dinp += dout·weightᵀ;  dweight += inpᵀ·dout;  dbias += Σ_rows dout
//
// An input's gradient is dotChain of dout's row and the weight's row (a
// chain over the OC outputs in order: the engine multiplies by a
// transposed copy of the weight, in GemmNN's order); a weight's or
// bias's gradient is a chain over the rows in order.
func matmulBackward(dinp, dweight, dbias, dout, inp, weight []float64, B, T, C, OC int) {
	for n := 0; n < B*T; n++ {
		d, di := dout[n*OC:][:OC], dinp[n*C:][:C]
		for c := range di {
			di[c] = dotChain(di[c], d, weight[c*OC:][:OC])
		}
	}
	matmulParamsBackward(dweight, dbias, dout, inp, B, T, C, OC)
}

// matmulParamsBackward is matmulBackward's dweight += inpᵀ·dout and
// dbias += Σ_rows dout (dbias may be nil): for each row in order, each
// input scales dout's row into its row of dweight, so every gradient is
// a chain of fused multiply-adds (of additions, for the bias) over the
// rows in order.
func matmulParamsBackward(dweight, dbias, dout, inp []float64, B, T, C, OC int) {
	for n := 0; n < B*T; n++ {
		d := dout[n*OC:][:OC]
		for c, x := range inp[n*C:][:C] {
			dw := dweight[c*OC:][:OC]
			for j := range dw {
				dw[j] = math.FMA(x, d[j], dw[j])
			}
		}
		if dbias != nil {
			for j := range d {
				dbias[j] += d[j]
			}
		}
	}
}

// untiedHeadBackward is matmulBackward for the untied head, logits = lnf·W +
// b: the same formulas, but each input gradient is dot8 of dlogits's row
// and the weight's row, since the engine multiplies by the head's weight
// as it is stored (GemmNT) rather than by a transposed copy.
func untiedHeadBackward(dinp, dweight, dbias, dout, inp, weight []float64, B, T, C, V int) {
	for n := 0; n < B*T; n++ {
		d, di := dout[n*V:][:V], dinp[n*C:][:C]
		for c := range di {
			di[c] += dot8(d, weight[c*V:][:V])
		}
	}
	matmulParamsBackward(dweight, dbias, dout, inp, B, T, C, V)
}

// tiedHeadForward is the tied head, logits = lnf·wteᵀ: the token
// embedding, (V, C), is the output head, so a token's logit is the dot
// product of the row with its embedding, dot8 (llm.c's matmul_forward
// layout). From the lessons: the greedy-decoding lesson's forward pass
// takes the tied head as an option; their MiniGPT has an untied one.
func tiedHeadForward(out, inp, wte []float64, B, T, C, V int) {
	for n := 0; n < B*T; n++ {
		x, o := inp[n*C:][:C], out[n*V:][:V]
		for v := range o {
			o[v] += dot8(x, wte[v*C:][:C])
		}
	}
}

// tiedHeadBackward undoes logits = lnf·wteᵀ:
//
//	dinp += dlogits·wte;  dwte += dlogitsᵀ·lnf
//
// each a chain of fused multiply-adds in order: over the V tokens for an
// input's gradient, over the rows for an embedding's. The encoder's
// backward adds its own part of dwte afterwards.
func tiedHeadBackward(dinp, dwte, dout, inp, wte []float64, B, T, C, V int) {
	for n := 0; n < B*T; n++ {
		d, x, di := dout[n*V:][:V], inp[n*C:][:C], dinp[n*C:][:C]
		for v, g := range d {
			e, de := wte[v*C:][:C], dwte[v*C:][:C]
			for c := range di {
				di[c] = math.FMA(g, e[c], di[c])
				de[c] = math.FMA(g, x[c], de[c])
			}
		}
	}
}

// softmaxInPlace sets row to exp(row - max)/Σexp(row - max): the maximum
// by Go's max (exact, so its order does not matter), one exponential per
// element (kernels.Exp, the module's deterministic exp: math.Exp is
// assembly on some platforms and may round differently), the normaliser
// sumInOrder, and one division per element. It returns the maximum and
// the normaliser, from which the loss takes its logarithm. From the
// lessons: softmax, which subtracts the maximum the same way.
func softmaxInPlace(row []float64) (maxv, sum float64) {
	maxv = math.Inf(-1)
	for _, x := range row {
		maxv = max(maxv, x)
	}
	for i, x := range row {
		row[i] = kernels.Exp(x - maxv)
	}
	sum = sumInOrder(row)
	for i := range row {
		row[i] /= sum
	}
	return maxv, sum
}

// attentionForward is causal multi-head self-attention over the
// queries, keys and values of qkv (B, T, 3C), head by head (hs = C/NH
// channels each):
//
//	preatt[t,s] = q[t]·k[s];  att[t] = softmax_{s≤t}(preatt[t]/sqrt(hs))
//	out[t] = Σ_{s≤t} att[t,s]·v[s]
//
// Position t sees only the keys s ≤ t: the causal mask, applied by never
// computing the rest, which leaves their weights exactly 0 (the lessons
// set those scores to -1e9 before the softmax). A score is dot8; the
// scaling multiplies by 1/sqrt(hs), rounded; an output is a chain of
// fused multiply-adds over s in order. From the lessons: the attention
// of MiniGPT.forward, from the split into heads to their merge.
func attentionForward(out, preatt, att, qkv []float64, B, T, C, NH int) {
	hs := C / NH
	scale := 1 / math.Sqrt(float64(hs))
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			for h := 0; h < NH; h++ {
				q := qkv[(b*T+t)*3*C+h*hs:][:hs]
				pre := preatt[((b*NH+h)*T+t)*T:][:t+1]
				a := att[((b*NH+h)*T+t)*T:][:t+1]
				for s := range pre {
					k := qkv[(b*T+s)*3*C+C+h*hs:][:hs]
					pre[s] += dot8(q, k)
					a[s] = float64(pre[s] * scale)
				}
				softmaxInPlace(a)
				o := out[(b*T+t)*C+h*hs:][:hs]
				for s, w := range a {
					v := qkv[(b*T+s)*3*C+2*C+h*hs:][:hs]
					for i := range o {
						o[i] = math.FMA(w, v[i], o[i])
					}
				}
			}
		}
	}
}

// attentionBackward undoes attentionForward, for each sequence, head
// and position t in order:
//
//	datt[t,s] += dout[t]·v[s];  dv[s] += att[t,s]·dout[t]
//	dpreatt[t,s] = att[t,s]·(datt[t,s] - Σ_s' att[t,s']·datt[t,s'])/sqrt(hs)
//	dq[t] += Σ_s dpreatt[t,s]·k[s];  dk[s] += dpreatt[t,s]·q[t]
//
// over s ≤ t (from the lessons: MiniGPT.backward through the weighted
// sum of values, the softmax and the scores). datt is dot8; the sum
// inside the softmax's backward is dotChain; dpreatt rounds
// att·(datt - sum) before the scaling; and every gradient of q, k and v
// is a chain of fused multiply-adds, over s in order for a query, over t
// in order for a key or a value. dpreatt, which nothing else reads, is
// set rather than added to.
func attentionBackward(dqkv, dpreatt, datt, dout, qkv, att []float64, B, T, C, NH int) {
	hs := C / NH
	scale := 1 / math.Sqrt(float64(hs))
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			for h := 0; h < NH; h++ {
				a := att[((b*NH+h)*T+t)*T:][:t+1]
				da := datt[((b*NH+h)*T+t)*T:][:t+1]
				dpre := dpreatt[((b*NH+h)*T+t)*T:][:t+1]
				d := dout[(b*T+t)*C+h*hs:][:hs]
				q, dq := qkv[(b*T+t)*3*C+h*hs:][:hs], dqkv[(b*T+t)*3*C+h*hs:][:hs]
				for s := range da {
					v, dv := qkv[(b*T+s)*3*C+2*C+h*hs:][:hs], dqkv[(b*T+s)*3*C+2*C+h*hs:][:hs]
					da[s] += dot8(d, v)
					for i := range dv {
						dv[i] = math.FMA(a[s], d[i], dv[i])
					}
				}
				sum := dotChain(0, a, da)
				for s := range dpre {
					dpre[s] = float64(float64(a[s]*(da[s]-sum)) * scale)
				}
				for s, g := range dpre {
					k, dk := qkv[(b*T+s)*3*C+C+h*hs:][:hs], dqkv[(b*T+s)*3*C+C+h*hs:][:hs]
					for i := range dq {
						dq[i] = math.FMA(g, k[i], dq[i])
						dk[i] = math.FMA(g, q[i], dk[i])
					}
				}
			}
		}
	}
}

// reluForward is out = max(inp, 0) (Go's max: -0 becomes +0), the
// feed-forward network's activation (from the lessons: MiniGPT.forward's
// feed-forward network).
func reluForward(out, inp []float64, n int) {
	for i := range n {
		out[i] = max(inp[i], 0)
	}
}

// reluBackward undoes out = max(inp, 0): dinp += dout where inp > 0,
// nothing elsewhere (from the lessons: MiniGPT.backward's mask of the
// feed-forward network's gradient).
func reluBackward(dinp, inp, dout []float64, n int) {
	for i := range n {
		if inp[i] > 0 {
			dinp[i] += dout[i]
		}
	}
}

// residualForward is out = inp1 + inp2: the residual stream adds a
// layer's output to its input, after the attention and after the
// feed-forward network (from the lessons: MiniGPT.forward).
func residualForward(out, inp1, inp2 []float64, n int) {
	for i := range n {
		out[i] = inp1[i] + inp2[i]
	}
}

// residualBackward undoes out = inp1 + inp2: the gradient flows to both,
// dinp1 += dout and dinp2 += dout (from the lessons: MiniGPT.backward,
// where the stream's gradient is copied to both branches).
func residualBackward(dinp1, dinp2, dout []float64, n int) {
	for i := range n {
		dinp1[i] += dout[i]
		dinp2[i] += dout[i]
	}
}

// crossEntropyForward is each row's softmax of the logits and its loss,
// the negative log-probability of its target:
//
//	probs = softmax(logits);  loss = max + log(Σ exp(logits - max)) - logits[target]
//
// which is -log probs[target] by the log-sum-exp, never the log of a
// probability that has underflowed to 0 (the lessons add 1e-12 inside
// the log instead; docs/lessons.md). The logarithm is
// kernels.Log, the module's deterministic log. From the lessons: the end
// of MiniGPT.forward.
func crossEntropyForward(losses, probs, logits []float64, targets []int, B, T, V int) {
	for n := 0; n < B*T; n++ {
		p := probs[n*V:][:V]
		l := logits[n*V:][:V]
		copy(p, l)
		maxv, sum := softmaxInPlace(p)
		losses[n] = maxv + kernels.Log(sum) - l[targets[n]]
	}
}

// crossEntropyBackward is the gradient of the mean loss over the N = B·T
// rows with respect to the logits:
//
//	dlogits += (probs - onehot(target)) / N
//
// (from the lessons: the first step of MiniGPT.backward). It divides by
// N, as the engine does; multiplying by 1/N would round differently.
func crossEntropyBackward(dlogits, probs []float64, targets []int, B, T, V int) {
	N := float64(B * T)
	for n := 0; n < B*T; n++ {
		p, d := probs[n*V:][:V], dlogits[n*V:][:V]
		for v := range d {
			ind := 0.0
			if v == targets[n] {
				ind = 1
			}
			d[v] += (p[v] - ind) / N
		}
	}
}
