// Package finetune is the server's emulation of OpenAI's fine-tuning API:
// training files (POST /v1/files and the routes under it), fine-tuning
// jobs (POST /v1/fine_tuning/jobs, their list, cancel and events) and the
// deletion of the models they make (DELETE /v1/models/{model}). One job
// trains at a time, with the library's Trainer, off the request
// goroutines; a succeeded job's model is handed to the Host, which serves
// it. Package server mounts it with Config.Training; library.go is the
// only file that calls the minigpt library.
package finetune

// This file owns the jobs API's state: its configuration, what it needs
// of the server (Host), its routes, its lifecycle on shutdown, and the
// fine-tuned models it made.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// Config bounds the jobs API: the fields of server.Training, which
// documents them (a conversion between the two types keeps them the same).
type Config struct {
	Dir          string
	MaxFileBytes int64
	MaxFiles     int
	MaxSteps     int
	MaxParams    int
	MaxBatchSize int
	Queue        int
	MaxJobs      int
	MaxModels    int
}

// DefaultConfig returns the limits server.DefaultTraining documents.
func DefaultConfig() Config {
	return Config{
		MaxFileBytes: 4 << 20, MaxFiles: 16, MaxSteps: 5000, MaxParams: 2_000_000,
		MaxBatchSize: 128, Queue: 4, MaxJobs: 32, MaxModels: 16,
	}
}

// WithDefaults returns c with every zero field set to DefaultConfig's.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.MaxFiles, d.MaxFiles)
	orDefault(&c.MaxSteps, d.MaxSteps)
	orDefault(&c.MaxParams, d.MaxParams)
	orDefault(&c.MaxBatchSize, d.MaxBatchSize)
	orDefault(&c.Queue, d.Queue)
	orDefault(&c.MaxJobs, d.MaxJobs)
	orDefault(&c.MaxModels, d.MaxModels)
	orDefault(&c.MaxFileBytes, d.MaxFileBytes)
	return c
}

// orDefault sets a field left at zero (unset) to its default.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxFileBytes", c.MaxFileBytes}, {"MaxFiles", int64(c.MaxFiles)}, {"MaxSteps", int64(c.MaxSteps)},
		{"MaxParams", int64(c.MaxParams)}, {"MaxBatchSize", int64(c.MaxBatchSize)},
		{"MaxJobs", int64(c.MaxJobs)}, {"MaxModels", int64(c.MaxModels)},
	} {
		if f.v < 0 {
			return fmt.Errorf("server: training limit %s is negative (%d)", f.name, f.v)
		}
	}
	if err := checkMaxSteps(c.MaxSteps); err != nil {
		return fmt.Errorf("server: training limit MaxSteps: %w", err)
	}
	if q := max(c.Queue, 0); c.MaxJobs < q+1 {
		return fmt.Errorf("server: training limit MaxJobs %d must hold the running job and the queue of %d", c.MaxJobs, q)
	}
	if c.Dir != "" {
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return fmt.Errorf("server: training directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("server: training directory %s is not a directory", c.Dir)
		}
	}
	return nil
}

// Host is what the jobs API needs of the server that serves the models.
type Host interface {
	// Model returns the model served as name (given at the start or
	// fine-tuned), and false if there is none.
	Model(name string) (*minigpt.Model, *minigpt.Vocab, bool)
	// ModelNames lists the served models, for messages.
	ModelNames() []string
	// Serve serves a fine-tuned model under name from now on.
	Serve(name string, m *minigpt.Model, v *minigpt.Vocab)
	// Unserve stops serving the fine-tuned model name; a completion
	// already using it finishes with it.
	Unserve(name string)
	// Yield waits while completions or scores are in progress, or until
	// ctx ends: a job calls it before each step.
	Yield(ctx context.Context)
}

// Options are the server's settings the jobs API follows.
type Options struct {
	CORSOrigin   string        // a page there may upload (see crossSite)
	MaxBodyBytes int64         // caps a job request's body
	WriteTimeout time.Duration // each write of an event stream must be accepted within it
}

