package minigpt

// This file holds TrainConfig and Trainer: a run's steps (batches, the
// learning-rate schedule, the update), its evaluation and loss history,
// and the state a checkpoint keeps.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// TrainConfig describes a training run. The zero values of the optional
// fields turn them off, so DefaultTrainConfig is exactly the lessons' run.
type TrainConfig struct {
	Steps     int     // optimizer steps; the lessons' run is 1200
	BatchSize int     // B: windows per batch
	LR        float64 // peak learning rate
	// Seed seeds the batch sampler and the fixed validation batches. It
	// does not seed initialisation: that is NewModel's seed (cmd/train
	// passes the same -seed to both).
	Seed uint64

	WarmupSteps int     // linear warmup from LR/WarmupSteps to LR; 0 = none
	CosineDecay bool    // after warmup, cosine decay from LR to MinLR at the last step
	MinLR       float64 // floor of the cosine decay
	GradClip    float64 // clip the global gradient norm to this; 0 = off
	WeightDecay float64 // AdamW decoupled decay on matrices and embeddings; 0 = off

	EvalEvery   int // evaluate validation loss every this many steps (and at the end); 0 = only at the end
	EvalBatches int // size of the fixed validation set, in batches
}

// DefaultTrainConfig returns the lessons' run: 1200 steps of batch 32, Adam
// at lr 3e-3, seed 42, validation over 8 fixed batches at the end.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Steps: 1200, BatchSize: 32, LR: 3e-3, Seed: 42, EvalBatches: 8}
}

// Validate reports the first thing wrong with c (an error wrapping
// ErrBadConfig that names the field), or nil.
func (c TrainConfig) Validate() error {
	invalid := func(f string, a ...any) error {
		return fmt.Errorf("%w: training: "+f, append([]any{ErrBadConfig}, a...)...)
	}
	switch {
	case c.Steps < 0:
		return invalid("steps %d is negative", c.Steps)
	case c.Steps > maxTrainSteps:
		return invalid("steps %d is more than %d (2^30)", c.Steps, maxTrainSteps)
	case c.BatchSize < 1 || c.BatchSize > 1<<16:
		return invalid("batch size %d is outside [1, 65536]", c.BatchSize)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return invalid("learning rate %v must be positive and finite", c.LR)
	case c.WarmupSteps < 0:
		return invalid("warmup steps %d is negative", c.WarmupSteps)
	case c.WarmupSteps > maxTrainSteps:
		return invalid("warmup steps %d is more than %d (2^30)", c.WarmupSteps, maxTrainSteps)
	case !(c.MinLR >= 0) || c.MinLR > c.LR:
		return invalid("minimum learning rate %v is outside [0, %v]", c.MinLR, c.LR)
	case !(c.GradClip >= 0) || math.IsInf(c.GradClip, 0):
		return invalid("gradient clip %v must be non-negative and finite", c.GradClip)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return invalid("weight decay %v must be non-negative and finite", c.WeightDecay)
	case c.EvalEvery < 0:
		return invalid("eval interval %d is negative", c.EvalEvery)
	case c.EvalEvery > maxTrainSteps:
		return invalid("eval interval %d is more than %d (2^30)", c.EvalEvery, maxTrainSteps)
	case c.EvalBatches < 1 || c.EvalBatches > 1<<12:
		return invalid("eval batches %d is outside [1, 4096]", c.EvalBatches)
	}
	return nil
}

// maxTrainSteps bounds the step counts a config may name (as the
// commands' -steps): about a million times the lessons' run,
// and far from the overflow of any sum of them.
const maxTrainSteps = 1 << 30

var (
	// ErrDatasetMismatch is returned (wrapped) for a dataset that does not
	// fit: by NewTrainer, a vocabulary of another size than the model's; by
	// ResumeTrainer, another vocabulary or text than the checkpoint's.
	ErrDatasetMismatch = errors.New("dataset does not fit")
	// ErrModelInUse is returned (wrapped) by NewTrainer for a model another
	// Trainer holds, by a Trainer's methods after Close, and by Run while
	// another Run of the same Trainer is going on.
	ErrModelInUse = errors.New("model in use")
)

// Trainer trains a model on a dataset: it owns the optimizer (the
// lessons' Adam), the step count, the batch sampler and the fixed
// validation batches, all of which a full checkpoint saves and
// ResumeTrainer restores exactly.
//
// A Trainer holds its model from NewTrainer until Close: a second Trainer
// on the same model is refused, and each step waits for the calls reading
// the model (generation, Logits, Score) to finish, and they for a step;
// so they may run from other goroutines and from Run's progress callback
// without changing a bit of the training.
type Trainer struct {
	model  *Model
	opt    *adam
	data   *Dataset
	config TrainConfig
	step   int // steps completed

	batchSource *rand.PCG // draws the training windows
	batchRNG    *rand.Rand
	grads       []float64 // (like Params)
	clip        clipper   // clipGradients' scratch
	xb, yb      []int     // (B, T) current batch
	valX, valY  []int     // (EvalBatches, B, T) the fixed validation windows

	trainLoss, valLoss []LossPoint // the loss history Run records (see addPoint), for checkpoints
	corpusSum          *[32]byte   // data.SHA256(), once computed

	acts    *activations // the batch's activations, made by the first step
	closed  atomic.Bool  // Close was called
	running atomic.Bool  // a Run is going on
}

