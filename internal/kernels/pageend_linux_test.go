//go:build linux

// pageend_linux_test.go tests that no kernel reads or writes past its slices, against pages that fault.

package kernels

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// pageFence maps three pages with no access to the first and the last,
// so that a float64 slice placed flush against either inaccessible page
// faults on the first element a kernel reads or writes beyond its ends.
type pageFence struct {
	mem  []byte
	page int
}

func newPageFence(t *testing.T) *pageFence {
	t.Helper()
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[2*page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	return &pageFence{mem: mem, page: page}
}

// slice returns n float64s holding vals' first n values, ending at the
// fence's upper inaccessible page (atEnd) or starting at its lower one.
func (f *pageFence) slice(vals []float64, n int, atEnd bool) []float64 {
	off := f.page
	if atEnd {
		off = 2*f.page - 8*n
	}
	s := unsafe.Slice((*float64)(unsafe.Pointer(&f.mem[off])), n)
	copy(s, vals)
	return s
}

// TestVectorLoopsStayInsideTheirSlices runs every vector kernel (the
// elementwise ones, attention backward's softmax step, Adam, the sum of
// squares, the exponentials, maximum, division and softmax rows, and
// LayerNorm's kernels on one row) on operands flush against pages that
// may not be read or written, at every length up to 33 (every tail of
// the 8- and 4-lane blocks) and on every path. A load or store outside a slice,
// even one whose lanes a mask would discard, faults and kills the test
// binary: the masked loads the assembly uses suppress faults only on
// the lanes they mask off.
func TestVectorLoopsStayInsideTheirSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	vals := make([]float64, 64)
	for i := range vals {
		vals[i] = rng.Float64() - 0.5
	}
	pos := make([]float64, 64)
	for i := range pos {
		pos[i] = rng.Float64() + 0.5
	}
	forEachImpl(t, func(t *testing.T, _ string) {
		var fences [9]*pageFence
		for i := range fences {
			fences[i] = newPageFence(t)
		}
		for n := 0; n <= 33; n++ {
			for _, atEnd := range []bool{true, false} {
				op := func(i int, v []float64) []float64 { return fences[i].slice(v, n, atEnd) }
				ReLU(op(0, vals), op(1, vals))
				Add(op(0, vals), op(1, vals), op(2, vals))
				ReLUMask(op(0, vals), op(1, vals))
				SoftmaxBackward(op(0, vals), op(1, vals), 0.25, 0.5)
				k := AdamCoefficients{Beta1: 0.9, Beta2: 0.95, C1: 0.1, C2: 0.05, LR: 1e-3, Eps: 1e-8, Shrink: 1}
				Adam(op(0, vals), op(1, vals), op(2, vals), op(3, pos), k)
				SumSquares8(op(0, vals))
				ExpShifted(op(0, vals), op(1, vals))
				rowMax(op(0, vals))
				divideBy(op(0, vals), 3)
				if n > 0 {
					// One row of n columns: its statistics are one
					// element each, its weights n.
					one := func(i int, v []float64) []float64 { return fences[i].slice(v, 1, atEnd) }
					LayerNormStats(one(5, vals), one(6, pos), op(1, vals), 1, n, 1e-5)
					LayerNormApply(op(0, vals), op(1, vals), op(2, vals), op(3, vals), one(5, vals), one(6, pos), 1, n)
					LayerNormRowSums(one(7, vals), one(8, vals), op(1, vals), op(2, vals), op(3, vals), one(5, vals), one(6, pos), 1, n)
					LayerNormInputGrad(op(0, vals), op(4, vals), op(1, vals), op(2, vals), op(3, vals), one(5, vals), one(6, pos), one(7, vals), one(8, vals), 1, n)
					LayerNormParamGrads(op(0, vals), op(4, vals), op(1, vals), op(2, vals), one(5, vals), one(6, pos), 1, n, n)
					SoftmaxScaled(op(0, vals), 0.25)
				}
			}
		}
	})
}

