package minigpt

// This file holds Config and Model: a model's sizes, and its parameters as
// one flat slab with named views into it.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"example.org/minigpt/internal/kernels"
)

// Config is the shape of a MiniGPT.
type Config struct {
	VocabSize int  // V: number of tokens (characters); at least 2
	BlockSize int  // longest context; positions 0..BlockSize-1 have embeddings
	EmbedDim  int  // C: width of the residual stream; a multiple of Heads
	Heads     int  // NH: attention heads, each of width EmbedDim/Heads
	Layers    int  // L: transformer blocks
	TiedHead  bool // the output head is the token embedding, transposed, with no bias
}

// ConfigFor returns the lessons' model shape (block size 32, width 64, 4
// heads, 2 layers, untied head) for vocab: the config to train on a
// corpus of one's own.
//
//	data, _ := minigpt.NewDataset(text, nil, 32)
//	m, _ := minigpt.NewModel(minigpt.ConfigFor(data.Vocab), seed)
func ConfigFor(vocab *Vocab) Config {
	c := defaultConfig()
	c.VocabSize = vocab.Size()
	return c
}

// DefaultConfig returns the lessons' model exactly: ConfigFor the Lantern
// Bay vocabulary (24 characters), 104,728 parameters. (The lessons' prose
// says 154k; its code, which this package follows, gives 104,728.) For
// another corpus use ConfigFor, which takes the vocabulary size from it.
func defaultConfig() Config {
	return Config{VocabSize: lanternBayVocabSize, BlockSize: 32, EmbedDim: 64, Heads: 4, Layers: 2}
}

// lanternBayVocabSize is the number of distinct characters of LanternBay
// (TestLanternBayIsTheSeedsCorpus checks it).
const lanternBayVocabSize = 24

// ErrBadConfig is returned (wrapped) by Config.Validate, and so by
// NewModel, for a config that cannot describe a model.
var ErrBadConfig = errors.New("invalid config")

// Size limits that keep every index within int32 and every allocation
// sane; a config beyond them is refused rather than attempted.
const (
	maxDim    = 1 << 16
	maxParams = 1 << 28 // 2 GiB a slab; training keeps four
	// maxSequenceFloats bounds one sequence's activations (the generator
	// allocates them for BlockSize positions).
	maxSequenceFloats = 1 << 28
)

// Validate reports the first thing wrong with c (an error wrapping
// ErrBadConfig that names the field), or nil.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
		min  int
		max  int
	}{
		{"vocab size", c.VocabSize, 2, maxVocabSize},
		{"block size", c.BlockSize, 1, maxDim},
		{"embedding width", c.EmbedDim, 1, maxDim},
		{"heads", c.Heads, 1, maxDim},
		{"layers", c.Layers, 1, 1 << 10},
	} {
		if f.v < f.min || f.v > f.max {
			return fmt.Errorf("%w: %s %d is outside [%d, %d]", ErrBadConfig, f.name, f.v, f.min, f.max)
		}
	}
	if c.EmbedDim%c.Heads != 0 {
		return fmt.Errorf("%w: embedding width %d is not divisible by %d heads", ErrBadConfig, c.EmbedDim, c.Heads)
	}
	if n := c.numParams(); n > maxParams {
		return fmt.Errorf("%w: %d parameters exceed the limit of %d", ErrBadConfig, n, maxParams)
	}
	if n := c.activationFloats(1, c.BlockSize); n > maxSequenceFloats {
		return fmt.Errorf("%w: one %d-token sequence needs %.0f activations, above the limit of %d", ErrBadConfig, c.BlockSize, n, maxSequenceFloats)
	}
	return nil
}

// NumParams returns the number of parameters of a model with this config.
func (c Config) NumParams() int { return c.numParams() }

func (c Config) numParams() int {
	n := 0
	for _, t := range c.layout() {
		n += t.size()
	}
	return n
}

// tensorSpec is one named parameter tensor in the slab.
type tensorSpec struct {
	name   string
	shape  []int
	init   initKind
	decays bool // a matrix or embedding: AdamW's weight decay applies
}

type initKind int

const (
	initNormal initKind = iota // N(0, 0.02)
	initOnes
	initZeros
)