// NewTrainer prepares to train m on d with a fresh optimizer, from step 0,
// windows of the model's block size, the batch sampler and validation
// batches seeded from tc.Seed. m may be new (NewModel) or loaded (to
// fine-tune: d encoded with its checkpoint's vocabulary). Errors wrap
// ErrBadConfig (also for a run that would need more than 16 GiB),
// ErrDatasetMismatch, ErrBadText (a dataset too short for the block) or
// ErrModelInUse (another Trainer holds m: to train one model two ways,
// train a Clone).
func NewTrainer(m *Model, d *Dataset, tc TrainConfig) (*Trainer, error) {
	if m == nil || d == nil {
		return nil, fmt.Errorf("new trainer: %w: no model or no dataset (nil)", ErrBadConfig)
	}
	if err := tc.Validate(); err != nil {
		return nil, fmt.Errorf("new trainer: %w", err)
	}
	T := m.cfg.BlockSize
	if d.Vocab.Size() != m.cfg.VocabSize {
		return nil, fmt.Errorf("new trainer: %w: the dataset's vocabulary has %d characters, the model's %d (build the model with ConfigFor(dataset.Vocab), or the dataset with NewDataset and the checkpoint's vocabulary)",
			ErrDatasetMismatch, d.Vocab.Size(), m.cfg.VocabSize)
	}
	if len(d.Train) < T+2 || len(d.Val) < T+2 {
		return nil, fmt.Errorf("new trainer: %w: %d training and %d validation tokens; block size %d needs at least %d in each", ErrBadText, len(d.Train), len(d.Val), T, T+2)
	}
	if need := trainingBytes(m.cfg, tc); need > maxTrainingBytes {
		return nil, fmt.Errorf("new trainer: %w: training needs about %.1f GiB (parameters, gradients, Adam moments, activations of a batch of %d × %d, %d validation batches), above the limit of %d GiB",
			ErrBadConfig, need/(1<<30), tc.BatchSize, T, tc.EvalBatches, maxTrainingBytes>>30)
	}
	B := tc.BatchSize
	t := &Trainer{
		model: m, opt: newAdam(lessonsAdam(tc.WeightDecay), m), data: d, config: tc,
		batchSource: rand.NewPCG(tc.Seed, streamBatch),
		grads:       make([]float64, len(m.slab)),
		clip:        newClipper(len(m.slab)),
		xb:          make([]int, B*T), yb: make([]int, B*T),
		valX: make([]int, tc.EvalBatches*B*T), valY: make([]int, tc.EvalBatches*B*T),
	}
	t.batchRNG = rand.New(t.batchSource)
	valRNG := rand.New(rand.NewPCG(tc.Seed, streamVal))
	for i := 0; i < tc.EvalBatches; i++ {
		sampleBatch(t.valX[i*B*T:(i+1)*B*T], t.valY[i*B*T:(i+1)*B*T], d.Val, B, T, valRNG)
	}
	if !m.trained.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("new trainer: %w: another Trainer holds this model (Close it first, or train a copy made with Model.Clone)", ErrModelInUse)
	}
	return t, nil
}

// Close ends the Trainer's hold on its model, so that another Trainer may
// train it; the Trainer's steps then return an error. Its checkpoints and
// loss history stay readable. Close is idempotent.
func (t *Trainer) Close() {
	if t.closed.CompareAndSwap(false, true) {
		t.model.trained.Store(false)
	}
}

// errClosed is what a closed Trainer's steps return.
var errClosed = fmt.Errorf("%w: the Trainer is closed", ErrModelInUse)

// activations returns the trainer's batch buffers, made on first use.
func (t *Trainer) activations() *activations {
	if t.acts == nil {
		t.acts = newTrainingActivations(t.model.cfg, t.config.BatchSize, t.model.cfg.BlockSize)
	}
	return t.acts
}

// Model returns the model being trained (the one passed to NewTrainer, or
// ResumeTrainer's copy). Its parameters change with every step.
func (t *Trainer) Model() *Model { return t.model }

// Config returns a copy of the training config.
func (t *Trainer) Config() TrainConfig { return t.config }

// Step returns the number of steps completed.
func (t *Trainer) Step() int { return t.step }

