package minigpt

import (
	"math"
	"testing"
)

func TestTrainerAdamIsTheLessons(t *testing.T) {
	// The lessons' Adam: β1 0.9, β2 0.999, ε 1e-8, no decay unless the
	// training config asks.
	if got, want := lessonsAdam(0), (adamConfig{beta1: 0.9, beta2: 0.999, eps: 1e-8}); got != want {
		t.Fatalf("lessonsAdam(0) = %+v, want %+v", got, want)
	}
	m, _ := NewModel(tinyConfig(false), 1)
	d, err := NewDataset(LanternBay, nil, tinyConfig(false).BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.WeightDecay = 0.25
	m2, _ := NewModel(ConfigFor(d.Vocab), 1)
	tr, err := NewTrainer(m2, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got, want := tr.opt.config, lessonsAdam(0.25); got != want {
		t.Errorf("the Trainer's Adam is %+v, want %+v", got, want)
	}
	_ = m
}

// Two Adam steps against numbers computed by hand (Python's decimal
// module at 50 digits, from the update as the lessons write it:
// m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g², p -= lr·m̂/(sqrt(v̂)+ε) with
// m̂ = m/(1-β1^t), v̂ = v/(1-β2^t)). Step 1 checks the bias correction
// (without it the step is ten times smaller) and where ε sits (a gradient
// of 1e-8 gives m̂/(sqrt(v̂)+ε) = 1/2; ε under the root would give about
// 1e-4). At step 1 the betas cancel out, so step 2 checks them: β2 0.99
// instead of 0.999 moves every value.
func TestAdamStepsMatchHandComputation(t *testing.T) {
	m, err := NewModel(tinyConfig(false), 1)
	if err != nil {
		t.Fatal(err)
	}
	// ln1_gain is not decayed; the first four token-embedding values are.
	params := make([]float64, len(m.Params()))
	copy(params, []float64{1.0, -0.5, 0.25, 2.0})
	grads := make([]float64, len(m.Params()))
	o := newAdam(lessonsAdam(0), m)
	steps := []struct {
		g, want []float64
	}{
		{[]float64{0.1, -0.2, 1e-8, 0}, []float64{0.99000000099999990, -0.49000000049999998, 0.245, 2.0}},
		{[]float64{0.3, 0.1, 1e-8, 0.05}, []float64{0.98082219022055893, -0.48733663027186756, 0.240, 1.9925586338685401}},
	}
	for i, s := range steps {
		copy(grads, s.g)
		o.update(params, grads, 0.01)
		for j, want := range s.want {
			if d := math.Abs(params[j] - want); d > 4e-16*math.Abs(want) {
				t.Errorf("step %d: parameter %d = %.17g, hand computation %.17g", i+1, j, params[j], want)
			}
		}
		for j := len(s.g); j < len(params); j++ {
			if params[j] != 0 {
				t.Fatalf("step %d: parameter %d with zero gradient moved to %v", i+1, j, params[j])
			}
		}
	}
	if o.step != 2 {
		t.Errorf("Step = %d after two updates", o.step)
	}
}

// AdamW's decay multiplies decayed tensors by (1 - lr·wd) before the Adam
// step and leaves gains and biases alone.
func TestAdamWeightDecayOnlyOnMatrices(t *testing.T) {
	cfg := tinyConfig(false)
	m, _ := NewModel(cfg, 1)
	o := newAdam(lessonsAdam(0.1), m)
	params := make([]float64, len(m.Params()))
	for i := range params {
		params[i] = 2
	}
	o.update(params, make([]float64, len(params)), 0.5)
	off := 0
	for _, ts := range cfg.layout() {
		want := 2.0
		if ts.decays {
			want = 2 * (1 - 0.5*0.1)
		}
		for i := off; i < off+ts.size(); i++ {
			if params[i] != want {
				t.Fatalf("%s: %v after a zero-gradient step with decay, want %v", ts.name, params[i], want)
			}
		}
		off += ts.size()
	}
}

func TestAdamConfigValidate(t *testing.T) {
	for _, c := range []adamConfig{
		{beta1: 1, beta2: 0.999, eps: 1e-8},
		{beta1: 0.9, beta2: -0.1, eps: 1e-8},
		{beta1: 0.9, beta2: 0.999, eps: 0},
		{beta1: 0.9, beta2: 0.999, eps: math.Inf(1)},
		{beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: math.NaN()},
	} {
		if err := c.validate(); err == nil {
			t.Errorf("%+v: validate = nil, want an error", c)
		}
	}
	if err := lessonsAdam(0.1).validate(); err != nil {
		t.Errorf("the lessons' constants: %v", err)
	}
}