func (t tensorSpec) size() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// layout lists the parameter tensors in slab order. The order is part of
// the checkpoint format.
func (c Config) layout() []tensorSpec {
	V, T, C, L := c.VocabSize, c.BlockSize, c.EmbedDim, c.Layers
	s := []tensorSpec{
		{"token_embedding", []int{V, C}, initNormal, true},
		{"position_embedding", []int{T, C}, initNormal, true},
		{"ln1_gain", []int{L, C}, initOnes, false},
		{"ln1_bias", []int{L, C}, initZeros, false},
		{"qkv_weight", []int{L, C, 3 * C}, initNormal, true},
		{"attn_proj_weight", []int{L, C, C}, initNormal, true},
		{"ln2_gain", []int{L, C}, initOnes, false},
		{"ln2_bias", []int{L, C}, initZeros, false},
		{"fc_weight", []int{L, C, 4 * C}, initNormal, true},
		{"fc_bias", []int{L, 4 * C}, initZeros, false},
		{"fc_proj_weight", []int{L, 4 * C, C}, initNormal, true},
		{"fc_proj_bias", []int{L, C}, initZeros, false},
		{"lnf_gain", []int{C}, initOnes, false},
		{"lnf_bias", []int{C}, initZeros, false},
	}
	if !c.TiedHead {
		s = append(s,
			tensorSpec{"head_weight", []int{C, V}, initNormal, true},
			tensorSpec{"head_bias", []int{V}, initZeros, false})
	}
	return s
}

// params holds named views into one flat slab (of parameters, of their
// gradients, or of optimizer moments), llm.c style.
type params struct {
	tokenEmbedding    []float64 // (V, C)
	positionEmbedding []float64 // (BlockSize, C)
	ln1Gain           []float64 // (L, C)
	ln1Bias           []float64 // (L, C)
	qkvWeight         []float64 // (L, C, 3C): columns [0,C) query, [C,2C) key, [2C,3C) value
	attnProjWeight    []float64 // (L, C, C)
	ln2Gain           []float64 // (L, C)
	ln2Bias           []float64 // (L, C)
	fcWeight          []float64 // (L, C, 4C)
	fcBias            []float64 // (L, 4C)
	fcProjWeight      []float64 // (L, 4C, C)
	fcProjBias        []float64 // (L, C)
	lnfGain           []float64 // (C)
	lnfBias           []float64 // (C)
	headWeight        []float64 // (C, V); nil when tied
	headBias          []float64 // (V); nil when tied
}

// layerParams are layer l's tensors: views into a slab's params (or its
// gradients), as llm.c names l_ln1w = params.ln1w + l*C.
type layerParams struct {
	ln1Gain, ln1Bias []float64 // (C)
	qkvWeight        []float64 // (C, 3C)
	attnProjWeight   []float64 // (C, C)
	ln2Gain, ln2Bias []float64 // (C)
	fcWeight         []float64 // (C, 4C)
	fcBias           []float64 // (4C)
	fcProjWeight     []float64 // (4C, C)
	fcProjBias       []float64 // (C)
}

// layer returns layer l's tensors.
func (p *params) layer(l int, c Config) layerParams {
	C := c.EmbedDim
	at := func(t []float64, n int) []float64 { return t[l*n : (l+1)*n : (l+1)*n] }
	return layerParams{
		ln1Gain: at(p.ln1Gain, C), ln1Bias: at(p.ln1Bias, C),
		qkvWeight: at(p.qkvWeight, 3*C*C), attnProjWeight: at(p.attnProjWeight, C*C),
		ln2Gain: at(p.ln2Gain, C), ln2Bias: at(p.ln2Bias, C),
		fcWeight: at(p.fcWeight, 4*C*C), fcBias: at(p.fcBias, 4*C),
		fcProjWeight: at(p.fcProjWeight, 4*C*C), fcProjBias: at(p.fcProjBias, C),
	}
}

// viewsOf cuts slab into the tensors of layout without allocating.
func viewsOf(layout []tensorSpec, slab []float64) params {
	var p params
	dst := []*[]float64{
		&p.tokenEmbedding, &p.positionEmbedding, &p.ln1Gain, &p.ln1Bias,
		&p.qkvWeight, &p.attnProjWeight, &p.ln2Gain, &p.ln2Bias,
		&p.fcWeight, &p.fcBias, &p.fcProjWeight, &p.fcProjBias,
		&p.lnfGain, &p.lnfBias, &p.headWeight, &p.headBias,
	}
	off := 0
	for i, t := range layout {
		n := t.size()
		*dst[i] = slab[off : off+n : off+n]
		off += n
	}
	return p
}

