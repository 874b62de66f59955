//go:build amd64 && gc && !purego

package minigpt

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelLevelLimit checks MINIGPT_KERNELS: it caps the path, never
// raises it past what the CPU and OS support, and is ignored when unknown.
func TestKernelLevelLimit(t *testing.T) {
	best := levelGo
	if hasAVX2FMA {
		best = levelAVX2
	}
	if hasAVX512 {
		best = levelAVX512
	}
	for _, tc := range []struct {
		limit string
		want  int
	}{
		{"", best}, {"avx512", best}, {"bogus", best},
		{"avx2", min(best, levelAVX2)}, {"go", levelGo},
	} {
		if got := chooseKernelLevel(tc.limit); got != tc.want {
			t.Errorf("MINIGPT_KERNELS=%q: level %d, want %d", tc.limit, got, tc.want)
		}
	}
	if hasAVX512 && !hasAVX2FMA {
		t.Error("AVX-512 detected without AVX2+FMA")
	}
}

// TestGemmNNMaskAlone checks that the AVX-512 driver refuses epiMask
// with another layer: the kernels would read the mask as the residual
// (or mask the ReLU's output), a wrong result instead of an error.
func TestGemmNNMaskAlone(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	one := []float64{1}
	for _, epi := range []int{epiMask | epiResidual, epiMask | epiRelu} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("epi %d: no panic", epi)
				}
			}()
			gemmNNAVX512Init(make([]float64, 1), 1, nil, 2, one, 1, 1, one, 1, 1, 1, 1, epi, one)
		}()
	}
}

// TestSoftmaxScaledKernel checks what the AVX-512 kernel hands over
// when it stops, which TestSoftmaxScaledPaths sees only through the
// result: declined (-1) exactly when the scaled row has a NaN or a zero
// maximum, with the row scaled; otherwise stopped at the start of the
// first block of eight holding a lane expDet treats apart, with the
// exponentials before it and the scaled values from it on.
func TestSoftmaxScaledKernel(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for n := 0; n < 3000; n++ {
		row := make([]float64, 1+n%40)
		for i := range row {
			row[i] = (rng.Float64() - 0.5) * 20
			switch rng.IntN(30) {
			case 0:
				row[i] = -3000
			case 1:
				row[i] = math.NaN()
			case 2:
				row[i] = 0
			}
		}
		scale := 0.5
		scaled := make([]float64, len(row))
		m, nan := math.Inf(-1), false
		for i, v := range row {
			scaled[i] = float64(v * scale)
			m = max(m, scaled[i])
			nan = nan || math.IsNaN(scaled[i])
		}
		got := append([]float64(nil), row...)
		gotMax, done := softmaxScaledAVX512(got, scale)
		if nan || m == 0 {
			if done != maxDeclined {
				t.Fatalf("row %v: done %d, want %d (NaN or zero maximum)", row, done, maxDeclined)
			}
			if i, ok := sameBits(got, scaled); !ok {
				t.Fatalf("row %v: declined with row[%d] = %v, want the scaled %v", row, i, got[i], scaled[i])
			}
			continue
		}
		if gotMax != m {
			t.Fatalf("row %v: max %v, want %v", row, gotMax, m)
		}
		stop := len(row)
		for i, v := range scaled {
			if expSpecial(v - m) {
				stop = i / 8 * 8
				break
			}
		}
		if done != stop {
			t.Fatalf("row %v: done %d, want %d", row, done, stop)
		}
		if stop == len(row) {
			continue // the result itself: TestSoftmaxScaledPaths
		}
		for i := range row {
			want := scaled[i]
			if i < stop {
				want = expDet(scaled[i] - m)
			}
			if math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("row %v: stopped at %d with row[%d] = %v, want %v", row, done, i, got[i], want)
			}
		}
	}
}
