package minigpt

import (
	"errors"
	"math"
	"testing"
)

func TestDefaultAdamConfigIsTheSeeds(t *testing.T) {
	// The lessons' Adam: β1 0.9, β2 0.999, ε 1e-8, no decay.
	if got, want := DefaultAdamConfig(), (AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}); got != want {
		t.Fatalf("DefaultAdamConfig() = %+v, want %+v", got, want)
	}
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
	o, err := NewAdam(DefaultAdamConfig(), m)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		g, want []float64
	}{
		{[]float64{0.1, -0.2, 1e-8, 0}, []float64{0.99000000099999990, -0.49000000049999998, 0.245, 2.0}},
		{[]float64{0.3, 0.1, 1e-8, 0.05}, []float64{0.98082219022055893, -0.48733663027186756, 0.240, 1.9925586338685401}},
	}
	for i, s := range steps {
		copy(grads, s.g)
		if err := o.Update(params, grads, 0.01); err != nil {
			t.Fatal(err)
		}
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
	ac := DefaultAdamConfig()
	ac.WeightDecay = 0.1
	o, err := NewAdam(ac, m)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float64, len(m.Params()))
	for i := range params {
		params[i] = 2
	}
	if err := o.Update(params, make([]float64, len(params)), 0.5); err != nil {
		t.Fatal(err)
	}
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

func TestAdamUpdateChecksLengths(t *testing.T) {
	m, _ := NewModel(tinyConfig(false), 1)
	o, _ := NewAdam(DefaultAdamConfig(), m)
	P := len(m.Params())
	for _, tc := range []struct{ np, ng int }{{P - 1, P}, {P, P - 1}, {P, P + 1}, {P + 1, P + 1}, {0, 0}} {
		params, grads := make([]float64, tc.np), make([]float64, tc.ng)
		if err := o.Update(params, grads, 0.1); err == nil {
			t.Errorf("Update with %d parameters and %d gradients for %d: no error", tc.np, tc.ng, P)
		}
	}
	if o.step != 0 {
		t.Errorf("refused updates advanced the step to %d", o.step)
	}
}

func TestAdamConfigValidate(t *testing.T) {
	for _, c := range []AdamConfig{
		{Beta1: 1, Beta2: 0.999, Eps: 1e-8},
		{Beta1: 0.9, Beta2: -0.1, Eps: 1e-8},
		{Beta1: 0.9, Beta2: 0.999, Eps: 0},
		{Beta1: 0.9, Beta2: 0.999, Eps: math.Inf(1)},
		{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: math.NaN()},
	} {
		err := c.Validate()
		if !errors.Is(err, ErrBadAdamConfig) {
			t.Errorf("%+v: Validate = %v, want ErrBadAdamConfig", c, err)
		}
		if _, err := NewAdam(c, nil); !errors.Is(err, ErrBadAdamConfig) {
			t.Errorf("%+v: NewAdam = %v, want ErrBadAdamConfig", c, err)
		}
	}
}