// Model is a MiniGPT: its config and its parameters in one flat slab,
// both fixed for its life (Params is a view that cannot replace or resize
// the slab). Every Model is built by one constructor (NewModel, Clone, or
// reading a checkpoint), so a loaded model trains exactly like a fresh
// one. Generation, Logits, Score and Gradients only read the model and
// are safe for concurrent use; a Trainer's steps wait for them, and they
// for a step, so none sees half-updated parameters.
type Model struct {
	cfg Config
	// slab holds every parameter, tensor after tensor in layout order;
	// Adam and checkpoints treat it as one vector. The named views in p
	// point into it.
	slab  []float64
	p     params
	specs []tensorSpec // cfg.layout(), computed once

	// use is held for reading by every call that reads the parameters
	// and for writing by a training step. A waiting step holds back new
	// readers, so readers cannot starve training; in turn a reader must
	// not call the model again from inside its own call (a stream
	// callback) while a Trainer may be stepping it.
	use sync.RWMutex
	// trained is set while a Trainer holds the model.
	trained atomic.Bool
}

// Config returns the model's shape.
func (m *Model) Config() Config { return m.cfg }

// Params returns the model's parameter slab: every parameter, tensor after
// tensor in the order docs/checkpoint-format.md lists (token_embedding
// (V, C), position_embedding (BlockSize, C), then each per-layer tensor
// for all layers: ln1_gain (L, C), …). Writing its elements changes the
// model (while no other call on the model runs).
func (m *Model) Params() []float64 { return m.slab[:len(m.slab):len(m.slab)] }

// NewModel returns a model with freshly initialised parameters: weights
// and embeddings drawn from N(0, 0.02²) by a PCG generator seeded with
// seed, LayerNorm gains 1, biases 0.
func NewModel(cfg Config, seed uint64) (*Model, error) {
	m, err := newModel(cfg, nil)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, streamInit))
	normal := kernels.Normal{Uniform: rng.Float64}
	off := 0
	for _, t := range cfg.layout() {
		w := m.slab[off : off+t.size()]
		switch t.init {
		case initNormal:
			for i := range w {
				w[i] = float64(0.02 * normal.Next())
			}
		case initOnes:
			for i := range w {
				w[i] = 1
			}
		}
		off += len(w)
	}
	return m, nil
}

// PCG stream constants (the second PCG seed word), so that the generators
// for initialisation, batches and validation batches never share a stream
// even with the same seed.
const (
	streamInit  = 0x696e6974 // "init"
	streamBatch = 0x62617463 // "batc"
	streamVal   = 0x76616c69 // "vali"
)

// newModel is the one constructor of Model: NewModel, Clone and the
// checkpoint reader all build through it, so that no Model lacks the
// named views its forward and backward passes index. It takes params as
// the slab (nil: a zero slab), which must have cfg's parameter count.
func newModel(cfg Config, params []float64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.numParams()
	switch {
	case params == nil:
		params = make([]float64, n)
	case len(params) != n:
		return nil, fmt.Errorf("%w: %d parameters given, the config has %d", ErrBadConfig, len(params), n)
	}
	params = params[:n:n]
	specs := cfg.layout()
	return &Model{cfg: cfg, slab: params, p: viewsOf(specs, params), specs: specs}, nil
}

// tensor is a named view into a model's parameter slab.
type tensor struct {
	name  string    // as in the checkpoint format: "qkv_weight"
	shape []int     // row-major; layered tensors lead with the layer: (L, C, 3C)
	data  []float64 // aliases the slab
}

// tensors lists the parameter tensors in slab order.
func (m *Model) tensors() []tensor {
	var ts []tensor
	off := 0
	for _, t := range m.specs {
		n := t.size()
		ts = append(ts, tensor{name: t.name, shape: t.shape, data: m.slab[off : off+n : off+n]})
		off += n
	}
	return ts
}

// Clone returns a deep copy of the model.
func (m *Model) Clone() *Model {
	c, err := newModel(m.cfg, slices.Clone(m.slab))
	if err != nil {
		panic("minigpt: Clone of an invalid model: " + err.Error()) // m was validated when it was made
	}
	return c
}

// checkTokens verifies that every id is a token of the model.
func (m *Model) checkTokens(ids []int, what string) error {
	for i, id := range ids {
		if id < 0 || id >= m.cfg.VocabSize {
			return fmt.Errorf("%s: token id %d at index %d (counting from 0) is outside the vocabulary [0, %d)", what, id, i, m.cfg.VocabSize)
		}
	}
	return nil
}

// isFinite reports whether every value is finite.
func isFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
