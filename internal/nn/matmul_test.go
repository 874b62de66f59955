package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/testutil"
)

// weightGradOperands draws inp (N×C) and dout (N×OC) and returns them with
// dW = inpᵀ·dout by its definition (naiveNN).
func weightGradOperands(rng *rand.Rand, N, C, OC int) (inp, dout, want []float64) {
	inp, dout = randomSlice(rng, N*C), randomSlice(rng, N*OC)
	want = make([]float64, C*OC)
	naiveNN(want, OC, inp, 1, C, dout, OC, C, OC, N)
	return inp, dout, want
}

// TestMatmulWeightGradSplits: MatmulWeightGrad's items cover every output
// of dW = inpᵀ·dout exactly once, whatever the ranges, each output its
// whole chain: against the definition, bit for bit, on every kernel path,
// with ragged row blocks and groups (C not a multiple of 4, past one and
// two groups of weightGradRows, OC past the kernels' column blocks) and a
// dW full of NaN first (every
// output must be set); and as two halves, the second continuing the
// first's chains over the later rows (RunRows).
func TestMatmulWeightGradSplits(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, shape := range [][3]int{{37, 7, 130}, {64, 64, 192}, {5, 3, 65}, {40, 9, 64}, {9, 6, 300}, {33, 10, 384}, {2, 9, 64}, {19, 197, 33}, {11, 97, 400}} {
			N, C, OC := shape[0], shape[1], shape[2]
			inp, dout, want := weightGradOperands(rng, N, C, OC)
			for _, step := range []int{1, 2, 3, 5, 1000} {
				dw := nanSlice(C * OC)
				j := MatmulWeightGrad{DWeight: dw, Inp: inp, DOut: dout, N: N, C: C, OC: OC}
				items, _, _ := j.Size()
				runInRanges(&j, items, step)
				if i, ok := testutil.SameBits(dw, want); !ok {
					t.Fatalf("N %d, C %d, OC %d, ranges of %d items: dW[%d][%d] = %v, want %v", N, C, OC, step, i/OC, i%OC, dw[i], want[i])
				}
				h := N / 2
				dw = nanSlice(C * OC)
				j.DWeight = dw
				runInRanges(rowsJob{&j, 0, h, true}, items, step)
				runInRanges(rowsJob{&j, h, N, false}, items, step)
				if i, ok := testutil.SameBits(dw, want); !ok {
					t.Fatalf("N %d, C %d, OC %d, in halves, ranges of %d items: dW[%d][%d] = %v, want %v", N, C, OC, step, i/OC, i%OC, dw[i], want[i])
				}
			}
		}
	})
}

// TestMatmulForwardAndInputGrad: Matmul is the bias-started chain, then
// the ReLU, then the residual add, and MatmulInputGrad through the
// transposed weight is the chain from +0 over the outputs, masked where
// the ReLU was off; both against the definitions, on every path, in
// ranges of rows.
func TestMatmulForwardAndInputGrad(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 24))
		for _, shape := range [][3]int{{7, 8, 24}, {13, 32, 128}, {1, 5, 3}, {33, 64, 256}} {
			N, C, OC := shape[0], shape[1], shape[2]
			inp, w, bias, res := randomSlice(rng, N*C), randomSlice(rng, C*OC), randomSlice(rng, OC), randomSlice(rng, N*OC)
			for _, relu := range []bool{false, true} {
				want := make([]float64, N*OC)
				for n := 0; n < N; n++ {
					copy(want[n*OC:(n+1)*OC], bias)
				}
				naiveNN(want, OC, inp, C, 1, w, OC, N, OC, C)
				for i := range want {
					if relu {
						want[i] = max(want[i], 0)
					}
					want[i] = res[i] + want[i]
				}
				got := nanSlice(N * OC)
				j := Matmul{Out: got, Inp: inp, Weight: w, Bias: bias, Residual: res, ReLU: relu, C: C, OC: OC}
				runInRanges(&j, N, 3)
				if i, ok := testutil.SameBits(got, want); !ok {
					t.Fatalf("N %d C %d OC %d relu %v: out[%d] = %v, want %v", N, C, OC, relu, i, got[i], want[i])
				}
			}
			// dinp = dout·wᵀ, masked by the ReLU's output mask.
			dout, mask := randomSlice(rng, N*OC), randomSlice(rng, N*C)
			wT := make([]float64, OC*C)
			tr := Transpose{Parts: []TransposePart{{Dst: wT, Src: w, R: C, W: OC}}}
			tr.Run(0, tr.Rows())
			want := make([]float64, N*C)
			naiveNN(want, C, dout, OC, 1, wT, C, N, C, OC)
			for i := range want {
				if !(mask[i] > 0) {
					want[i] = 0
				}
			}
			got := nanSlice(N * C)
			ig := MatmulInputGrad{DInp: got, DOut: dout, WeightT: wT, ReLU: mask, C: C, OC: OC}
			runInRanges(&ig, N, 2)
			if i, ok := testutil.SameBits(got, want); !ok {
				t.Fatalf("N %d C %d OC %d: dinp[%d] = %v, want %v", N, C, OC, i, got[i], want[i])
			}
		}
	})
}

