package nn

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

// attentionRowByRow is attention of one sequence's query rows [t0, t1)
// as written before rows were taken attnRows at a time: one query row per
// GemmNT and GemmNN call, each sum in its defining order. out is (T, C),
// att (NH, T, T) by absolute row. The blocked code must give the same
// bits.
func attentionRowByRow(out, att, qkv []float64, T, t0, t1, C, NH int) {
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	for h := 0; h < NH; h++ {
		keys, values := qkv[C+h*hs:], qkv[2*C+h*hs:]
		for t := t0; t < t1; t++ {
			q := qkv[t*C3+h*hs : t*C3+h*hs+hs]
			row := att[(h*T+t)*T : (h*T+t)*T+t+1]
			clear(row)
			kernels.GemmNT(row, 0, q, hs, keys, C3, 1, t+1, hs)
			for s, v := range row {
				row[s] = float64(v * scale)
			}
			kernels.Softmax(row, row)
			o := out[t*C+h*hs : t*C+h*hs+hs]
			clear(o)
			kernels.GemmNN(o, hs, row, 0, 1, values, C3, 1, hs, t+1)
		}
	}
}

// attentionBackwardRowByRow undoes attentionRowByRow over whole
// sequences, each sum in its defining order, adding to dqkv.
func attentionBackwardRowByRow(dqkv, datt, dout, qkv, att []float64, T, C, NH int) {
	hs, C3 := C/NH, 3*C
	scale := 1 / math.Sqrt(float64(hs))
	for h := 0; h < NH; h++ {
		keys, values, queries := qkv[C+h*hs:], qkv[2*C+h*hs:], qkv[h*hs:]
		dkeys, dvalues := dqkv[C+h*hs:], dqkv[2*C+h*hs:]
		a, da := att[h*T*T:(h+1)*T*T], datt[h*T*T:(h+1)*T*T]
		do := dout[h*hs:]
		for t := 0; t < T; t++ {
			p, dp := a[t*T:t*T+t+1], da[t*T:t*T+t+1]
			dq := dqkv[t*C3+h*hs : t*C3+h*hs+hs]
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

// TestAttentionBlocksMatchRows checks Attention against the row-by-row
// definition, to the bit, on every kernel path, at block sizes that are
// and are not multiples of attnRows: whole windows, and the KV cache's
// ranges of rows, with the queries in rows of their own (as a decoding
// pass packs them) and several sequences of different ranges in one job;
// with the lower triangle written and nothing above the diagonal left
// non-zero. Then AttentionBackward against its definition.
func TestAttentionBlocksMatchRows(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, shape := range [][3]int{{1, 8, 2}, {3, 8, 2}, {5, 16, 2}, {7, 24, 3}, {13, 32, 1}, {16, 64, 4}, {33, 64, 2}} {
			T, C, NH := shape[0], shape[1], shape[2]
			C3 := 3 * C
			ranges := [][2]int{{0, T}, {T - 1, T}, {T / 2, T}, {T / 3, T/3 + 1}, {0, (T + 1) / 2}}
			// One sequence per range, all in one job.
			j := Attention{C: C, NH: NH, LdAtt: T}
			var wants, wantAtts [][]float64
			for _, r := range ranges {
				t0, t1 := r[0], r[1]
				qkv := fill(rng, T*C3, 4)
				want, wantAtt := make([]float64, T*C), make([]float64, NH*T*T)
				attentionRowByRow(want, wantAtt, qkv, T, t0, t1, C, NH)
				q := make([]float64, (t1-t0)*C3) // the queries in rows of their own
				copy(q, qkv[t0*C3:t1*C3])
				j.Seqs = append(j.Seqs, AttentionSeq{Q: q, KV: qkv, Out: nanSlice((t1 - t0) * C), Att: nanSlice(NH * (t1 - t0) * T), T0: t0, T1: t1})
				wants, wantAtts = append(wants, want), append(wantAtts, wantAtt)
			}
			runInRanges(&j, len(j.Seqs)*NH, 3)
			for k, s := range j.Seqs {
				t0, t1 := s.T0, s.T1
				if i, ok := testutil.SameBits(s.Out, wants[k][t0*C:t1*C]); !ok {
					t.Fatalf("T %d C %d NH %d rows [%d,%d): out[%d] = %v, row by row %v", T, C, NH, t0, t1, i, s.Out[i], wants[k][t0*C+i])
				}
				for h := 0; h < NH; h++ {
					for r := t0; r < t1; r++ {
						got := s.Att[(h*(t1-t0)+r-t0)*T:][:r+1]
						if i, ok := testutil.SameBits(got, wantAtts[k][(h*T+r)*T:][:r+1]); !ok {
							t.Fatalf("T %d C %d NH %d rows [%d,%d): att[%d][%d][%d] = %v", T, C, NH, t0, t1, h, r, i, got[i])
						}
						if above := s.Att[(h*(t1-t0)+r-t0)*T:][r+1 : min(t0+((r-t0)/attnRows+1)*attnRows, t1)]; len(above) > 0 {
							for _, v := range above {
								if v != 0 {
									t.Fatalf("T %d C %d NH %d rows [%d,%d): att[%d][%d] above the diagonal holds %v", T, C, NH, t0, t1, h, r, v)
								}
							}
						}
					}
				}
			}
			// Backward over two whole sequences.
			const B = 2
			qkv := fill(rng, B*T*C3, 4)
			att := make([]float64, B*NH*T*T)
			for b := range B {
				attentionRowByRow(make([]float64, T*C), att[b*NH*T*T:], qkv[b*T*C3:], T, 0, T, C, NH)
			}
			dout := fill(rng, B*T*C, 2)
			want, got := make([]float64, B*T*C3), nanSlice(B*T*C3)
			wantDatt, gotDatt := make([]float64, B*NH*T*T), make([]float64, B*NH*T*T)
			for b := range B {
				attentionBackwardRowByRow(want[b*T*C3:], wantDatt[b*NH*T*T:], dout[b*T*C:], qkv[b*T*C3:], att[b*NH*T*T:], T, C, NH)
			}
			bj := AttentionBackward{DQKV: got, DAtt: gotDatt, DOut: dout, QKV: qkv, Att: att, B: B, T: T, C: C, NH: NH}
			runInRanges(&bj, B*NH, 1)
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("T %d C %d NH %d: dqkv[%d] = %v, row by row %v", T, C, NH, i, got[i], want[i])
			}
			for i := range gotDatt {
				if s, r := i%T, i/T%T; s <= r && math.Float64bits(gotDatt[i]) != math.Float64bits(wantDatt[i]) || s > r && gotDatt[i] != 0 {
					t.Fatalf("T %d C %d NH %d: datt[%d] (row %d, column %d) = %v, row by row %v", T, C, NH, i, r, s, gotDatt[i], wantDatt[i])
				}
			}
		}
	})
}

