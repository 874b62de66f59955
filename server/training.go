package server

// This file owns the server's side of the fine-tuning API (package
// finetune): Training, its configuration, and what the jobs need of the
// server, which serves their models and has them give way to completions.

import (
	"context"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/finetune"
)

// Training turns on the fine-tuning jobs API (POST /v1/files,
// /v1/fine_tuning/jobs and the routes under them, DELETE /v1/models/{model}
// for the models it makes). A zero field takes its value from
// DefaultTraining.
type Training struct {
	// Dir, if not empty, is an existing directory where each succeeded
	// job's model is also saved, as a full checkpoint named after the
	// model with ":" as "-" (ft-lanternbay-gulls-1a2b3c4d.ckpt), loadable
	// with generate -model and serve -model. A file is never replaced: a
	// name already taken fails the job.
	Dir string
	// MaxFileBytes caps an uploaded file, and so a training text.
	MaxFileBytes int64
	// MaxFiles caps the uploaded files kept at once (the built-in Lantern
	// Bay text, file-lanternbay, is not counted); DELETE /v1/files/{file}
	// makes room.
	MaxFiles int
	// MaxSteps caps a job's optimizer steps.
	MaxSteps int
	// MaxParams caps the parameters of the model a job trains: the preset
	// for the text's vocabulary, or the model it fine-tunes.
	MaxParams int
	// MaxBatchSize caps hyperparameters.batch_size.
	MaxBatchSize int
	// Queue is the number of jobs that may wait behind the running one;
	// more get 429. A negative Queue means none may wait.
	Queue int
	// MaxJobs is the number of jobs remembered; finished ones are
	// forgotten oldest first.
	MaxJobs int
	// MaxModels caps the fine-tuned models served at once (with the jobs
	// that will make more); DELETE /v1/models/{model} makes room.
	MaxModels int
}

// DefaultTraining returns the limits cmd/serve -training starts with:
// 4 MiB files, 16 of them, 5000 steps, 2,000,000 parameters, batches of at
// most 128, 4 jobs waiting, 32 jobs remembered and 16 fine-tuned models.
func DefaultTraining() Training { return Training(finetune.DefaultConfig()) }

func (t Training) withDefaults() Training { return Training(finetune.Config(t).WithDefaults()) }

// newJobs returns the jobs API for cfg, or nil when training is off.
func newJobs(s *Server, cfg Config) (*finetune.Jobs, error) {
	if cfg.Training == nil {
		return nil, nil
	}
	return finetune.New(finetune.Config(*cfg.Training), (*jobsHost)(s), finetune.Options{
		CORSOrigin: cfg.CORSOrigin, MaxBodyBytes: s.limits.MaxBodyBytes, WriteTimeout: s.limits.WriteTimeout,
	})
}

// jobsHost is the Server as the jobs API sees it (finetune.Host), a type
// of its own so that its methods stay out of Server's.
type jobsHost Server

func (h *jobsHost) Model(name string) (*minigpt.Model, *minigpt.Vocab, bool) {
	if m := (*Server)(h).model(name); m != nil {
		return m.model, m.lib, true
	}
	return nil, nil, false
}

func (h *jobsHost) ModelNames() []string { return (*Server)(h).modelNames() }

func (h *jobsHost) Serve(name string, m *minigpt.Model, v *minigpt.Vocab) {
	sm := newServedModel(Model{Name: name, Model: m, Vocab: v}, time.Now().Unix())
	h.tunedMu.Lock()
	defer h.tunedMu.Unlock()
	h.tuned = append(h.tuned, sm)
}

func (h *jobsHost) Unserve(name string) {
	h.tunedMu.Lock()
	defer h.tunedMu.Unlock()
	for i, m := range h.tuned {
		if m.name == name {
			h.tuned = append(h.tuned[:i:i], h.tuned[i+1:]...)
			return
		}
	}
}

// yieldPoll is how often a job waiting for the completions to end looks
// again: short against a completion, long against a check.
const yieldPoll = 2 * time.Millisecond

// Yield waits while completions or scores are in progress, or until ctx
// ends. This is how a job keeps -slots' promise: the completions have the
// processors to themselves, but for the rest of at most one step (a
// generation that arrives during a step runs its sections beside it,
// serially, as internal/par runs a section that finds the pool busy).
func (h *jobsHost) Yield(ctx context.Context) {
	s := (*Server)(h)
	if !s.busy() {
		return
	}
	t := time.NewTicker(yieldPoll)
	defer t.Stop()
	for s.busy() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// busy reports whether a completion or a score is admitted and not yet
// answered: a training job then waits between its steps.
func (s *Server) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admits > 0
}
