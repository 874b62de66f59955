package server

// This file owns training in the server: its configuration (Training),
// the presets a job trains from scratch, the state the jobs API shares
// (files, jobs, the fine-tuned models), its lifecycle on shutdown, and how
// a job gives way to completions.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"example.org/minigpt"
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
func DefaultTraining() Training {
	return Training{
		MaxFileBytes: 4 << 20, MaxFiles: 16, MaxSteps: 5000, MaxParams: 2_000_000,
		MaxBatchSize: 128, Queue: 4, MaxJobs: 32, MaxModels: 16,
	}
}

func (t Training) withDefaults() Training {
	d := DefaultTraining()
	orDefault(&t.MaxFiles, d.MaxFiles)
	orDefault(&t.MaxSteps, d.MaxSteps)
	orDefault(&t.MaxParams, d.MaxParams)
	orDefault(&t.MaxBatchSize, d.MaxBatchSize)
	orDefault(&t.Queue, d.Queue)
	orDefault(&t.MaxJobs, d.MaxJobs)
	orDefault(&t.MaxModels, d.MaxModels)
	orDefault(&t.MaxFileBytes, d.MaxFileBytes)
	return t
}

func (t Training) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxFileBytes", t.MaxFileBytes}, {"MaxFiles", int64(t.MaxFiles)}, {"MaxSteps", int64(t.MaxSteps)},
		{"MaxParams", int64(t.MaxParams)}, {"MaxBatchSize", int64(t.MaxBatchSize)},
		{"MaxJobs", int64(t.MaxJobs)}, {"MaxModels", int64(t.MaxModels)},
	} {
		if f.v < 0 {
			return fmt.Errorf("server: training limit %s is negative (%d)", f.name, f.v)
		}
	}
	if q := max(t.Queue, 0); t.MaxJobs < q+1 {
		return fmt.Errorf("server: training limit MaxJobs %d must hold the running job and the queue of %d", t.MaxJobs, q)
	}
	if t.Dir != "" {
		fi, err := os.Stat(t.Dir)
		if err != nil {
			return fmt.Errorf("server: training directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("server: training directory %s is not a directory", t.Dir)
		}
	}
	return nil
}

// presets are the models a job trains from scratch, by the name a job's
// "model" gives: the shape for the training text's vocabulary. "scratch"
// is cmd/train's default model (ConfigFor the text: block 32, width 64,
// 4 heads, 2 layers), so a job with it is the run cmd/train makes with
// the same -corpus, -seed, -steps, -batch and -lr.
var presets = map[string]func(*minigpt.Vocab) minigpt.Config{
	"scratch": minigpt.ConfigFor,
}

// presetNames lists the presets for messages.
const presetNames = `"scratch"`

// jobs is the state of the jobs API. One mutex guards it all: every
// operation on it is short, and a job's steps run outside it.
type jobs struct {
	s          *Server
	cfg        Training
	corsOrigin string

	mu      sync.Mutex
	files   []*fileObject // uploaded, oldest first
	builtin *fileObject   // file-lanternbay
	list    []*job        // remembered, oldest first
	queue   []*job        // waiting, first come first served
	running *job
	tuned   []*servedModel // the fine-tuned models, oldest first
	stopped bool           // draining: no new job runs, and streams end
	done    chan struct{}  // closed once stopped with no job running
	stop    chan struct{}  // closed by shutdown
}

// newJobs returns the jobs API state for cfg, or nil when training is off.
func newJobs(s *Server, cfg Config) (*jobs, error) {
	if cfg.Training == nil {
		return nil, nil
	}
	t := cfg.Training.withDefaults()
	if err := t.validate(); err != nil {
		return nil, err
	}
	js := &jobs{s: s, cfg: t, corsOrigin: cfg.CORSOrigin, done: make(chan struct{}), stop: make(chan struct{})}
	js.builtin = &fileObject{
		id: builtinFileID, filename: "lanternbay.txt", created: time.Now().Unix(),
		raw: minigpt.LanternBay, text: minigpt.LanternBay,
	}
	return js, nil
}

// trainingOff is the 404 of every jobs API route on a server without
// Training.
func trainingOff() *apiError {
	return errorWithStatus(http.StatusNotFound, "invalid_request_error", "training_disabled",
		"fine-tuning is off on this server: start it with cmd/serve -training (server.Config.Training)")
}