// Jobs is the state of the jobs API. One mutex guards it all: every
// operation on it is short, and a job's steps run outside it.
type Jobs struct {
	host Host
	cfg  Config
	opt  Options

	mu      sync.Mutex
	files   []*fileObject // uploaded, oldest first
	builtin *fileObject   // file-lanternbay
	list    []*job        // remembered, oldest first
	queue   []*job        // waiting, first come first served
	running *job
	tuned   []string // the fine-tuned models served, oldest first
	// Uploads being read (upload.go): their number, and the memory they
	// are charged.
	uploading   int
	uploadBytes int64
	stopped     bool          // draining: no new job runs, and streams end
	done        chan struct{} // closed once stopped with no job running
}

// New returns the jobs API for cfg (zero fields take DefaultConfig's),
// serving its models through host.
func New(cfg Config, host Host, opt Options) (*Jobs, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	js := &Jobs{host: host, cfg: cfg, opt: opt, done: make(chan struct{})}
	js.builtin = &fileObject{
		id: builtinFileID, filename: "lanternbay.txt", created: time.Now().Unix(),
		raw: builtinText, text: builtinText,
	}
	return js, nil
}

// Routes registers the jobs API on mux. On a nil *Jobs (training off)
// its routes answer 404 training_disabled, saying how to turn it on, and
// models have no DELETE.
func (js *Jobs) Routes(mux *http.ServeMux) {
	on := func(h http.HandlerFunc) http.HandlerFunc {
		if js == nil {
			return func(w http.ResponseWriter, r *http.Request) { api.WriteError(w, trainingOff()) }
		}
		return h
	}
	mux.HandleFunc("POST /v1/files", on(js.servePostFile)) // multipart or JSON: see crossSite
	mux.HandleFunc("GET /v1/files", on(js.serveListFiles))
	mux.HandleFunc("GET /v1/files/{file}", on(js.serveFile))
	mux.HandleFunc("GET /v1/files/{file}/content", on(js.serveFileContent))
	mux.HandleFunc("DELETE /v1/files/{file}", on(js.serveDeleteFile))
	mux.Handle("POST /v1/fine_tuning/jobs", api.RequireJSON(on(js.serveCreateJob)))
	mux.HandleFunc("GET /v1/fine_tuning/jobs", on(js.serveListJobs))
	mux.HandleFunc("GET /v1/fine_tuning/jobs/{job}", on(js.serveJob))
	mux.HandleFunc("POST /v1/fine_tuning/jobs/{job}/cancel", on(js.serveCancelJob)) // no body, or {}
	mux.HandleFunc("GET /v1/fine_tuning/jobs/{job}/events", on(js.serveJobEvents))
	if js != nil {
		mux.HandleFunc("DELETE /v1/models/{model}", js.serveDeleteModel) // only fine-tuned models have one
	}
}

// trainingOff is the 404 of every jobs API route on a server without
// training.
func trainingOff() *api.Error {
	return api.NewError(http.StatusNotFound, "invalid_request_error", "training_disabled",
		"fine-tuning is off on this server: start it with cmd/serve -training (server.Config.Training)")
}

// Shutdown stops the jobs: queued ones are cancelled, the running one
// stops at the end of its step, and no other starts. It returns at once;
// Ended says when the running job has ended. A nil *Jobs has none.
func (js *Jobs) Shutdown() {
	if js == nil {
		return
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.stopped {
		return
	}
	js.stopped = true
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
var errShutdown = errors.New("the server is shutting down")

// Ended is closed once Shutdown has begun and no job runs (at once for a
// nil *Jobs).
func (js *Jobs) Ended() <-chan struct{} {
	if js == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return js.done
}

// serveDeleteModel deletes a fine-tuned model: DELETE /v1/models/{model}.
// The models given at startup cannot be deleted. A completion already
// using the model finishes with it.
func (js *Jobs) serveDeleteModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	js.mu.Lock()
	i := slices.Index(js.tuned, name)
	if i >= 0 {
		js.tuned = slices.Delete(js.tuned, i, i+1)
		js.host.Unserve(name)
	}
	js.mu.Unlock()
	if i >= 0 {
		api.WriteJSON(w, struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		}{name, "model", true})
		return
	}
	if _, _, ok := js.host.Model(name); ok {
		e := api.NewError(http.StatusForbidden, "permission_error", "model_not_deletable",
			"model %q was given at startup and cannot be deleted: only fine-tuned models can", name)
		e.Param = api.Ptr("model")
		api.WriteError(w, e)
		return
	}
	e := api.NewError(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"model %q does not exist: this server has %s", name, strings.Join(js.host.ModelNames(), ", "))
	e.Param = api.Ptr("model")
	api.WriteError(w, e)
}
