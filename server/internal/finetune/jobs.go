package finetune

// This file owns the fine-tuning job as the API sees it: POST
// /v1/fine_tuning/jobs (its fields are read in parse.go), GET
// /v1/fine_tuning/jobs and /v1/fine_tuning/jobs/{job}, POST
// /v1/fine_tuning/jobs/{job}/cancel, and the job object's JSON.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// A job's status, as OpenAI names them.
const (
	statusQueued    = "queued"
	statusRunning   = "running"
	statusSucceeded = "succeeded"
	statusFailed    = "failed"
	statusCancelled = "cancelled"
)

// job is one fine-tuning job. Its fields are guarded by Jobs.mu.
type job struct {
	id           string
	created      int64
	finished     int64 // 0 while queued or running
	started      time.Time
	model        string     // as the request named it: a served model or a preset
	base         *baseModel // the model fine-tuned; nil from scratch
	shape        shape      // the model trained
	trainingFile string
	suffix       string
	seed         uint64
	hp           hyperparameters
	tc           minigpt.TrainConfig
	data         *minigpt.Dataset // until the job starts
	samplePrompt string
	metadata     map[string]string
	status       string
	err          *jobErrorJSON
	fineTuned    string
	checkpoint   string // the file written in Training.Dir, by name
	step         int
	cancel       context.CancelCauseFunc // while running
	done         chan struct{}           // closed once finished
	events       []event
	changed      chan struct{} // closed and replaced at every new event
}

// hyperparameters are a job's settings as the API names them, resolved.
type hyperparameters struct {
	nEpochs     int // 0: "auto" (the steps decide)
	batchSize   int
	lrMult      float64
	steps       int
	evalEvery   int
	sampleEvery int
}

type jobErrorJSON struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// hyperparametersJSON is OpenAI's hyperparameters object with the
// extensions steps, learning_rate, eval_every and sample_every.
type hyperparametersJSON struct {
	NEpochs                any     `json:"n_epochs"` // an integer or "auto"
	BatchSize              int     `json:"batch_size"`
	LearningRateMultiplier float64 `json:"learning_rate_multiplier"`
	Steps                  int     `json:"steps"`
	LearningRate           float64 `json:"learning_rate"`
	EvalEvery              int     `json:"eval_every"`
	SampleEvery            int     `json:"sample_every"`
}

// jobJSON is OpenAI's fine_tuning.job object, with the extensions step
// (steps completed) and checkpoint_file.
type jobJSON struct {
	Object             string              `json:"object"`
	ID                 string              `json:"id"`
	Model              string              `json:"model"`
	CreatedAt          int64               `json:"created_at"`
	FinishedAt         *int64              `json:"finished_at"`
	FineTunedModel     *string             `json:"fine_tuned_model"`
	OrganizationID     string              `json:"organization_id"`
	ResultFiles        []string            `json:"result_files"`
	Status             string              `json:"status"`
	ValidationFile     *string             `json:"validation_file"`
	TrainingFile       string              `json:"training_file"`
	Hyperparameters    hyperparametersJSON `json:"hyperparameters"`
	Method             any                 `json:"method"`
	TrainedTokens      *int                `json:"trained_tokens"`
	Error              *jobErrorJSON       `json:"error"`
	Seed               uint64              `json:"seed"`
	EstimatedFinish    *int64              `json:"estimated_finish"`
	Integrations       []any               `json:"integrations"`
	Metadata           map[string]string   `json:"metadata"`
	UserProvidedSuffix *string             `json:"user_provided_suffix"`
	Step               int                 `json:"step"`
	CheckpointFile     *string             `json:"checkpoint_file"`
}

