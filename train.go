package minigpt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// TrainConfig describes a training run. The zero values of the optional
// fields turn them off, so DefaultTrainConfig is exactly the seed's run.
type TrainConfig struct {
	Steps     int     // optimizer steps; the seed's run is 1200
	BatchSize int     // B: windows per batch
	LR        float64 // peak learning rate
	Seed      uint64  // seeds initialisation and batch sampling

	WarmupSteps int     // linear warmup from LR/WarmupSteps to LR; 0 = none
	CosineDecay bool    // after warmup, cosine decay from LR to MinLR at the last step
	MinLR       float64 // floor of the cosine decay
	GradClip    float64 // clip the global gradient norm to this; 0 = off
	WeightDecay float64 // AdamW decoupled decay on matrices and embeddings; 0 = off

	EvalEvery   int // evaluate validation loss every this many steps (and at the end); 0 = only at the end
	EvalBatches int // size of the fixed validation set, in batches
}

// DefaultTrainConfig returns the seed's run: 1200 steps of batch 32, Adam
// at lr 3e-3, seed 42, validation over 8 fixed batches at the end.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Steps: 1200, BatchSize: 32, LR: 3e-3, Seed: 42, EvalBatches: 8}
}

// Validate reports an unusable training config.
func (c TrainConfig) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("train config: "+f, a...) }
	switch {
	case c.Steps < 0:
		return bad("steps %d is negative", c.Steps)
	case c.BatchSize < 1 || c.BatchSize > 1<<16:
		return bad("batch size %d is outside [1, 65536]", c.BatchSize)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return bad("learning rate %v must be positive and finite", c.LR)
	case c.WarmupSteps < 0:
		return bad("warmup steps %d is negative", c.WarmupSteps)
	case !(c.MinLR >= 0) || c.MinLR > c.LR:
		return bad("minimum learning rate %v is outside [0, %v]", c.MinLR, c.LR)
	case !(c.GradClip >= 0) || math.IsInf(c.GradClip, 0):
		return bad("gradient clip %v must be non-negative and finite", c.GradClip)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return bad("weight decay %v must be non-negative and finite", c.WeightDecay)
	case c.EvalEvery < 0:
		return bad("eval interval %d is negative", c.EvalEvery)
	case c.EvalBatches < 1 || c.EvalBatches > 1<<12:
		return bad("eval batches %d is outside [1, 4096]", c.EvalBatches)
	}
	return nil
}

// ErrDiverged is returned when the loss or the gradient stops being finite;
// the step that found it changes no parameter.
var ErrDiverged = errors.New("training diverged")

// Trainer trains a model on a dataset. All of its state (model, optimizer,
// step, sampler) can be saved in a checkpoint and resumed exactly.
type Trainer struct {
	Model  *Model
	Opt    *Adam
	Data   *Dataset
	Config TrainConfig
	Step   int // steps completed

	batchSource *rand.PCG // draws the training windows
	batchRNG    *rand.Rand
	grads       []float64 // (like Params)
	xb, yb      []int     // (B, T) current batch
	valX, valY  []int     // (EvalBatches, B, T) the fixed validation windows

	trainLoss, valLoss []LossPoint // the loss history Run records, for checkpoints
	corpusSum          *[32]byte   // Data.SHA256(), once computed
}