// TestTranspose writes every element of every part's dst exactly once,
// whatever the split into ranges of rows, on every kernel path: its 8×8
// blocks, the ragged columns and the ragged rows against the definition
// dst[o*R+i] = src[i*W+o], with src values unique so that a misplaced
// copy shows.
func TestTranspose(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		var tj Transpose
		var srcs [][]float64
		for k, shape := range [][2]int{{8, 24}, {13, 5}, {3, 17}, {16, 16}, {1, 1}, {9, 40}, {24, 64}, {17, 35}} {
			R, W := shape[0], shape[1]
			src := make([]float64, R*W)
			for i := range src {
				src[i] = float64(k*10000 + i)
			}
			srcs = append(srcs, src)
			tj.Parts = append(tj.Parts, TransposePart{Dst: nanSlice(R * W), Src: src, R: R, W: W})
		}
		for _, step := range []int{tj.Rows(), 1, 3, 8, 11} {
			for _, p := range tj.Parts {
				for i := range p.Dst {
					p.Dst[i] = math.NaN()
				}
			}
			runInRanges(&tj, tj.Rows(), step)
			for k, p := range tj.Parts {
				for o := 0; o < p.W; o++ {
					for i := 0; i < p.R; i++ {
						if got, want := p.Dst[o*p.R+i], srcs[k][i*p.W+o]; got != want {
							t.Fatalf("ranges of %d rows, part %d (%d×%d): dst[%d][%d] = %v, want %v", step, k, p.R, p.W, o, i, got, want)
						}
					}
				}
			}
		}
	})
}

// BenchmarkMatmulWeightGrad times the baby config's largest weight
// gradient (dW_fc = ln2ᵀ·dfc: 128×512 outputs, 768 terms each) on one
// goroutine, whole and in pieces of 8 items (a section's pieces at two
// threads are of that order): a split whose pieces cost a kernel call of
// their own each shows as a fraction of the whole job's GFLOP/s.
func BenchmarkMatmulWeightGrad(b *testing.B) {
	const N, C, OC = 768, 128, 512
	rng := rand.New(rand.NewPCG(5, 6))
	inp, dout, dw := randomSlice(rng, N*C), randomSlice(rng, N*OC), make([]float64, C*OC)
	for _, bc := range []struct {
		name  string
		piece int // items per Run; 0: all
	}{{"whole", 0}, {"pieces", 8}} {
		b.Run(bc.name, func(b *testing.B) {
			j := MatmulWeightGrad{DWeight: dw, Inp: inp, DOut: dout, N: N, C: C, OC: OC}
			items, _, _ := j.Size()
			step := items
			if bc.piece > 0 {
				step = bc.piece
			}
			for b.Loop() {
				runInRanges(&j, items, step)
			}
			b.ReportMetric(2*float64(N*C*OC)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestReLUMaskFromOutput: MatmulInputGrad masks the feed-forward gradient with
// the ReLU's output (the forward pass keeps no copy of its input), which
// must keep exactly the entries its input would: relu(x) > 0 exactly
// where x > 0, NaN, ±0, subnormals and infinities included, on every
// kernel path.
func TestReLUMaskFromOutput(t *testing.T) {
	xs := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, -5e-324, 1, -1, math.MaxFloat64, -math.MaxFloat64}
	for len(xs) < 37 {
		xs = append(xs, float64(len(xs)%7)-3.5)
	}
	forEachPath(t, func(t *testing.T) {
		act := make([]float64, len(xs))
		kernels.ReLU(act, xs)
		fromIn, fromOut := make([]float64, len(xs)), make([]float64, len(xs))
		for i := range fromIn {
			fromIn[i], fromOut[i] = float64(i)+0.5, float64(i)+0.5
		}
		kernels.ReLUMask(fromIn, xs)
		kernels.ReLUMask(fromOut, act)
		for i := range xs {
			if math.Float64bits(fromIn[i]) != math.Float64bits(fromOut[i]) {
				t.Fatalf("x = %v: masked by the input %v, by the output %v", xs[i], fromIn[i], fromOut[i])
			}
		}
	})
}

// rowsJob runs a sum over rows [r0, r1) of its rows as a plain job.
type rowsJob struct {
	sum interface {
		RunRows(lo, hi, r0, r1 int, first bool)
	}
	r0, r1 int
	first  bool
}

func (j rowsJob) Run(lo, hi int) { j.sum.RunRows(lo, hi, j.r0, j.r1, j.first) }