// json returns the job object (js.mu held).
func (j *job) json() jobJSON {
	hp := hyperparametersJSON{
		NEpochs: "auto", BatchSize: j.hp.batchSize, LearningRateMultiplier: j.hp.lrMult,
		Steps: j.hp.steps, LearningRate: j.tc.LR, EvalEvery: j.hp.evalEvery, SampleEvery: j.hp.sampleEvery,
	}
	if j.hp.nEpochs > 0 {
		hp.NEpochs = j.hp.nEpochs
	}
	o := jobJSON{
		Object: "fine_tuning.job", ID: j.id, Model: j.model, CreatedAt: j.created,
		OrganizationID: "minigpt", ResultFiles: []string{}, Status: j.status, TrainingFile: j.trainingFile,
		Hyperparameters: hp, Error: j.err, Seed: j.seed, Integrations: []any{}, Metadata: j.metadata, Step: j.step,
		Method: map[string]any{"type": "supervised", "supervised": map[string]any{"hyperparameters": hp}},
	}
	if j.finished != 0 {
		o.FinishedAt = &j.finished
	}
	if j.fineTuned != "" {
		o.FineTunedModel = &j.fineTuned
	}
	if j.suffix != "" {
		o.UserProvidedSuffix = &j.suffix
	}
	if j.checkpoint != "" {
		o.CheckpointFile = &j.checkpoint
	}
	if j.step > 0 {
		n := j.step * j.hp.batchSize * j.shape.config.BlockSize
		o.TrainedTokens = &n
		if j.status == statusRunning {
			elapsed := time.Since(j.started)
			eta := j.started.Add(elapsed * time.Duration(j.hp.steps) / time.Duration(j.step)).Unix()
			o.EstimatedFinish = &eta
		}
	}
	return o
}

// jobFields are the fields POST /v1/fine_tuning/jobs accepts.
var jobFields = []string{"model", "training_file", "validation_file", "hyperparameters", "method", "seed", "suffix", "metadata", "integrations"}

// hyperparameterFields are the fields of hyperparameters.
var hyperparameterFields = []string{"n_epochs", "batch_size", "learning_rate_multiplier", "steps", "eval_every", "sample_every"}

// Fixed parts of a job.
const (
	maxSuffix   = 40 // OpenAI allows 64; the model name carries it
	sampleChars = 80 // the length of the samples a job writes
)

// serveCreateJob creates a job: POST /v1/fine_tuning/jobs. Everything is
// checked here, before the job is queued: the file, the model, every
// hyperparameter, the text against the model's vocabulary, the limits.
func (js *Jobs) serveCreateJob(w http.ResponseWriter, r *http.Request) {
	j, aerr := js.parseJob(w, r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if aerr := js.admitJob(); aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	js.list = append(js.list, j)
	js.queue = append(js.queue, j)
	js.event(j, "info", "message", "Created fine-tuning job: "+j.id, nil)
	js.event(j, "info", "message", fmt.Sprintf("Validated training file %s: %d training and %d validation characters", j.trainingFile, len(j.data.Train), len(j.data.Val)), nil)
	js.startNext()
	api.WriteJSON(w, j.json())
}

// admitJob makes room for a new job, or refuses it (js.mu held): one job
// runs, Queue wait, MaxModels bounds the fine-tuned models with the jobs
// that will make more, and the oldest finished job is forgotten when
// MaxJobs are remembered.
func (js *Jobs) admitJob() *api.Error {
	busy := func(code, format string, a ...any) *api.Error {
		e := api.NewError(http.StatusTooManyRequests, "rate_limit_error", code, format, a...)
		e.RetryAfter = 5
		return e
	}
	if js.stopped {
		return api.ShuttingDown()
	}
	if js.running != nil && len(js.queue) >= max(js.cfg.Queue, 0) {
		return busy("too_many_jobs", "one job trains at a time and %d are waiting, this server's limit: retry later, or cancel one", len(js.queue))
	}
	pending := len(js.queue)
	if js.running != nil {
		pending++
	}
	if len(js.tuned)+pending >= js.cfg.MaxModels {
		return busy("too_many_models", "this server serves at most %d fine-tuned models, and has %d with %d jobs pending: delete one (DELETE /v1/models/{model}) first", js.cfg.MaxModels, len(js.tuned), pending)
	}
	if len(js.list) >= js.cfg.MaxJobs {
		i := slices.IndexFunc(js.list, func(j *job) bool { return j.finished != 0 })
		if i < 0 {
			return busy("too_many_jobs", "this server remembers %d jobs and none has finished: retry later", js.cfg.MaxJobs)
		}
		js.list = slices.Delete(js.list, i, i+1)
	}
	return nil
}

// lookupJob returns the job named by the path, or the error to send.
func (js *Jobs) lookupJob(r *http.Request) (*job, *api.Error) {
	id := r.PathValue("job")
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.id == id {
			return j, nil
		}
	}
	return nil, api.NewError(http.StatusNotFound, "invalid_request_error", "fine_tuning_job_not_found",
		"fine-tuning job %q does not exist (GET /v1/fine_tuning/jobs lists the ones this server remembers)", id)
}

