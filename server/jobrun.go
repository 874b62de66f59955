package server

// This file owns a job's run: one at a time, off the request goroutines;
// its steps with the library's Trainer, giving way to completions between
// them; its events (metrics every step, a sample every sample_every
// steps); and, when it succeeds, its checkpoint in Training.Dir and its
// model served under fine_tuned_model.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/internal/safefile"
)

// startNext starts the first queued job if none runs (js.mu held).
func (js *jobs) startNext() {
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
		kind, j.config.NumParams(), j.hp.steps, j.hp.batchSize, j.tc.LR, j.seed), nil)
	go js.run(ctx, j)
}

// run trains j, then records how it ended and starts the next job.
func (js *jobs) run(ctx context.Context, j *job) {
	status, jerr, model := js.train(ctx, j)
	j.cancel(nil)
	js.mu.Lock()
	defer js.mu.Unlock()
	switch {
	case model != nil:
		js.tuned = append(js.tuned, model)
		j.fineTuned = model.name
		js.event(j, "info", "message", "New fine-tuned model created: "+model.name, nil)
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

// train runs j's steps and returns how it ended, and the model to serve
// when it succeeded.
func (js *jobs) train(ctx context.Context, j *job) (string, *jobErrorJSON, *servedModel) {
	fail := func(code, format string, a ...any) (string, *jobErrorJSON, *servedModel) {
		return statusFailed, &jobErrorJSON{Code: code, Message: fmt.Sprintf(format, a...)}, nil
	}
	js.mu.Lock()
	data := j.data
	js.mu.Unlock()
	var m *minigpt.Model
	if j.base == nil {
		var err error
		if m, err = minigpt.NewModel(j.config, j.seed); err != nil {
			return fail("training_failed", "the model cannot be made: %v", err)
		}
	} else {
		m = j.base.model.Clone() // the served model keeps serving as it was
	}
	tr, err := minigpt.NewTrainer(m, data, j.tc)
	if err != nil {
		return fail("training_failed", "%v", err)
	}
	defer tr.Close()
	js.s.yield(ctx)
	err = tr.Run(ctx, func(p minigpt.Progress) {
		js.progress(j, p)
		if e := j.hp.sampleEvery; e > 0 && (p.Step%e == 0 || p.Step == j.tc.Steps) {
			res, err := tr.Model().Complete(ctx, data.Vocab, j.samplePrompt, minigpt.GenerateOptions{MaxNewTokens: sampleChars, Temperature: 0.8, Seed: j.seed})
			if err == nil {
				text := j.samplePrompt + res[0].Text
				js.mu.Lock()
				js.event(j, "info", "message", fmt.Sprintf("Sample at step %d: %q", p.Step, text), sampleJSON{p.Step, text})
				js.mu.Unlock()
			}
		}
		if p.Step < j.tc.Steps {
			js.s.yield(ctx)
		}
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return statusCancelled, nil, nil
	case errors.Is(err, minigpt.ErrNonFinite):
		return fail("training_diverged", "%v (at learning rate %g: try a lower learning_rate_multiplier)", err, j.tc.LR)
	default:
		return fail("training_failed", "%v", err)
	}
	tr.Close() // the model is read-only from here on: served
	name := js.modelName(j)
	if js.cfg.Dir != "" {
		file := strings.ReplaceAll(name, ":", "-") + ".ckpt"
		c := tr.Checkpoint()
		err := safefile.Save(filepath.Join(js.cfg.Dir, file), false, func(w io.Writer) error { return minigpt.WriteCheckpoint(w, c) })
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
	return statusSucceeded, nil, newServedModel(Model{Name: name, Model: tr.Model(), Vocab: data.Vocab}, time.Now().Unix())
}

// progress records a step: its metrics event, and a message at every
// validation.
func (js *jobs) progress(j *job, p minigpt.Progress) {
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
func (js *jobs) modelName(j *job) string {
	hexID := strings.TrimPrefix(j.id, "ftjob-")
	prefix := "ft:" + j.model + ":"
	if j.suffix != "" {
		prefix += j.suffix + ":"
	}
	for n := 8; ; n += 4 {
		name := prefix + hexID[:min(n, len(hexID))]
		if js.s.model(name) == nil || n >= len(hexID) {
			return name
		}
	}
}