// shutdown stops the jobs: queued ones are cancelled, the running one
// stops at the end of its step, and no other starts. It returns at once;
// stopped says when the running job has ended.
func (js *jobs) shutdown() {
	if js == nil {
		return
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.stopped {
		return
	}
	js.stopped = true
	close(js.stop)
	for _, j := range js.queue {
		js.finish(j, statusCancelled, nil)
		js.event(j, "info", "message", "The server is shutting down: the job was cancelled before it started", nil)
	}
	js.queue = nil
	if js.running != nil {
		js.running.cancel(errShutdown)
	} else {
		close(js.done)
	}
}

// errShutdown is the cause of a job cancelled by the server's shutdown.
var errShutdown = fmt.Errorf("the server is shutting down")

// ended is closed once shutdown has begun and no job runs.
func (js *jobs) ended() <-chan struct{} {
	if js == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return js.done
}

// tunedModel returns the fine-tuned model called name, or nil.
func (js *jobs) tunedModel(name string) *servedModel {
	if js == nil {
		return nil
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, m := range js.tuned {
		if m.name == name {
			return m
		}
	}
	return nil
}

// tunedModels returns the fine-tuned models, oldest first.
func (js *jobs) tunedModels() []*servedModel {
	if js == nil {
		return nil
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	return append([]*servedModel(nil), js.tuned...)
}

// busy reports whether a completion or a score is admitted and not yet
// answered: a training job then waits between its steps.
func (s *Server) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admits > 0
}

// yieldPoll is how often a job waiting for the completions to end looks
// again: short against a completion, long against a check.
const yieldPoll = 2 * time.Millisecond

// yield waits while completions or scores are in progress, or until ctx
// ends. This is how a job keeps -slots' promise: the completions have the
// processors to themselves, but for the rest of at most one step (a
// generation that arrives during a step runs its sections beside it,
// serially, as internal/par runs a section that finds the pool busy).
// It reports how long it waited.
func (s *Server) yield(ctx context.Context) time.Duration {
	if !s.busy() {
		return 0
	}
	start := time.Now()
	t := time.NewTicker(yieldPoll)
	defer t.Stop()
	for s.busy() {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-t.C:
		}
	}
	return time.Since(start)
}

// serveDeleteModel deletes a fine-tuned model: DELETE /v1/models/{model}.
// The models given at startup cannot be deleted. A completion already
// using the model finishes with it.
func (s *Server) serveDeleteModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	js := s.jobs
	if js != nil {
		js.mu.Lock()
		for i, m := range js.tuned {
			if m.name == name {
				js.tuned = append(js.tuned[:i:i], js.tuned[i+1:]...)
				js.mu.Unlock()
				writeJSON(w, struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					Deleted bool   `json:"deleted"`
				}{name, "model", true})
				return
			}
		}
		js.mu.Unlock()
	}
	for _, m := range s.models {
		if m.name == name {
			e := errorWithStatus(http.StatusForbidden, "permission_error", "model_not_deletable",
				"model %q was given at startup and cannot be deleted: only fine-tuned models can", name)
			e.Param = strp("model")
			writeError(w, e)
			return
		}
	}
	e := errorWithStatus(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"model %q does not exist: this server has %s", name, strings.Join(s.modelNames(), ", "))
	e.Param = strp("model")
	writeError(w, e)
}

// trainingRoutes registers the jobs API. Without Training its routes
// answer 404 training_disabled, saying how to turn it on, and models have
// no DELETE.
func (s *Server) trainingRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/files", s.servePostFile) // multipart or JSON: see crossSite
	mux.HandleFunc("GET /v1/files", s.serveListFiles)
	mux.HandleFunc("GET /v1/files/{file}", s.serveFile)
	mux.HandleFunc("GET /v1/files/{file}/content", s.serveFileContent)
	mux.HandleFunc("DELETE /v1/files/{file}", s.serveDeleteFile)
	mux.Handle("POST /v1/fine_tuning/jobs", requireJSON(http.HandlerFunc(s.serveCreateJob)))
	mux.HandleFunc("GET /v1/fine_tuning/jobs", s.serveListJobs)
	mux.HandleFunc("GET /v1/fine_tuning/jobs/{job}", s.serveJob)
	mux.HandleFunc("POST /v1/fine_tuning/jobs/{job}/cancel", s.serveCancelJob) // no body, or {}
	mux.HandleFunc("GET /v1/fine_tuning/jobs/{job}/events", s.serveJobEvents)
	if s.jobs != nil {
		mux.HandleFunc("DELETE /v1/models/{model}", s.serveDeleteModel) // only fine-tuned models have one
	}
}
