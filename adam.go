package minigpt

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/par"
)

// AdamConfig holds the optimizer's constants.
type AdamConfig struct {
	Beta1, Beta2 float64 // moment decay rates, in [0, 1)
	Eps          float64 // added to the root of the second moment
	// WeightDecay is AdamW's decoupled decay, applied to matrices and
	// embeddings only (never to gains or biases); 0 gives the lessons' Adam.
	WeightDecay float64
}

// DefaultAdamConfig returns the lessons' constants: β1 0.9, β2 0.999,
// ε 1e-8, no weight decay.
func DefaultAdamConfig() AdamConfig {
	return AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// ErrBadAdamConfig is returned (wrapped) by AdamConfig.Validate, and so by
// NewAdam, for constants the update cannot use.
var ErrBadAdamConfig = errors.New("invalid adam config")

// Validate reports the first thing wrong with c (an error wrapping
// ErrBadAdamConfig that names the field), or nil.
func (c AdamConfig) Validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: "+f, append([]any{ErrBadAdamConfig}, a...)...)
	}
	switch {
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return bad("beta1 %v is outside [0, 1)", c.Beta1)
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return bad("beta2 %v is outside [0, 1)", c.Beta2)
	case !(c.Eps > 0) || math.IsInf(c.Eps, 0):
		return bad("eps %v must be positive and finite", c.Eps)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return bad("weight decay %v must be non-negative and finite", c.WeightDecay)
	}
	return nil
}

// Adam is the optimizer of the lessons (with optional AdamW decay). Its
// state is two slabs laid out like the model's parameters and a step
// count, all of which a full checkpoint saves; they change only through
// Update, and are read through Config, Step and Moments.
type Adam struct {
	config AdamConfig
	m      []float64 // first moments
	v      []float64 // second moments
	step   int       // updates applied so far (t)
	decays []bool    // per tensor of the layout: weight decay applies
	sizes  []int     // per tensor: element count
	job    adamJob   // Update's, kept so that an update allocates nothing
}

// NewAdam returns an optimizer with zero state for model m.
func NewAdam(cfg AdamConfig, m *Model) (*Adam, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new adam: %w", err)
	}
	P := len(m.slab)
	return restoreAdam(cfg, m.cfg, make([]float64, P), make([]float64, P), 0), nil
}

// restoreAdam is an optimizer for a model of config c with the given
// state (a checkpoint's), which it keeps.
func restoreAdam(cfg AdamConfig, c Config, m, v []float64, step int) *Adam {
	o := &Adam{config: cfg, m: m, v: v, step: step}
	for _, t := range c.layout() {
		o.decays = append(o.decays, t.decays)
		o.sizes = append(o.sizes, t.size())
	}
	return o
}

// Config returns the optimizer's constants.
func (o *Adam) Config() AdamConfig { return o.config }

// Step returns the number of updates applied so far (Adam's t).
func (o *Adam) Step() int { return o.step }

// Moments returns copies of the first and second moments, laid out like
// the model's parameters.
func (o *Adam) Moments() (m, v []float64) {
	return slices.Clone(o.m), slices.Clone(o.v)
}

// clone returns an independent copy of the optimizer.
func (o *Adam) clone() *Adam {
	c := *o
	c.m, c.v, c.job = slices.Clone(o.m), slices.Clone(o.v), adamJob{}
	return &c
}

// Update applies one step with learning rate lr, exactly the lessons':
//
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	p -= lr · (m/(1-β1^t)) / (sqrt(v/(1-β2^t)) + ε)
//
// preceded, for decayed tensors when WeightDecay > 0, by p -= lr·wd·p.
// Every element is independent, so the slab is spread over the workers.
//
// params and grads must both have the length of the model's parameter
// slab; otherwise Update changes nothing and returns an error.
func (o *Adam) Update(params, grads []float64, lr float64) error {
	if len(params) != len(o.m) || len(grads) != len(o.m) {
		return fmt.Errorf("adam update: %d parameters and %d gradients, the optimizer was made for %d", len(params), len(grads), len(o.m))
	}
	o.step++
	o.job = adamJob{
		o: o, params: params, grads: grads[:len(params)], lr: lr,
		c1:     1 - kernels.PowInt(o.config.Beta1, o.step),
		c2:     1 - kernels.PowInt(o.config.Beta2, o.step),
		shrink: 1 - float64(lr*o.config.WeightDecay),
	}
	par.For(&o.job, len(params), 512, 16)
	return nil
}

// adamJob updates the parameters with indices in a range.
type adamJob struct {
	o                  *Adam
	params, grads      []float64
	lr, c1, c2, shrink float64
}

func (j *adamJob) Run(lo, hi int) {
	o := j.o
	k := kernels.AdamCoefficients{Beta1: o.config.Beta1, Beta2: o.config.Beta2, C1: j.c1, C2: j.c2, LR: j.lr, Eps: o.config.Eps}
	off := 0
	for ti, n := range o.sizes {
		from, to := max(off, lo), min(off+n, hi)
		off += n
		if from < to {
			k.Shrink = 1 // leaves p as it is
			if o.config.WeightDecay > 0 && o.decays[ti] {
				k.Shrink = j.shrink
			}
			kernels.Adam(j.params[from:to], j.grads[from:to], o.m[from:to], o.v[from:to], k)
		}
	}
}
