package minigpt

import (
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/kernels"
)

// attentionRowByRow is attention forward and backward as written before
// rows were taken attnRows at a time: one query row per gemmNT and gemmNN
// call, each sum in its defining order. The blocked code must give the
// same bits.
func attentionRowByRow(out, att, qkv []float64, dqkv, datt, dout []float64, B, T, t0, t1, C, NH int, backward bool) {
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			base := b * T * C3
			keys, values := qkv[base+C+h*hs:], qkv[base+2*C+h*hs:]
			attBase := (b*NH + h) * T * T
			if !backward {
				for t := t0; t < t1; t++ {
					q := qkv[base+t*C3+h*hs : base+t*C3+h*hs+hs]
					row := att[attBase+t*T : attBase+t*T+t+1]
					clear(row)
					kernels.GemmNT(row, 0, q, hs, keys, C3, 1, t+1, hs)
					for s, v := range row {
						row[s] = float64(v * scale)
					}
					kernels.Softmax(row, row)
					o := out[(b*T+t)*C+h*hs : (b*T+t)*C+h*hs+hs]
					clear(o)
					kernels.GemmNN(o, hs, row, 0, 1, values, C3, 1, hs, t+1)
				}
				continue
			}
			queries := qkv[base+h*hs:]
			dkeys, dvalues := dqkv[base+C+h*hs:], dqkv[base+2*C+h*hs:]
			a, da := att[attBase:attBase+T*T], datt[attBase:attBase+T*T]
			do := dout[b*T*C+h*hs:]
			for t := 0; t < T; t++ {
				p, dp := a[t*T:t*T+t+1], da[t*T:t*T+t+1]
				dq := dqkv[base+t*C3+h*hs : base+t*C3+h*hs+hs]
				clear(dp)
				kernels.GemmNT(dp, 0, do[t*C:t*C+hs], hs, values, C3, 1, t+1, hs)
				sum := 0.0
				for s, ps := range p {
					sum = math.FMA(ps, dp[s], sum)
				}
				for s, ps := range p {
					dp[s] = float64(float64(ps*(dp[s]-sum)) * scale)
				}
				kernels.GemmNN(dq, hs, dp, 0, 1, keys, C3, 1, hs, t+1)
			}
			transposedCausalNN(dvalues, C3, a, T, do, C, T, hs)
			transposedCausalNN(dkeys, C3, da, T, queries, C3, T, hs)
		}
	}
}

// TestAttentionBlocksMatchRows checks attention forward (whole windows
// and the KV cache's ranges of rows) and backward against the row-by-row
// definition, to the bit, on every kernel path, at block sizes that are
// and are not multiples of attnRows, with the lower triangle written and
// nothing above the diagonal left non-zero.
func TestAttentionBlocksMatchRows(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(5, 6))
		fill := func(n int, scale float64) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = (rng.Float64() - 0.5) * scale
			}
			return x
		}
		for _, shape := range [][4]int{{1, 1, 8, 2}, {2, 3, 8, 2}, {1, 5, 16, 2}, {2, 7, 24, 3}, {1, 13, 32, 1}, {2, 16, 64, 4}, {1, 33, 64, 2}} {
			B, T, C, NH := shape[0], shape[1], shape[2], shape[3]
			qkv := fill(B*T*3*C, 4)
			ranges := [][2]int{{0, T}, {T - 1, T}, {T / 2, T}, {T / 3, T/3 + 1}}
			for _, r := range ranges {
				t0, t1 := r[0], r[1]
				want, got := make([]float64, B*T*C), make([]float64, B*T*C)
				wantAtt, gotAtt := make([]float64, B*NH*T*T), make([]float64, B*NH*T*T)
				// Rows before t0 hold the cached pass's results in both.
				if t0 > 0 {
					attentionRowByRow(want, wantAtt, qkv, nil, nil, nil, B, T, 0, t0, C, NH, false)
					copy(got, want)
					copy(gotAtt, wantAtt)
				}
				attentionRowByRow(want, wantAtt, qkv, nil, nil, nil, B, T, t0, t1, C, NH, false)
				attentionForward(got, gotAtt, qkv, B, T, t0, t1, C, NH)
				if i, ok := sameBits(got, want); !ok {
					t.Fatalf("B %d T %d C %d NH %d rows [%d,%d): out[%d] = %v, row by row %v", B, T, C, NH, t0, t1, i, got[i], want[i])
				}
				if i, ok := sameBits(gotAtt, wantAtt); !ok {
					t.Fatalf("B %d T %d C %d NH %d rows [%d,%d): att[%d] = %v, row by row %v", B, T, C, NH, t0, t1, i, gotAtt[i], wantAtt[i])
				}
			}
			att := make([]float64, B*NH*T*T)
			attentionRowByRow(make([]float64, B*T*C), att, qkv, nil, nil, nil, B, T, 0, T, C, NH, false)
			dout := fill(B*T*C, 2)
			want, got := fill(B*T*3*C, 1), make([]float64, B*T*3*C)
			copy(got, want) // dqkv accumulates
			wantDatt, gotDatt := make([]float64, B*NH*T*T), make([]float64, B*NH*T*T)
			attentionRowByRow(nil, att, qkv, want, wantDatt, dout, B, T, 0, T, C, NH, true)
			attentionBackward(got, gotDatt, dout, qkv, att, B, T, C, NH)
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("B %d T %d C %d NH %d: dqkv[%d] = %v, row by row %v", B, T, C, NH, i, got[i], want[i])
			}
			for i := range gotDatt {
				if s, r := i%T, i/T%T; s <= r && math.Float64bits(gotDatt[i]) != math.Float64bits(wantDatt[i]) || s > r && gotDatt[i] != 0 {
					t.Fatalf("B %d T %d C %d NH %d: datt[%d] (row %d, column %d) = %v, row by row %v", B, T, C, NH, i, r, s, gotDatt[i], wantDatt[i])
				}
			}
		}
	})
}

// BenchmarkAttention times attention forward and backward of one layer
// at the seed and baby shapes, blocked (as the model runs it) and row by
// row (the definition), in one binary so the two can be compared.
func BenchmarkAttention(b *testing.B) {
	for _, s := range []struct {
		name        string
		B, T, C, NH int
	}{{"seed", 32, 32, 64, 4}, {"baby", 12, 64, 128, 4}} {
		rng := rand.New(rand.NewPCG(1, 2))
		fill := func(n int) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.Float64() - 0.5
			}
			return x
		}
		B, T, C, NH := s.B, s.T, s.C, s.NH
		qkv, dout := fill(B*T*3*C), fill(B*T*C)
		out, att := make([]float64, B*T*C), make([]float64, B*NH*T*T)
		dqkv, datt := make([]float64, B*T*3*C), make([]float64, B*NH*T*T)
		b.Run(s.name+"/blocks", func(b *testing.B) {
			for b.Loop() {
				attentionForward(out, att, qkv, B, T, 0, T, C, NH)
				attentionBackward(dqkv, datt, dout, qkv, att, B, T, C, NH)
			}
		})
		b.Run(s.name+"/rows", func(b *testing.B) {
			for b.Loop() {
				attentionRowByRow(out, att, qkv, nil, nil, nil, B, T, 0, T, C, NH, false)
				attentionRowByRow(nil, att, qkv, dqkv, datt, dout, B, T, 0, T, C, NH, true)
			}
		})
	}
}