// NewTrainer prepares to train m on d; the model's block size is the
// window length. The batch sampler is seeded from tc.Seed.
func NewTrainer(m *Model, d *Dataset, tc TrainConfig) (*Trainer, error) {
	if err := tc.Validate(); err != nil {
		return nil, err
	}
	T := m.Config.BlockSize
	if d.Vocab.Size() != m.Config.VocabSize {
		return nil, fmt.Errorf("dataset has %d characters but the model's vocabulary has %d", d.Vocab.Size(), m.Config.VocabSize)
	}
	if len(d.Train) < T+2 || len(d.Val) < T+2 {
		return nil, fmt.Errorf("%w: %d training and %d validation tokens; block size %d needs at least %d in each", ErrBadText, len(d.Train), len(d.Val), T, T+2)
	}
	if need := trainingBytes(m.Config, tc); need > MaxTrainingBytes {
		return nil, fmt.Errorf("training needs about %.1f GiB (parameters, gradients, Adam moments, activations of a batch of %d × %d, %d validation batches), above the limit of %d GiB",
			need/(1<<30), tc.BatchSize, T, tc.EvalBatches, MaxTrainingBytes>>30)
	}
	ac := DefaultAdamConfig()
	ac.WeightDecay = tc.WeightDecay
	opt, err := NewAdam(ac, m)
	if err != nil {
		return nil, err
	}
	B := tc.BatchSize
	t := &Trainer{
		Model: m, Opt: opt, Data: d, Config: tc,
		batchSource: rand.NewPCG(tc.Seed, streamBatch),
		grads:       make([]float64, len(m.Params)),
		xb:          make([]int, B*T), yb: make([]int, B*T),
		valX: make([]int, tc.EvalBatches*B*T), valY: make([]int, tc.EvalBatches*B*T),
	}
	t.batchRNG = rand.New(t.batchSource)
	valRNG := rand.New(rand.NewPCG(tc.Seed, streamVal))
	for i := 0; i < tc.EvalBatches; i++ {
		sampleBatch(t.valX[i*B*T:(i+1)*B*T], t.valY[i*B*T:(i+1)*B*T], d.Val, B, T, valRNG)
	}
	return t, nil
}

// MaxTrainingBytes bounds the memory NewTrainer will commit to, so that an
// oversized config or batch is an error rather than an out-of-memory crash.
const MaxTrainingBytes = 16 << 30

// trainingBytes estimates a trainer's memory: four parameter-sized slabs
// (parameters, gradients, two moments), one batch's activations and
// gradients, and the fixed validation windows.
func trainingBytes(c Config, tc TrainConfig) float64 {
	T := c.BlockSize
	return 8 * (4*float64(c.numParams()) + c.activationFloats(tc.BatchSize, T) + 2*float64(tc.EvalBatches)*float64(tc.BatchSize)*float64(T))
}

// sampleBatch fills x and y with B windows of T tokens from data and their
// one-step-shifted targets, starts drawn uniformly from
// [0, len(data)-T-1) as in the seed's get_batch.
func sampleBatch(x, y []int, data []int32, B, T int, rng *rand.Rand) {
	for b := 0; b < B; b++ {
		start := rng.IntN(len(data) - T - 1)
		for t := 0; t < T; t++ {
			x[b*T+t] = int(data[start+t])
			y[b*T+t] = int(data[start+t+1])
		}
	}
}

// LearningRate returns the learning rate used for step (counted from 0).
func (t *Trainer) LearningRate(step int) float64 {
	c := t.Config
	if step < c.WarmupSteps {
		return c.LR * float64(step+1) / float64(c.WarmupSteps)
	}
	if !c.CosineDecay || c.Steps <= c.WarmupSteps+1 {
		return c.LR
	}
	progress := float64(step-c.WarmupSteps) / float64(c.Steps-1-c.WarmupSteps)
	progress = min(progress, 1)
	// The conversion rounds π·progress before cosDet subtracts π/2 from
	// it: once inlined, the compiler would otherwise fuse the two on
	// arm64 (a review found the learning rates differing there).
	return c.MinLR + float64(float64(0.5*(c.LR-c.MinLR))*(1+cosDet(float64(math.Pi*progress))))
}

