package finetune

// This file owns a job's run: one at a time, off the request goroutines;
// its steps with the library's Trainer, giving way to completions between
// them; its events (metrics every step, a sample every sample_every
// steps); and, when it succeeds, its checkpoint in Training.Dir and its
// model served under fine_tuned_model.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"time"

	"example.org/minigpt"
)

// startNext starts the first queued job if none runs (js.mu held).
func (js *Jobs) startNext() {
	if js.running != nil || js.stopped || len(js.queue) == 0 {
		return
	}
	j := js.queue[0]
	js.queue = js.queue[1:]
	ctx, cancel := context.WithCancelCause(context.Background())
	j.cancel, j.status, j.started = cancel, statusRunning, time.Now()
	js.running = j
	kind := "fine-tuning " + j.model
	if j.base == nil {
		kind = fmt.Sprintf("training the %s preset from scratch", j.model)
	}
	js.event(j, "info", "message", fmt.Sprintf("Fine-tuning job started: %s, %d parameters, %d steps of batch %d, learning rate %g, seed %d",
		kind, j.shape.params, j.hp.steps, j.hp.batchSize, j.tc.LR, j.seed), nil)
	go js.run(ctx, j)
}

// run trains j, then records how it ended and starts the next job.
func (js *Jobs) run(ctx context.Context, j *job) {
	status, jerr, tuned := js.train(ctx, j)
	j.cancel(nil)
	js.mu.Lock()
	defer js.mu.Unlock()
	switch {
	case tuned != nil:
		m, v := tuned.model()
		js.host.Serve(tuned.name, m, v)
		js.tuned = append(js.tuned, tuned.name)
		j.fineTuned = tuned.name
		js.event(j, "info", "message", "New fine-tuned model created: "+tuned.name, nil)
		js.event(j, "info", "message", "The job has successfully completed", nil)
	case status == statusCancelled:
		why := "Fine-tuning job cancelled"
		if context.Cause(ctx) == errShutdown {
			why = "The server is shutting down: the job was cancelled"
		}
		js.event(j, "info", "message", fmt.Sprintf("%s after step %d of %d", why, j.step, j.hp.steps), nil)
	default:
		js.event(j, "error", "message", "Fine-tuning job failed: "+jerr.Message, nil)
	}
	js.finish(j, status, jerr)
	js.running = nil
	if js.stopped {
		close(js.done)
		return
	}
	js.startNext()
}

// metricsJSON is a metrics event's data: OpenAI's step, total_steps,
// train_loss and valid_loss (when measured), and the learning rate.
type metricsJSON struct {
	Step         int      `json:"step"`
	TotalSteps   int      `json:"total_steps"`
	TrainLoss    float64  `json:"train_loss"`
	ValidLoss    *float64 `json:"valid_loss,omitempty"`
	LearningRate float64  `json:"learning_rate"`
}

// sampleJSON is a sample event's data.
type sampleJSON struct {
	Step   int    `json:"step"`
	Sample string `json:"sample"`
}

// tunedModel is a succeeded job's model, to serve.
type tunedModel struct {
	name string
	*training
}

// train runs j's steps and returns how it ended, and the model to serve
// when it succeeded.
func (js *Jobs) train(ctx context.Context, j *job) (string, *jobErrorJSON, *tunedModel) {
	fail := func(code, format string, a ...any) (string, *jobErrorJSON, *tunedModel) {
		return statusFailed, &jobErrorJSON{Code: code, Message: fmt.Sprintf(format, a...)}, nil
	}
	js.mu.Lock()
	data := j.data
	js.mu.Unlock()
	tr, err := newTraining(j, data)
	if err != nil {
		return fail("training_failed", "%v", err)
	}
	defer tr.close()
	js.host.Yield(ctx)
	err = tr.steps(ctx, func(p minigpt.Progress) {
		js.progress(j, p)
		if e := j.hp.sampleEvery; e > 0 && (p.Step%e == 0 || p.Step == j.tc.Steps) {
			if sample, err := tr.sample(ctx, j.samplePrompt, sampleChars, j.seed); err == nil {
				text := j.samplePrompt + sample
				js.mu.Lock()
				js.event(j, "info", "message", fmt.Sprintf("Sample at step %d: %q", p.Step, text), sampleJSON{p.Step, text})
				js.mu.Unlock()
			}
		}
		if p.Step < j.tc.Steps {
			js.host.Yield(ctx)
		}
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return statusCancelled, nil, nil
	case diverged(err):
		return fail("training_diverged", "%v (at learning rate %g: try a lower learning_rate_multiplier)", err, j.tc.LR)
	default:
		return fail("training_failed", "%v", err)
	}
	tr.close() // the model is read-only from here on: served
	name := js.modelName(j)
	if js.cfg.Dir != "" {
		file := strings.ReplaceAll(name, ":", "-") + ".ckpt"
		err := tr.save(filepath.Join(js.cfg.Dir, file))
		if errors.Is(err, fs.ErrExist) {
			return fail("checkpoint_not_saved", "the training directory already has a file %s, which is never replaced", file)
		} else if err != nil {
			return fail("checkpoint_not_saved", "saving the checkpoint %s: %v", file, err)
		}
		js.mu.Lock()
		j.checkpoint = file
		js.event(j, "info", "message", "Saved the model as the checkpoint "+file+" in the training directory", nil)
		js.mu.Unlock()
	}
	return statusSucceeded, nil, &tunedModel{name, tr}
}

// progress records a step: its metrics event, and a message at every
// validation.
func (js *Jobs) progress(j *job, p minigpt.Progress) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j.step = p.Step
	d := metricsJSON{Step: p.Step, TotalSteps: j.tc.Steps, TrainLoss: p.Loss, LearningRate: p.LR}
	msg := fmt.Sprintf("Step %d/%d: training loss=%.4f", p.Step, j.tc.Steps, p.Loss)
	if !math.IsNaN(p.ValLoss) {
		v := p.ValLoss
		d.ValidLoss = &v
		msg += fmt.Sprintf(", validation loss=%.4f", v)
	}
	js.event(j, "info", "metrics", msg, d)
}

// modelName names j's model as OpenAI does, ft:base:suffix:id, with the
// first 8 hex digits of the job's id (more if they are taken).
func (js *Jobs) modelName(j *job) string {
	hexID := strings.TrimPrefix(j.id, "ftjob-")
	prefix := "ft:" + j.model + ":"
	if j.suffix != "" {
		prefix += j.suffix + ":"
	}
	for n := 8; ; n += 4 {
		name := prefix + hexID[:min(n, len(hexID))]
		if _, _, taken := js.host.Model(name); !taken || n >= len(hexID) {
			return name
		}
	}
}