// maxTrainingBytes bounds the memory NewTrainer will commit to, so that an
// oversized config or batch is an error rather than an out-of-memory crash.
const maxTrainingBytes = 16 << 30

// trainingBytes estimates a trainer's memory: four parameter-sized slabs
// (parameters, gradients, two moments), the transposed weights the input
// gradients read (12·C² per layer), one batch's activations and
// gradients, and the fixed validation windows.
func trainingBytes(c Config, tc TrainConfig) float64 {
	T, C := c.BlockSize, float64(c.EmbedDim)
	weightsT := 12 * C * C * float64(c.Layers)
	return 8 * (4*float64(c.numParams()) + weightsT + c.activationFloats(tc.BatchSize, T) + 2*float64(tc.EvalBatches)*float64(tc.BatchSize)*float64(T))
}

// sampleBatch fills x and y with B windows of T tokens from data and their
// one-step-shifted targets, starts drawn uniformly from
// [0, len(data)-T-1) as in the lessons' get_batch.
func sampleBatch(x, y []int, data []int32, B, T int, rng *rand.Rand) {
	for b := 0; b < B; b++ {
		start := rng.IntN(len(data) - T - 1)
		for t := 0; t < T; t++ {
			x[b*T+t] = int(data[start+t])
			y[b*T+t] = int(data[start+t+1])
		}
	}
}

// learningRate returns the learning rate of step (counted from 0): a
// linear warmup from LR/WarmupSteps to LR over the first WarmupSteps
// steps, then LR, or with CosineDecay a half cosine from LR down to MinLR
// at the last step (Steps-1), and MinLR after it.
func (c TrainConfig) learningRate(step int) float64 {
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
	// arm64.
	return c.MinLR + float64(float64(0.5*(c.LR-c.MinLR))*(1+cosDet(float64(math.Pi*progress))))
}

// trainStep draws a batch, computes the loss and gradient, and updates the
// parameters. It returns the batch's loss. A loss or gradient that is not
// finite is an error wrapping ErrNonFinite, and the step then changes no
// parameter.
func (t *Trainer) trainStep() (float64, error) {
	if t.closed.Load() {
		return 0, fmt.Errorf("train step: %w", errClosed)
	}
	m, B, T := t.model, t.config.BatchSize, t.model.cfg.BlockSize
	m.use.Lock()
	defer m.use.Unlock()
	sampleBatch(t.xb, t.yb, t.data.Train, B, T, t.batchRNG)
	a := t.activations()
	m.forwardBatch(a, t.xb, t.yb, true)
	loss := a.meanLoss()
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train step: %w: training diverged: loss %v in step %d", ErrNonFinite, loss, t.step+1) // counted from 1, as Progress.Step
	}
	m.backward(a, t.grads)
	if norm, _ := clipGradients(t.grads, t.config.GradClip, &t.clip); math.IsNaN(norm) || math.IsInf(norm, 0) {
		return loss, fmt.Errorf("train step: %w: training diverged: gradient norm %v in step %d", ErrNonFinite, norm, t.step+1)
	}
	t.opt.update(m.slab, t.grads, t.config.learningRate(t.step))
	t.step++
	return loss, nil
}

// Evaluate returns the mean loss over the fixed validation batches.
func (t *Trainer) Evaluate() float64 {
	m, B, T := t.model, t.config.BatchSize, t.model.cfg.BlockSize
	m.use.RLock()
	defer m.use.RUnlock()
	a := t.activations()
	total := 0.0
	for i := 0; i < t.config.EvalBatches; i++ {
		m.forwardBatch(a, t.valX[i*B*T:(i+1)*B*T], t.valY[i*B*T:(i+1)*B*T], false)
		total += a.meanLoss()
	}
	return total / float64(t.config.EvalBatches)
}

// Progress is what Run reports after each step.
type Progress struct {
	Step    int     // steps completed, of Config().Steps
	Loss    float64 // training loss of the step just taken
	ValLoss float64 // validation loss, or NaN when not evaluated at this step
	LR      float64 // learning rate the step used
}

// LossPoint is one point of a loss curve: the loss after Step steps.
type LossPoint struct {
	Step int     // the step that measured it, counted from 1 (as Progress.Step)
	Loss float64 // that step's batch loss, or the validation loss after it
}

// LossHistory returns the losses Run recorded, a resumed run's included:
// up to 8192 points a curve, which drops every second point as it fills
// (a long run's shape, in constant memory).
func (t *Trainer) LossHistory() (train, val []LossPoint) {
	return slices.Clone(t.trainLoss), slices.Clone(t.valLoss)
}

// maxLossPoints bounds each loss curve a Trainer keeps (LossHistory).
const maxLossPoints = 1 << 13

