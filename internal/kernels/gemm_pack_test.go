// gemm_pack_test.go tests the shapes that reach the AVX2 path's packed products (and, on every path, the same shapes).

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// packedCase is one GemmNNSet or GemmNN call of TestGemmNNPackedShapes.
type packedCase struct {
	g    *gemmCase
	bias []float64
	epi  Epilogue
	set  bool // GemmNNSet; else GemmNN
}

func (p packedCase) String() string {
	return fmt.Sprintf("%v set %v bias %v epi %d", p.g, p.set, p.bias != nil, p.epi)
}

// want is the definition written out: C's rows set to the bias (or
// cleared) for GemmNNSet, naiveNN, then the epilogue.
func (p packedCase) want(aux []float64) []float64 {
	g := p.g
	w := append([]float64(nil), g.c...)
	if p.set {
		clearRows(w, g.ldc, g.M, g.N)
		if p.bias != nil {
			for i := 0; i < g.M; i++ {
				copy(w[i*g.ldc:i*g.ldc+g.N], p.bias)
			}
		}
	}
	naiveNN(w, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
	for i := 0; i < g.M; i++ {
		for j := 0; j < g.N; j++ {
			x, r := w[i*g.ldc+j], aux[i*g.ldc+j]
			if p.epi&EpiReLU != 0 {
				x = max(x, 0)
			}
			if p.epi&EpiMask != 0 && !(r > 0) {
				x = 0
			}
			if p.epi&EpiResidual != 0 {
				x = r + x
			}
			w[i*g.ldc+j] = x
		}
	}
	return w
}

// TestGemmNNPackedShapes checks GemmNN and GemmNNSet (bias or +0, every
// epilogue) on every path against the definition, to the bit, and the
// hooks alone on the assembly paths, on the shapes the AVX2 path packs:
// row counts around its tiles of four and its blocks of A (mcPack), column
// counts with every tail of its panels of 12 and 8 and of four (the
// columns and rows left to the unpacked kernels), depths around its
// blocks of k (kcPack), widths past a block of B (ncPack), and A
// row-major, transposed or with other strides. Operands hold ±0, NaN and
// ±Inf now and then, C's padding between rows and guard zones around it
// must stay untouched, and for GemmNNSet C's old values are NaN, which
// no kernel may read.
func TestGemmNNPackedShapes(t *testing.T) {
	Ms := []int{16, 17, 18, 19, 20, 23, 44, mcPack + 4, mcPack + 9, 2*mcPack + 4}
	Ns := []int{16, 17, 19, 20, 24, 25, 28, 30, 32, 36, 39, 40, 44, 47, 52, 64, 65}
	Ks := []int{4, 5, 7, 31, kcPack - 1, kcPack, kcPack + 1, 2*kcPack + 3}
	rng := rand.New(rand.NewPCG(71, 72))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1)}
	fill := func(n int) []float64 {
		x := randomSlice(rng, n)
		for i := range x {
			if rng.IntN(200) == 0 {
				x[i] = special[rng.IntN(len(special))]
			}
		}
		return x
	}
	var cases []packedCase
	add := func(M, N, K, layout int) {
		g := &gemmCase{M: M, N: N, K: K, ldc: N + rng.IntN(2)*3, ld: N + rng.IntN(2)*5}
		switch layout {
		case 0: // row-major
			g.ai, g.ak = K+rng.IntN(2), 1
		case 1: // transposed
			g.ai, g.ak = 1, M+rng.IntN(3)
		default: // neither: rows and steps both strided
			g.ai, g.ak = 2*K+1, 2
		}
		g.a, g.b = fill(span(M, g.ai, K, g.ak)), fill(span(K, g.ld, N, 1))
		g.c = fill(span(M, g.ldc, N, 1))
		// Outputs (0, 0) and (M-1, N-1) are -0: every product underflows
		// to -0 in the FMA's rounding, so a chain from ±0 goes to -0 and
		// stays there, which the ReLU must turn into +0.
		for _, ij := range [][2]int{{0, 0}, {M - 1, N - 1}} {
			i, j := ij[0], ij[1]
			for k := 0; k < K; k++ {
				g.a[i*g.ai+k*g.ak], g.b[k*g.ld+j] = -1e-200, 1e-200
			}
			g.c[i*g.ldc+j] = 0
		}
		n := len(cases)
		p := packedCase{g: g, set: n%4 != 0, epi: []Epilogue{EpiNone, EpiReLU, EpiResidual, EpiReLU | EpiResidual, EpiMask}[n%5]}
		if !p.set {
			p.epi = EpiNone
		}
		if p.set && n%3 != 0 {
			p.bias = fill(N)
			p.bias[0], p.bias[N-1] = math.Copysign(0, -1), 0
		}
		if p.set {
			for i := 0; i < M; i++ {
				for j := 0; j < N; j++ {
					g.c[i*g.ldc+j] = math.NaN()
				}
			}
		}
		cases = append(cases, p)
	}
	for _, M := range Ms {
		for _, N := range Ns {
			add(M, N, Ks[rng.IntN(len(Ks))], rng.IntN(3))
		}
	}
	for _, K := range Ks {
		for layout := 0; layout < 3; layout++ {
			add(Ms[rng.IntN(len(Ms))], Ns[rng.IntN(len(Ns))], K, layout)
		}
	}
	if !testing.Short() {
		add(20, ncPack+44, 9, 0)
		add(33, 2*ncPack+20, 5, 1)
	}
	forEachImpl(t, func(t *testing.T, path string) {
		for _, p := range cases {
			g := p.g
			aux := fill(len(g.c))
			want := p.want(aux)
			for _, hookOnly := range []bool{false, true} {
				if hookOnly && path == "go" {
					continue
				}
				gc := testutil.Guarded(g.c)
				c := gc[testutil.GuardLen : testutil.GuardLen+len(g.c)]
				switch {
				case p.set && hookOnly:
					hookDid(t, path, p.String(), gemmNNSetAsm(c, g.ldc, p.bias, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K, p.epi, aux), g.M)
				case p.set:
					GemmNNSet(c, g.ldc, p.bias, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K, p.epi, aux)
				case hookOnly:
					hookDid(t, path, p.String(), gemmNNAsm(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K), g.M)
				default:
					GemmNN(c, g.ldc, g.a, g.ai, g.ak, g.b, g.ld, g.M, g.N, g.K)
				}
				if i, ok := testutil.SameBits(c, want); !ok {
					t.Fatalf("%v hook %v: c[%d] = %v, the definition gives %v", p, hookOnly, i, c[i], want[i])
				}
				if i, ok := testutil.CheckGuards(gc, len(g.c)); !ok {
					t.Fatalf("%v hook %v: wrote c[%d]", p, hookOnly, i)
				}
			}
		}
	})
}