// BenchmarkAttention times one layer's attention forward and backward at
// the seed, baby and full shapes, blocked (as the model runs it), also
// forward and backward alone, and row by row (the definition), in one
// binary so the two can be compared. GFLOP/s counts the causal triangle
// of both products, forward 4·B·NH·hs·T(T+1)/2 and backward twice that.
func BenchmarkAttention(b *testing.B) {
	for _, s := range []struct {
		name        string
		B, T, C, NH int
	}{{"seed", 32, 32, 64, 4}, {"baby", 12, 64, 128, 4}, {"full", 4, 256, 384, 6}} {
		rng := rand.New(rand.NewPCG(1, 2))
		B, T, C, NH := s.B, s.T, s.C, s.NH
		C3 := 3 * C
		qkv, dout := fill(rng, B*T*C3, 1), fill(rng, B*T*C, 1)
		out, att := make([]float64, B*T*C), make([]float64, B*NH*T*T)
		dqkv, datt := make([]float64, B*T*C3), make([]float64, B*NH*T*T)
		j := Attention{C: C, NH: NH, LdAtt: T}
		for b := range B {
			j.Seqs = append(j.Seqs, AttentionSeq{Q: qkv[b*T*C3:], KV: qkv[b*T*C3:], Out: out[b*T*C:], Att: att[b*NH*T*T:], T0: 0, T1: T})
		}
		bj := AttentionBackward{DQKV: dqkv, DAtt: datt, DOut: dout, QKV: qkv, Att: att, B: B, T: T, C: C, NH: NH}
		fwd := 4 * float64(B*NH*(C/NH)) * float64(T*(T+1)/2)
		gflops := func(b *testing.B, flops float64, cpu0 time.Duration) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu1, ok := testutil.ProcessCPUTime(); ok {
				b.ReportMetric(flops*float64(b.N)/(cpu1-cpu0).Seconds()/1e9, "cpu-GFLOP/s")
			}
		}
		b.Run(s.name+"/blocks", func(b *testing.B) {
			cpu0, _ := testutil.ProcessCPUTime()
			for b.Loop() {
				j.Run(0, B*NH)
				bj.Run(0, B*NH)
			}
			gflops(b, 3*fwd, cpu0)
		})
		b.Run(s.name+"/forward", func(b *testing.B) {
			cpu0, _ := testutil.ProcessCPUTime()
			for b.Loop() {
				j.Run(0, B*NH)
			}
			gflops(b, fwd, cpu0)
		})
		b.Run(s.name+"/backward", func(b *testing.B) {
			cpu0, _ := testutil.ProcessCPUTime()
			for b.Loop() {
				bj.Run(0, B*NH)
			}
			gflops(b, 2*fwd, cpu0)
		})
		b.Run(s.name+"/rows", func(b *testing.B) {
			if s.name == "full" {
				b.Skip("minutes per round")
			}
			for b.Loop() {
				for b := range B {
					attentionRowByRow(out[b*T*C:], att[b*NH*T*T:], qkv[b*T*C3:], T, 0, T, C, NH)
					attentionBackwardRowByRow(dqkv[b*T*C3:], datt[b*NH*T*T:], dout[b*T*C:], qkv[b*T*C3:], att[b*NH*T*T:], T, C, NH)
				}
			}
		})
	}
}
