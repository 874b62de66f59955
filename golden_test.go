package minigpt

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// golden is testdata/golden_tiny.json, written by testdata/golden_gen.py
// from the lessons' NumPy reference: an independent computation of the same
// function (with BLAS summation orders), so agreement is checked to a
// tolerance, not bits.
type golden struct {
	Config struct{ Vocab, Block, Embd, Heads, Layers int }
	Params map[string]struct {
		Shape []int
		Data  []float64
	}
	Cases []struct {
		B, T         int
		Idx, Targets []int
		LossNoEps    float64 `json:"loss_no_eps"`
		Logits       []float64
		Grads        map[string][]float64
	}
}

// referenceName maps a reference tensor (name, layer) to its place in our
// slab: our tensor, and for each reference element (r, c) of a matrix with
// cols columns, our flat index.
func forEachReferenceTensor(cfg Config, fn func(ref string, ours string, index func(i int) int)) {
	C := cfg.EmbedDim
	same := func(base int) func(int) int { return func(i int) int { return base + i } }
	fn("E", "token_embedding", same(0))
	fn("P", "position_embedding", same(0))
	for l := 0; l < cfg.Layers; l++ {
		s := func(n string) string { return fmt.Sprintf("%s%d", n, l) }
		fn(s("ln1g"), "ln1_gain", same(l*C))
		fn(s("ln1b"), "ln1_bias", same(l*C))
		for part, n := range []string{"Wq", "Wk", "Wv"} {
			// (C, C) into columns [part·C, part·C + C) of the (C, 3C) qkv matrix.
			fn(s(n), "qkv_weight", func(i int) int { return l*3*C*C + (i/C)*3*C + part*C + i%C })
		}
		fn(s("Wo"), "attn_proj_weight", same(l*C*C))
		fn(s("ln2g"), "ln2_gain", same(l*C))
		fn(s("ln2b"), "ln2_bias", same(l*C))
		fn(s("W1"), "fc_weight", same(l*4*C*C))
		fn(s("b1"), "fc_bias", same(l*4*C))
		fn(s("W2"), "fc_proj_weight", same(l*4*C*C))
		fn(s("b2"), "fc_proj_bias", same(l*C))
	}
	fn("lnfg", "lnf_gain", same(0))
	fn("lnfb", "lnf_bias", same(0))
	fn("Wh", "head_weight", same(0))
	fn("bh", "head_bias", same(0))
}

// TestMatchesNumPyReference checks logits, loss and every gradient
// against the NumPy reference on every kernel path this machine runs,
// the Go twins included.
func TestMatchesNumPyReference(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	forEachKernelPath(t, func(t *testing.T, _ string) {
		cfg := Config{VocabSize: g.Config.Vocab, BlockSize: g.Config.Block, EmbedDim: g.Config.Embd, Heads: g.Config.Heads, Layers: g.Config.Layers}
		m, err := NewModel(cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		tensors := map[string][]float64{}
		offsets := map[string]int{}
		off := 0
		for _, ts := range m.tensors() {
			tensors[ts.name] = ts.data
			offsets[ts.name] = off
			off += len(ts.data)
		}
		filled := 0
		forEachReferenceTensor(cfg, func(ref, ours string, index func(int) int) {
			p, ok := g.Params[ref]
			if !ok {
				t.Fatalf("golden file lacks %s", ref)
			}
			for i, v := range p.Data {
				tensors[ours][index(i)] = v
			}
			filled += len(p.Data)
		})
		if filled != len(m.Params()) {
			t.Fatalf("golden parameters cover %d of %d", filled, len(m.Params()))
		}
		close := func(what string, got, want float64) {
			t.Helper()
			if d := math.Abs(got - want); d > 1e-10*math.Abs(want)+1e-12 {
				t.Errorf("%s: got %.17g, reference %.17g (difference %.3g)", what, got, want, d)
			}
		}
		for ci, c := range g.Cases {
			logits, err := m.Logits(c.Idx, c.B, c.T)
			if err != nil {
				t.Fatal(err)
			}
			for i := range logits {
				close(fmt.Sprintf("case %d logit %d", ci, i), logits[i], c.Logits[i])
			}
			loss, grads, err := m.Gradients(c.Idx, c.Targets, c.B, c.T)
			if err != nil {
				t.Fatal(err)
			}
			close(fmt.Sprintf("case %d loss", ci), loss, c.LossNoEps)
			forEachReferenceTensor(cfg, func(ref, ours string, index func(int) int) {
				for i, want := range c.Grads[ref] {
					close(fmt.Sprintf("case %d grad %s[%d]", ci, ref, i), grads[offsets[ours]+index(i)], want)
				}
			})
		}
	})
}
