package minigpt

import (
	"math"
	"testing"
)

// transposeJob writes every element of every part's dst exactly once,
// whatever the split into ranges of rows, on every kernel path: its 8×8
// blocks (in registers on AVX-512), the ragged columns and the ragged
// rows against the definition dst[o*R+i] = src[i*W+o], with src values
// unique so that a misplaced copy shows.
func TestTransposeJob(t *testing.T) {
	forEachKernelPath(t, func(t *testing.T, _ string) { testTransposeJob(t) })
}

func testTransposeJob(t *testing.T) {
	var tj transposeJob
	var srcs [][]float64
	for k, shape := range [][2]int{{8, 24}, {13, 5}, {3, 17}, {16, 16}, {1, 1}, {9, 40}, {24, 64}, {17, 35}} {
		R, W := shape[0], shape[1]
		src := make([]float64, R*W)
		for i := range src {
			src[i] = float64(k*10000 + i)
		}
		dst := make([]float64, R*W)
		for i := range dst {
			dst[i] = math.NaN()
		}
		srcs = append(srcs, src)
		tj.parts = append(tj.parts, transposePart{dst: dst, src: src, R: R, W: W})
	}
	for _, step := range []int{tj.rows(), 1, 3, 8, 11} {
		for _, p := range tj.parts {
			for i := range p.dst {
				p.dst[i] = math.NaN()
			}
		}
		for lo := 0; lo < tj.rows(); lo += step {
			tj.run(lo, min(lo+step, tj.rows()))
		}
		for k, p := range tj.parts {
			for o := 0; o < p.W; o++ {
				for i := 0; i < p.R; i++ {
					if got, want := p.dst[o*p.R+i], srcs[k][i*p.W+o]; got != want {
						t.Fatalf("ranges of %d rows, part %d (%d×%d): dst[%d][%d] = %v, want %v", step, k, p.R, p.W, o, i, got, want)
					}
				}
			}
		}
	}
}