// TestGemmStaysInsideItsOperands does the same for the matrix kernels:
// GemmNN (A row-major and transposed), GemmNNSet from the bias or +0 with
// its epilogues (ReLU and residual add, the ReLU's mask), and GemmNT and
// GemmNTSet, with A, B, C, the bias and the epilogue's operand
// each flush against a page that faults. The row counts reach every
// row block of the kernels (six, four, two and one rows), the column
// counts every masked tail of their column blocks.
func TestGemmStaysInsideItsOperands(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	vals := make([]float64, 512)
	for i := range vals {
		vals[i] = rng.Float64() - 0.5
	}
	forEachImpl(t, func(t *testing.T, _ string) {
		var fences [5]*pageFence
		for i := range fences {
			fences[i] = newPageFence(t)
		}
		for _, M := range []int{1, 2, 3, 4, 5, 6, 7, 11, 13} {
			for _, N := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33} {
				for _, K := range []int{1, 2, 9} {
					for _, atEnd := range []bool{true, false} {
						op := func(i, n int) []float64 { return fences[i].slice(vals, n, atEnd) }
						a, b, c := op(0, M*K), op(1, K*N), op(2, M*N)
						bias, res := op(3, N), op(4, M*N)
						GemmNN(c, N, a, K, 1, b, N, M, N, K)
						GemmNN(c, N, a, 1, M, b, N, M, N, K)
						for _, epi := range []Epilogue{EpiNone, EpiReLU | EpiResidual, EpiMask} {
							GemmNNSet(c, N, bias, a, K, 1, b, N, M, N, K, epi, res)
							GemmNNSet(c, N, nil, a, 1, M, b, N, M, N, K, epi, res)
						}
						bnt := op(1, N*K) // GemmNT's B: N rows of K
						GemmNT(c, N, a, K, bnt, K, M, N, K)
						GemmNTSet(c, N, a, K, bnt, K, M, N, K)
					}
				}
			}
		}
	})
}

// TestGemmPackedStaysInsideItsOperands is TestGemmStaysInsideItsOperands
// for the shapes the AVX2 path packs (at least 16 rows and columns):
// GemmNN and GemmNNSet with A row-major and transposed, every epilogue,
// row counts with every remainder of its tiles of four and column
// counts with every tail of its panels of 12 and 8 and of four, every
// operand flush against a page that faults (at most a page of values
// each).
func TestGemmPackedStaysInsideItsOperands(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	vals := make([]float64, 512)
	for i := range vals {
		vals[i] = rng.Float64() - 0.5
	}
	forEachImpl(t, func(t *testing.T, _ string) {
		var fences [5]*pageFence
		for i := range fences {
			fences[i] = newPageFence(t)
		}
		for _, M := range []int{16, 17, 18, 19} {
			for _, N := range []int{16, 17, 19, 20, 23, 24, 25, 27} {
				for _, K := range []int{4, 5, 9, 27} {
					if M*N > len(vals) || M*K > len(vals) || K*N > len(vals) {
						continue
					}
					for _, atEnd := range []bool{true, false} {
						op := func(i, n int) []float64 { return fences[i].slice(vals, n, atEnd) }
						a, b, c := op(0, M*K), op(1, K*N), op(2, M*N)
						bias, res := op(3, N), op(4, M*N)
						GemmNN(c, N, a, K, 1, b, N, M, N, K)
						GemmNN(c, N, a, 1, M, b, N, M, N, K)
						for _, epi := range []Epilogue{EpiNone, EpiReLU | EpiResidual, EpiMask} {
							GemmNNSet(c, N, bias, a, K, 1, b, N, M, N, K, epi, res)
							GemmNNSet(c, N, nil, a, 1, M, b, N, M, N, K, epi, res)
						}
					}
				}
			}
		}
	})
}

// TestTransposeStaysInsideItsOperands runs Transpose on every path with
// src and dst flush against pages that fault, for every remainder of the
// kernels' blocks of 8 rows and of 8 (AVX-512) or 4 (AVX2) columns, and
// destination ranges that start and end inside a block.
func TestTransposeStaysInsideItsOperands(t *testing.T) {
	vals := make([]float64, 512)
	for i := range vals {
		vals[i] = float64(i)
	}
	forEachImpl(t, func(t *testing.T, _ string) {
		src, dst := newPageFence(t), newPageFence(t)
		for _, R := range []int{7, 8, 9, 15, 16, 17, 24} {
			for _, W := range []int{1, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 20} {
				for _, atEnd := range []bool{true, false} {
					s, d := src.slice(vals, R*W, atEnd), dst.slice(vals, R*W, atEnd)
					for _, o := range [][2]int{{0, W}, {1, W}, {0, W - 1}, {W / 3, W - W/4}} {
						Transpose(d, s, R, W, o[0], o[1])
					}
				}
			}
		}
	})
}
