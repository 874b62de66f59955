package minigpt

import (
	"context"
	"math"
	"slices"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// refAttention is the attention weights of the window's last position in
// every layer and head, (L, NH, len(ids)), by refForward.
func refAttention(m *Model, ids []int) []float64 {
	att, _ := refForward(m, ids)
	return att
}

// refForward is a plain reference forward pass over one window ids,
// written from the model's definition with no kernel, cache or blocking:
// it returns the attention weights of the window's last position in
// every layer and head, (L, NH, len(ids)), and every position's logits,
// (len(ids), V).
func refForward(m *Model, ids []int) (att, logits []float64) {
	c, p := m.Config(), m.p
	C, L, NH, n := c.EmbedDim, c.Layers, c.Heads, len(ids)
	hs := C / NH
	x := make([][]float64, n)
	for t, id := range ids {
		x[t] = make([]float64, C)
		for i := range C {
			x[t][i] = p.tokenEmbedding[id*C+i] + p.positionEmbedding[t*C+i]
		}
	}
	layernorm := func(v, g, b []float64) []float64 {
		mean, vr := 0.0, 0.0
		for _, e := range v {
			mean += e
		}
		mean /= float64(C)
		for _, e := range v {
			vr += (e - mean) * (e - mean)
		}
		vr /= float64(C)
		out := make([]float64, C)
		for i, e := range v {
			out[i] = (e-mean)/math.Sqrt(vr+1e-5)*g[i] + b[i]
		}
		return out
	}
	matvec := func(v, w []float64, OC int) []float64 { // v (C_in) · w (C_in, OC)
		out := make([]float64, OC)
		for i, e := range v {
			for o := range OC {
				out[o] += e * w[i*OC+o]
			}
		}
		return out
	}
	var res []float64
	for l := range L {
		qkv := make([][]float64, n)
		for t := range n {
			qkv[t] = matvec(layernorm(x[t], p.ln1Gain[l*C:], p.ln1Bias[l*C:]), p.qkvWeight[l*C*3*C:], 3*C)
		}
		out := make([][]float64, n)
		for t := range n {
			out[t] = make([]float64, C)
			for h := range NH {
				w := make([]float64, t+1)
				maxv := math.Inf(-1)
				for s := range w {
					for i := range hs {
						w[s] += qkv[t][h*hs+i] * qkv[s][C+h*hs+i]
					}
					w[s] /= math.Sqrt(float64(hs))
					maxv = max(maxv, w[s])
				}
				sum := 0.0
				for s := range w {
					w[s] = math.Exp(w[s] - maxv)
					sum += w[s]
				}
				for s := range w {
					w[s] /= sum
					for i := range hs {
						out[t][h*hs+i] += w[s] * qkv[s][2*C+h*hs+i]
					}
				}
				if t == n-1 {
					res = append(res, w...)
				}
			}
		}
		for t := range n {
			proj := matvec(out[t], p.attnProjWeight[l*C*C:], C)
			for i := range C {
				x[t][i] += proj[i]
			}
			hid := matvec(layernorm(x[t], p.ln2Gain[l*C:], p.ln2Bias[l*C:]), p.fcWeight[l*C*4*C:], 4*C)
			for i := range hid {
				hid[i] = max(hid[i]+p.fcBias[l*4*C+i], 0)
			}
			mlp := matvec(hid, p.fcProjWeight[l*4*C*C:], C)
			for i := range C {
				x[t][i] += mlp[i] + p.fcProjBias[l*C+i]
			}
		}
	}
	V := c.VocabSize
	for t := range n {
		h := layernorm(x[t], p.lnfGain, p.lnfBias)
		for v := range V {
			z := 0.0
			if c.TiedHead {
				for i := range C {
					z += h[i] * p.tokenEmbedding[v*C+i]
				}
			} else {
				z = p.headBias[v]
				for i := range C {
					z += h[i] * p.headWeight[i*V+v]
				}
			}
			logits = append(logits, z)
		}
	}
	return res, logits
}

// TestTraceAttentionMatchesReference: the attention weights a traced
// step carries are those of the position that chose its token, in every
// layer and head, against a plain reference forward pass of the window
// (1e-12), through the prompt's fill, the cache's growth and the window's
// slide; they are the same bits with and without the cache, and a
// sample of several gets its own.
func TestTraceAttentionMatchesReference(t *testing.T) {
	m := randomizedModel(t, tinyConfig(false), 31)
	c := m.Config()
	T := c.BlockSize
	prompt := []int{1, 2, 3}
	run := func(noCache bool, N int) [][]Step {
		steps := make([][]Step, N)
		o := GenerateOptions{MaxNewTokens: 3 * T, N: N, Seed: 4, TraceAttention: true, Trace: true, noCache: noCache}
		res, err := m.Generate(context.Background(), prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range res {
			steps[i] = res[i].Steps
		}
		return steps
	}
	cached, uncached := run(false, 2), run(true, 2)
	for i, steps := range cached {
		seq := slices.Clone(prompt)
		for k, s := range steps {
			w := seq[max(0, len(seq)-T):]
			if s.Context != len(w) || len(s.Attention) != c.Layers*c.Heads*len(w) {
				t.Fatalf("sample %d step %d: context %d with %d weights, want %d and %d", i, k, s.Context, len(s.Attention), len(w), c.Layers*c.Heads*len(w))
			}
			want := refAttention(m, w)
			for j := range want {
				if math.Abs(s.Attention[j]-want[j]) > 1e-12 {
					t.Fatalf("sample %d step %d (window %d): weight %d = %v, reference %v", i, k, len(w), j, s.Attention[j], want[j])
				}
			}
			if _, ok := testutil.SameBits(s.Attention, uncached[i][k].Attention); !ok {
				t.Fatalf("sample %d step %d: cached and uncached weights differ", i, k)
			}
			seq = append(seq, s.Chosen.ID)
		}
	}
	// Without the option the trace carries none.
	res, _ := m.Generate(context.Background(), prompt, GenerateOptions{MaxNewTokens: 2, Trace: true})
	if res[0].Steps[0].Attention != nil {
		t.Error("attention traced without TraceAttention")
	}
}