// addPoint appends p to curve, thinning it first when it is full. The
// result depends only on the curve and p, so a run resumed from a
// checkpoint (which saves the curve) records what the uninterrupted run
// would have.
func addPoint(curve []LossPoint, p LossPoint) []LossPoint {
	for len(curve) >= maxLossPoints {
		n := 0
		for i := 0; i < len(curve); i += 2 {
			curve[n] = curve[i]
			n++
		}
		curve = curve[:n]
	}
	return append(curve, p)
}

// Run trains until Step reaches Config().Steps, calling progress (if not
// nil) after every step. Cancelling ctx stops it between steps, returning
// ctx's error with the model and optimizer consistent, ready to save.
//
// A second Run while one is going on returns an error wrapping
// ErrModelInUse. Call the Trainer's other methods from progress, or after
// Run returns.
func (t *Trainer) Run(ctx context.Context, progress func(Progress)) error {
	if ctx == nil {
		return fmt.Errorf("run: %w: nil context (use context.Background())", ErrBadConfig)
	}
	if !t.running.CompareAndSwap(false, true) {
		return fmt.Errorf("run: %w: another Run of this Trainer is going on", ErrModelInUse)
	}
	defer t.running.Store(false)
	c := &t.config
	// Room for the curves now (they never outgrow maxLossPoints), so that
	// recording them allocates nothing per step.
	if left := c.Steps - t.step; left > 0 {
		t.trainLoss = slices.Grow(t.trainLoss, max(0, min(left, maxLossPoints-len(t.trainLoss))))
		evals := 1
		if c.EvalEvery > 0 {
			evals += left / c.EvalEvery
		}
		t.valLoss = slices.Grow(t.valLoss, max(0, min(evals, maxLossPoints-len(t.valLoss))))
	}
	for t.step < c.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		lr := c.learningRate(t.step)
		loss, err := t.trainStep()
		if err != nil {
			return err
		}
		p := Progress{Step: t.step, Loss: loss, ValLoss: math.NaN(), LR: lr}
		t.trainLoss = addPoint(t.trainLoss, LossPoint{t.step, loss})
		if (c.EvalEvery > 0 && t.step%c.EvalEvery == 0) || t.step == c.Steps {
			p.ValLoss = t.Evaluate()
			t.valLoss = addPoint(t.valLoss, LossPoint{t.step, p.ValLoss})
		}
		if progress != nil {
			progress(p)
		}
	}
	return nil
}

// cosDet returns cos(x) for x in [0, π] with platform-independent
// rounding: cos(x) = -sin(x - π/2), by the Taylor series of sin around 0
// (|x - π/2| <= π/2, so 13 terms reach full precision), every product
// rounded explicitly. It lives here, next to its one caller (the cosine
// schedule), not in internal/kernels with Exp and Log.
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

// trainState is what a full checkpoint keeps of a Trainer beyond its
// model, its step and its config: the one value through which checkpoints
// read and write a trainer, so that neither reaches into the other.
type trainState struct {
	adam      adamConfig // the optimizer's constants
	m, v      []float64  // its moments, laid out like the parameters
	adamStep  int        // its step count (the trainer's step)
	sampler   []byte     // the batch sampler's PCG state (MarshalBinary)
	trainLoss []LossPoint
	valLoss   []LossPoint
}

// state returns a copy of t's state.
func (t *Trainer) state() *trainState {
	sampler, err := t.batchSource.MarshalBinary()
	if err != nil {
		panic("minigpt: PCG.MarshalBinary failed: " + err.Error()) // it never does
	}
	return &trainState{
		adam: t.opt.config, m: slices.Clone(t.opt.m), v: slices.Clone(t.opt.v), adamStep: t.opt.step,
		sampler: sampler,
		// Present even when empty: the file then records "no points yet".
		trainLoss: append([]LossPoint{}, t.trainLoss...),
		valLoss:   append([]LossPoint{}, t.valLoss...),
	}
}

// restore makes t continue from s (copied), at step.
func (t *Trainer) restore(s *trainState, step int) error {
	// t.batchRNG draws from t.batchSource, so restoring the source in
	// place restores the sampler.
	if err := t.batchSource.UnmarshalBinary(s.sampler); err != nil {
		return fmt.Errorf("sampler state: %w", err)
	}
	t.opt = restoreAdam(s.adam, t.model.cfg, slices.Clone(s.m), slices.Clone(s.v), s.adamStep)
	t.step = step
	t.trainLoss = slices.Clone(s.trainLoss)
	t.valLoss = slices.Clone(s.valLoss)
	return nil
}

// corpusSHA256 returns t.data.textSHA256(), computed once: a checkpoint is
// taken at every -keep-best improvement, and hashing a large text each
// time would cost more than the snapshot.
func (t *Trainer) corpusSHA256() [32]byte {
	if t.corpusSum == nil {
		sum := t.data.textSHA256()
		t.corpusSum = &sum
	}
	return *t.corpusSum
}