// serveListJobs lists the jobs, newest first: GET /v1/fine_tuning/jobs.
func (js *Jobs) serveListJobs(w http.ResponseWriter, r *http.Request) {
	q, aerr := parseListQuery(r, 20)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	js.mu.Lock()
	items := make([]jobJSON, 0, len(js.list))
	for i := len(js.list) - 1; i >= 0; i-- {
		items = append(items, js.list[i].json())
	}
	js.mu.Unlock()
	api.WriteJSON(w, page(items, q, func(j jobJSON) string { return j.ID }))
}

// serveJob describes a job: GET /v1/fine_tuning/jobs/{job}.
func (js *Jobs) serveJob(w http.ResponseWriter, r *http.Request) {
	j, aerr := js.lookupJob(r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	js.mu.Lock()
	o := j.json()
	js.mu.Unlock()
	api.WriteJSON(w, o)
}

// errCancelled is the cause of a job cancelled through the API.
var errCancelled = errors.New("cancelled")

// serveCancelJob cancels a job: POST /v1/fine_tuning/jobs/{job}/cancel,
// with no body (as OpenAI's clients send it) or an empty JSON object. A
// queued job is cancelled at once; a running one stops at the end of its
// step, and the answer waits for that, so that it shows the job
// cancelled. Cancelling a cancelled job answers it again.
func (js *Jobs) serveCancelJob(w http.ResponseWriter, r *http.Request) {
	j, aerr := js.lookupJob(r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	if aerr := js.readCancelBody(w, r); aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	js.mu.Lock()
	switch j.status {
	case statusQueued:
		js.queue = slices.DeleteFunc(js.queue, func(q *job) bool { return q == j })
		js.finish(j, statusCancelled, nil)
		js.event(j, "info", "message", "Fine-tuning job cancelled before it started", nil)
	case statusRunning:
		j.cancel(errCancelled)
	case statusSucceeded, statusFailed:
		st := j.status
		js.mu.Unlock()
		api.WriteError(w, api.NewError(http.StatusBadRequest, "invalid_request_error", "job_finished", "fine-tuning job %s has already %s: only a queued or running job can be cancelled", j.id, st))
		return
	}
	js.mu.Unlock()
	select {
	case <-j.done:
	case <-r.Context().Done():
		return
	}
	js.mu.Lock()
	o := j.json()
	js.mu.Unlock()
	api.WriteJSON(w, o)
}

// readCancelBody accepts no body, or an empty JSON object: a bodiless
// POST from a page on another site is refused (see crossSite).
func (js *Jobs) readCancelBody(w http.ResponseWriter, r *http.Request) *api.Error {
	body, aerr := api.ReadBody(w, r, 4<<10)
	if aerr != nil {
		return aerr
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return js.crossSite(r)
	}
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return api.NewError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"Content-Type %q is not supported: send no body, or {} as application/json", ct)
	}
	f, aerr := api.DecodeObject(body)
	if aerr != nil {
		return aerr
	}
	for k := range f {
		return api.BadParam(k, "unknown_parameter", "unknown parameter %q: cancelling takes no parameters", k)
	}
	return nil
}

// finish ends j with status and err (js.mu held).
func (js *Jobs) finish(j *job, status string, err *jobErrorJSON) {
	j.status, j.err, j.finished = status, err, time.Now().Unix()
	j.data = nil
	close(j.done)
}

// event appends an event to j's list and wakes its streams (js.mu held).
func (js *Jobs) event(j *job, level, typ, message string, data any) {
	j.events = append(j.events, event{seq: len(j.events) + 1, created: time.Now().Unix(), level: level, typ: typ, message: message, data: data})
	close(j.changed)
	j.changed = make(chan struct{})
}