// TrainStep draws a batch, computes the loss and gradient, and updates the
// parameters. It returns the batch's loss.
func (t *Trainer) TrainStep() (float64, error) {
	m, B, T := t.Model, t.Config.BatchSize, t.Model.Config.BlockSize
	sampleBatch(t.xb, t.yb, t.Data.Train, B, T, t.batchRNG)
	a := m.batchActivations(B, T)
	m.forward(a, t.xb, 0, T, 0)
	loss := m.crossEntropy(a, t.yb)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("%w: loss %v in step %d", ErrDiverged, loss, t.Step+1) // counted from 1, as Progress.Step
	}
	clear(t.grads)
	m.backward(a, t.grads, t.xb)
	norm := math.Sqrt(sumSquares(t.grads))
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return loss, fmt.Errorf("%w: gradient norm %v in step %d", ErrDiverged, norm, t.Step+1)
	}
	if clip := t.Config.GradClip; clip > 0 && norm > clip {
		scale := clip / norm
		for i := range t.grads {
			t.grads[i] *= scale
		}
	}
	t.Opt.Update(m.Params, t.grads, t.LearningRate(t.Step))
	t.Step++
	return loss, nil
}

func sumSquares(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s = math.FMA(x, x, s)
	}
	return s
}

// Evaluate returns the mean loss over the fixed validation batches.
func (t *Trainer) Evaluate() float64 {
	m, B, T := t.Model, t.Config.BatchSize, t.Model.Config.BlockSize
	a := m.batchActivations(B, T)
	total := 0.0
	for i := 0; i < t.Config.EvalBatches; i++ {
		m.forward(a, t.valX[i*B*T:(i+1)*B*T], 0, T, 0)
		total += m.crossEntropy(a, t.valY[i*B*T:(i+1)*B*T])
	}
	return total / float64(t.Config.EvalBatches)
}

// Progress is what Run reports after each step.
type Progress struct {
	Step    int     // steps completed
	Steps   int     // steps in the run
	Loss    float64 // training loss of the step just taken
	ValLoss float64 // validation loss, or NaN when not evaluated at this step
	LR      float64 // learning rate the step used
	Elapsed time.Duration
}

// LossHistory returns the losses Run recorded, including those of the
// run a resumed trainer continues (when its checkpoint kept them): the
// training loss of every step and the validation loss of every
// evaluation.
func (t *Trainer) LossHistory() (train, val []LossPoint) {
	return slices.Clone(t.trainLoss), slices.Clone(t.valLoss)
}

// Run trains until Step reaches Config.Steps, calling progress (if not
// nil) after every step. Cancelling ctx stops it between steps, returning
// ctx's error with the model and optimizer consistent, ready to save.
func (t *Trainer) Run(ctx context.Context, progress func(Progress)) error {
	start := time.Now()
	// Room for the whole history now, so that recording it allocates
	// nothing per step.
	if left := t.Config.Steps - t.Step; left > 0 {
		t.trainLoss = slices.Grow(t.trainLoss, left)
		evals := 1
		if t.Config.EvalEvery > 0 {
			evals += left / t.Config.EvalEvery
		}
		t.valLoss = slices.Grow(t.valLoss, evals)
	}
	for t.Step < t.Config.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		lr := t.LearningRate(t.Step)
		loss, err := t.TrainStep()
		if err != nil {
			return err
		}
		p := Progress{Step: t.Step, Steps: t.Config.Steps, Loss: loss, ValLoss: math.NaN(), LR: lr}
		t.trainLoss = append(t.trainLoss, LossPoint{t.Step, loss})
		if (t.Config.EvalEvery > 0 && t.Step%t.Config.EvalEvery == 0) || t.Step == t.Config.Steps {
			p.ValLoss = t.Evaluate()
			t.valLoss = append(t.valLoss, LossPoint{t.Step, p.ValLoss})
		}
		if progress != nil {
			p.Elapsed = time.Since(start)
			progress(p)
		}
	}
	return nil
}

// cosDet returns cos(x) for x in [0, π] with platform-independent
// rounding: cos(x) = -sin(x - π/2), by its Taylor series, every product
// rounded explicitly.
func cosDet(x float64) float64 {
	y := float64(x) - math.Pi/2 // callers pass products: keep them rounded
	y2 := float64(y * y)
	term, sum := y, y
	for n := 1; n <= 12; n++ {
		term = float64(float64(-term*y2) / float64((2*n)*(2*n+1)))
		sum += term
	}
	return -sum
}
