package minigpt

// This file holds the optimizer: the lessons' Adam, with AdamW's optional
// decoupled weight decay, as the Trainer runs it.

import (
	"fmt"
	"math"

	"example.org/minigpt/internal/kernels"
	"example.org/minigpt/internal/par"
)

// adamConfig holds the optimizer's constants.
type adamConfig struct {
	beta1, beta2 float64 // moment decay rates, in [0, 1)
	eps          float64 // added to the root of the second moment
	// weightDecay is AdamW's decoupled decay, applied to matrices and
	// embeddings only (never to gains or biases); 0 gives the lessons' Adam.
	weightDecay float64
}

// lessonsAdam returns the lessons' constants, β1 0.9, β2 0.999, ε 1e-8,
// with the given weight decay (TrainConfig.WeightDecay).
func lessonsAdam(weightDecay float64) adamConfig {
	return adamConfig{beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: weightDecay}
}

// validate reports the first constant the update cannot use, naming it.
func (c adamConfig) validate() error {
	switch {
	case !(c.beta1 >= 0 && c.beta1 < 1):
		return fmt.Errorf("beta1 %v is outside [0, 1)", c.beta1)
	case !(c.beta2 >= 0 && c.beta2 < 1):
		return fmt.Errorf("beta2 %v is outside [0, 1)", c.beta2)
	case !(c.eps > 0) || math.IsInf(c.eps, 0):
		return fmt.Errorf("eps %v must be positive and finite", c.eps)
	case !(c.weightDecay >= 0) || math.IsInf(c.weightDecay, 0):
		return fmt.Errorf("weight decay %v must be non-negative and finite", c.weightDecay)
	}
	return nil
}

// adam is the optimizer's state: two slabs laid out like the model's
// parameters and a step count, all of which a full checkpoint saves.
type adam struct {
	config adamConfig
	m      []float64 // first moments
	v      []float64 // second moments
	step   int       // updates applied so far (t)
	decays []bool    // per tensor of the layout: weight decay applies
	sizes  []int     // per tensor: element count
	job    adamJob   // update's, kept so that an update allocates nothing
}

// newAdam returns an optimizer with zero state for model m.
func newAdam(cfg adamConfig, m *Model) *adam {
	P := len(m.slab)
	return restoreAdam(cfg, m.cfg, make([]float64, P), make([]float64, P), 0)
}

// restoreAdam is an optimizer for a model of config c with the given
// state (a checkpoint's), which it keeps.
func restoreAdam(cfg adamConfig, c Config, m, v []float64, step int) *adam {
	o := &adam{config: cfg, m: m, v: v, step: step}
	for _, t := range c.layout() {
		o.decays = append(o.decays, t.decays)
		o.sizes = append(o.sizes, t.size())
	}
	return o
}

// update applies one step with learning rate lr, exactly the lessons':
//
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	p -= lr · (m/(1-β1^t)) / (sqrt(v/(1-β2^t)) + ε)
//
// preceded, for decayed tensors when weightDecay > 0, by p -= lr·wd·p.
// Every element is independent, so the slab is spread over the workers.
// params and grads have the length of the model's parameter slab.
func (o *adam) update(params, grads []float64, lr float64) {
	o.step++
	o.job = adamJob{
		o: o, params: params[:len(o.m)], grads: grads[:len(o.m)], lr: lr,
		c1:     1 - kernels.PowInt(o.config.beta1, o.step),
		c2:     1 - kernels.PowInt(o.config.beta2, o.step),
		shrink: 1 - float64(lr*o.config.weightDecay),
	}
	par.For(&o.job, len(o.m), 512, 16)
}

// adamJob updates the parameters with indices in a range.
type adamJob struct {
	o                  *adam
	params, grads      []float64
	lr, c1, c2, shrink float64
}

func (j *adamJob) Run(lo, hi int) {
	o := j.o
	k := kernels.AdamCoefficients{Beta1: o.config.beta1, Beta2: o.config.beta2, C1: j.c1, C2: j.c2, LR: j.lr, Eps: o.config.eps}
	off := 0
	for ti, n := range o.sizes {
		from, to := max(off, lo), min(off+n, hi)
		off += n
		if from < to {
			k.Shrink = 1 // leaves p as it is
			if o.config.weightDecay > 0 && o.decays[ti] {
				k.Shrink = j.shrink
			}
			kernels.Adam(j.params[from:to], j.grads[from:to], o.m[from:to], o.v[from:to], k)
		}
	}
}
