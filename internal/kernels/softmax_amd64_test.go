//go:build amd64 && gc && !purego

// softmax_amd64_test.go tests what the AVX-512 softmax kernels hand back.

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// TestSoftmaxScaledKernel checks what the AVX-512 kernel hands over
// when it stops, which TestSoftmaxScaledPaths sees only through the
// result: declined (-1) exactly when the scaled row has a NaN or a zero
// maximum, with the row scaled; otherwise stopped at the start of the
// first block of eight holding a lane Exp treats apart, with the
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
			if done != -1 {
				t.Fatalf("row %v: done %d, want -1 (NaN or zero maximum)", row, done)
			}
			if i, ok := testutil.SameBits(got, scaled); !ok {
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
				want = Exp(scaled[i] - m)
			}
			if math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("row %v: stopped at %d with row[%d] = %v, want %v", row, done, i, got[i], want)
			}
		}
	}
}

// TestSoftmaxScaled4Kernel checks the AVX-512 four-row kernel alone: a
// row it finishes (bit r of its answer) has softmaxWant's bits, a row it
// does not finish is left exactly as it was, the values around the rows
// are never touched, and every row of ordinary values is finished (else
// SoftmaxScaledRows would pass with a kernel that declines everything).
func TestSoftmaxScaled4Kernel(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	scales := []float64{0.25, 1 / math.Sqrt(16), 1, 3}
	rng := rand.New(rand.NewPCG(17, 18))
	var scratch [128]float64
	for trial := 0; trial < 3000; trial++ {
		n0 := 1 + rng.IntN(29)
		ld := n0 + 3 + rng.IntN(3)*rng.IntN(9)
		rows, kinds := softmaxRows(rng, 4, ld, n0)
		scale := scales[rng.IntN(len(scales))]
		before, want := slices.Clone(rows), slices.Clone(rows)
		for r := range 4 {
			softmaxWant(want[r*ld:r*ld+n0+r], scale)
		}
		done := softmaxScaled4AVX512(rows, ld, n0, scale, &scratch)
		for r := range 4 {
			expect := want
			if done&(1<<r) == 0 {
				expect = before // handed back untouched
				if kinds[r] >= 4 {
					t.Fatalf("n0 %d, row %d (ordinary values %v): not finished", n0, r, before[r*ld:r*ld+n0+r])
				}
			}
			if i, ok := testutil.SameBits(rows[r*ld:(r+1)*ld], expect[r*ld:(r+1)*ld]); !ok {
				t.Fatalf("n0 %d, ld %d, scale %v, row %d (done %04b): element %d is %v, want %v", n0, ld, scale, r, done, i, rows[r*ld+i], expect[r*ld+i])
			}
		}
	}
}
