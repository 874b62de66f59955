package server

// This file owns the fine-tuning job as the API sees it: POST
// /v1/fine_tuning/jobs (every field checked before the job is queued),
// GET /v1/fine_tuning/jobs and /v1/fine_tuning/jobs/{job}, POST
// /v1/fine_tuning/jobs/{job}/cancel, and the job object's JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt"
)

// A job's status, as OpenAI names them.
const (
	statusQueued    = "queued"
	statusRunning   = "running"
	statusSucceeded = "succeeded"
	statusFailed    = "failed"
	statusCancelled = "cancelled"
)

// job is one fine-tuning job. Its fields are guarded by jobs.mu.
type job struct {
	id           string
	created      int64
	finished     int64 // 0 while queued or running
	started      time.Time
	model        string       // as the request named it: a served model or a preset
	base         *servedModel // the model fine-tuned; nil from scratch
	config       minigpt.Config
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
		n := j.step * j.hp.batchSize * j.config.BlockSize
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
func (s *Server) serveCreateJob(w http.ResponseWriter, r *http.Request) {
	js := s.jobs
	if js == nil {
		writeError(w, trainingOff())
		return
	}
	j, aerr := js.parseJob(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if aerr := js.admitJob(); aerr != nil {
		writeError(w, aerr)
		return
	}
	js.list = append(js.list, j)
	js.queue = append(js.queue, j)
	js.event(j, "info", "message", "Created fine-tuning job: "+j.id, nil)
	js.event(j, "info", "message", fmt.Sprintf("Validated training file %s: %d training and %d validation characters", j.trainingFile, len(j.data.Train), len(j.data.Val)), nil)
	js.startNext()
	writeJSON(w, j.json())
}

// admitJob makes room for a new job, or refuses it (js.mu held): one job
// runs, Queue wait, MaxModels bounds the fine-tuned models with the jobs
// that will make more, and the oldest finished job is forgotten when
// MaxJobs are remembered.
func (js *jobs) admitJob() *apiError {
	busy := func(code, format string, a ...any) *apiError {
		e := errorWithStatus(http.StatusTooManyRequests, "rate_limit_error", code, format, a...)
		e.retryAfter = 5
		return e
	}
	if js.stopped {
		return shuttingDown()
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

// parseJob reads and checks a job request, and prepares its dataset.
func (js *jobs) parseJob(w http.ResponseWriter, r *http.Request) (*job, *apiError) {
	body, aerr := readBody(w, r, js.s.limits.MaxBodyBytes)
	if aerr != nil {
		return nil, aerr
	}
	f, aerr := decodeObject(body)
	if aerr != nil {
		return nil, aerr
	}
	for name := range f {
		if !slices.Contains(jobFields, name) {
			return nil, badParam(name, "unknown_parameter", "unknown parameter %q: a fine-tuning job takes %s", name, strings.Join(jobFields, ", "))
		}
	}
	j := &job{id: newID("ftjob-"), created: time.Now().Unix(), status: statusQueued, done: make(chan struct{}), changed: make(chan struct{})}

	// The fields this server does not do are refused, not ignored.
	if raw, ok := f["validation_file"]; ok && !isNull(raw) {
		return nil, badParam("validation_file", "unsupported_parameter", "validation_file is not supported: the last 10%% of training_file validates, as cmd/train does")
	}
	if raw, ok := f["integrations"]; ok && !isNull(raw) && string(raw) != "[]" {
		return nil, badParam("integrations", "unsupported_parameter", "integrations are not supported")
	}

	if err := f.str("training_file", &j.trainingFile); err != nil {
		return nil, err
	}
	if j.trainingFile == "" {
		return nil, badParam("training_file", "missing_parameter", "training_file is required: the id of an uploaded file (POST /v1/files), or %s for the built-in Lantern Bay text", builtinFileID)
	}
	js.mu.Lock()
	file := js.file(j.trainingFile)
	js.mu.Unlock()
	if file == nil {
		e := fileNotFound(j.trainingFile, "training_file")
		e.status = http.StatusBadRequest
		return nil, e
	}

	if err := f.str("model", &j.model); err != nil {
		return nil, err
	}
	preset, isPreset := presets[j.model]
	switch {
	case j.model == "":
		return nil, badParam("model", "missing_parameter", "model is required: a model this server serves, to fine-tune (%s), or a preset to train from scratch (%s)", strings.Join(js.s.modelNames(), ", "), presetNames)
	case isPreset:
	default:
		if j.base = js.s.model(j.model); j.base == nil {
			e := errorWithStatus(http.StatusNotFound, "invalid_request_error", "model_not_found",
				"model %q is neither a model this server serves (%s) nor a preset to train from scratch (%s)", j.model, strings.Join(js.s.modelNames(), ", "), presetNames)
			e.Param = strp("model")
			return nil, e
		}
	}

	var seedReq completionRequest
	if err := f.seed(&seedReq); err != nil {
		return nil, err
	}
	j.seed = seedReq.seed
	if err := f.str("suffix", &j.suffix); err != nil {
		return nil, err
	}
	if n := len(j.suffix); n > maxSuffix || strings.IndexFunc(j.suffix, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return nil, badParam("suffix", "invalid_value", "suffix %q must be at most %d letters, digits, '-', '_' or '.': it becomes part of the model's name", j.suffix, maxSuffix)
	}
	if aerr := parseMetadata(f, j); aerr != nil {
		return nil, aerr
	}
	hpFields, prefix, aerr := hyperparameterObject(f)
	if aerr != nil {
		return nil, aerr
	}

	// The dataset and the model's shape: every character of the text
	// must be in the vocabulary of the model fine-tuned.
	text := file.text
	if isPreset {
		vocab, err := minigpt.NewVocab(text)
		if err != nil {
			return nil, badParam("training_file", "invalid_text", "training_file %s: %v", file.id, err)
		}
		j.config = preset(vocab)
		if err := j.config.Validate(); err != nil {
			return nil, badParam("training_file", "invalid_text", "training_file %s: a model of its %d characters cannot be made: %v", file.id, vocab.Size(), err)
		}
		if n := j.config.NumParams(); n > js.cfg.MaxParams {
			return nil, badParam("training_file", "too_many_parameters", "training_file %s has %d distinct characters: the %s model of them would have %d parameters, above this server's limit of %d", file.id, vocab.Size(), j.model, n, js.cfg.MaxParams)
		}
		j.data, err = minigpt.NewDatasetWithVocab(text, vocab, j.config.BlockSize)
		if err != nil {
			return nil, badParam("training_file", "invalid_text", "training_file %s: %v", file.id, err)
		}
	} else {
		j.config = j.base.model.Config()
		if n := j.base.model.NumParams(); n > js.cfg.MaxParams {
			return nil, badParam("model", "too_many_parameters", "model %s has %d parameters, above this server's limit of %d for training", j.model, n, js.cfg.MaxParams)
		}
		if aerr := checkVocabulary(text, file.id, j.base); aerr != nil {
			return nil, aerr
		}
		var err error
		if j.data, err = minigpt.NewDatasetWithVocab(text, j.base.vocab, j.config.BlockSize); err != nil {
			return nil, badParam("training_file", "invalid_text", "training_file %s: %v", file.id, err)
		}
	}
	j.samplePrompt = string([]rune(text)[:1])

	if aerr := js.parseHyperparameters(hpFields, prefix, j); aerr != nil {
		return nil, aerr
	}
	return j, nil
}

// hyperparameterObject returns the job's hyperparameters object, from
// hyperparameters or from OpenAI's method {"type": "supervised",
// "supervised": {"hyperparameters": ...}}, and the prefix its fields are
// named with in errors.
func hyperparameterObject(f fields) (fields, string, *apiError) {
	hpRaw, hasHP := f["hyperparameters"]
	mRaw, hasMethod := f["method"]
	hasHP, hasMethod = hasHP && !isNull(hpRaw), hasMethod && !isNull(mRaw)
	switch {
	case hasHP && hasMethod:
		return nil, "", badParam("method", "invalid_value", "give the hyperparameters once: in hyperparameters or in method.supervised.hyperparameters")
	case hasMethod:
		m, aerr := decodeObject(mRaw)
		if aerr != nil {
			aerr.Param, aerr.Message = strp("method"), "method: "+aerr.Message
			return nil, "", aerr
		}
		for k := range m {
			if k != "type" && k != "supervised" {
				return nil, "", badParam("method."+k, "unsupported_parameter", "method.%s is not supported: only supervised fine-tuning is", k)
			}
		}
		var typ string
		if err := m.str("type", &typ); err != nil {
			err.Param = strp("method.type")
			return nil, "", err
		}
		if typ != "supervised" {
			return nil, "", badParam("method.type", "unsupported_parameter", "method.type %q is not supported: only \"supervised\" (next-character prediction on the text) is", typ)
		}
		raw, ok := m["supervised"]
		if !ok || isNull(raw) {
			return fields{}, "method.supervised.hyperparameters", nil
		}
		sup, aerr := decodeObject(raw)
		if aerr != nil {
			aerr.Param = strp("method.supervised")
			return nil, "", aerr
		}
		for k := range sup {
			if k != "hyperparameters" {
				return nil, "", badParam("method.supervised."+k, "unknown_parameter", "unknown parameter method.supervised.%s", k)
			}
		}
		if raw, ok := sup["hyperparameters"]; ok && !isNull(raw) {
			hp, aerr := decodeObject(raw)
			if aerr != nil {
				aerr.Param = strp("method.supervised.hyperparameters")
				return nil, "", aerr
			}
			return hp, "method.supervised.hyperparameters", nil
		}
		return fields{}, "method.supervised.hyperparameters", nil
	case hasHP:
		hp, aerr := decodeObject(hpRaw)
		if aerr != nil {
			aerr.Param, aerr.Message = strp("hyperparameters"), "hyperparameters: "+aerr.Message
			return nil, "", aerr
		}
		return hp, "hyperparameters", nil
	}
	return fields{}, "hyperparameters", nil
}

// parseHyperparameters resolves hp onto j: the training config is
// cmd/train's defaults with batch_size, the learning rate (the
// multiplier times 3e-3), the steps and the seed set, so that the run is
// the one cmd/train makes with the same flags.
func (js *jobs) parseHyperparameters(hp fields, prefix string, j *job) *apiError {
	name := func(k string) string { return prefix + "." + k }
	for k := range hp {
		if !slices.Contains(hyperparameterFields, k) {
			return badParam(name(k), "unknown_parameter", "unknown parameter %s: the hyperparameters are %s", name(k), strings.Join(hyperparameterFields, ", "))
		}
	}
	tc := minigpt.DefaultTrainConfig()
	h := hyperparameters{batchSize: tc.BatchSize, lrMult: 1}
	// auto reads "auto" (or null) as the default; anything else is checked.
	auto := func(k string) bool {
		raw, ok := hp[k]
		var s string
		return !ok || isNull(raw) || (json.Unmarshal(raw, &s) == nil && s == "auto")
	}
	rename := func(err *apiError, k string) *apiError {
		if err != nil {
			err.Param = strp(name(k))
			err.Message = prefix + "." + err.Message
		}
		return err
	}
	if !auto("batch_size") {
		if err := hp.integer("batch_size", &h.batchSize, 1, js.cfg.MaxBatchSize); err != nil {
			return rename(err, "batch_size")
		}
	}
	if !auto("learning_rate_multiplier") {
		if err := hp.number("learning_rate_multiplier", &h.lrMult, math.SmallestNonzeroFloat64, 100, "in (0, 100]: the learning rate is it times 3e-3"); err != nil {
			return rename(err, "learning_rate_multiplier")
		}
	}
	if !auto("n_epochs") {
		if !auto("steps") {
			return badParam(name("n_epochs"), "invalid_value", "give %s or %s, not both", name("steps"), name("n_epochs"))
		}
		if err := hp.integer("n_epochs", &h.nEpochs, 1, 1000); err != nil {
			return rename(err, "n_epochs")
		}
		// An epoch is as many windows' characters as the training part
		// holds (the windows are drawn at random).
		per := h.batchSize * j.config.BlockSize
		h.steps = (h.nEpochs*len(j.data.Train) + per - 1) / per
		if h.steps > js.cfg.MaxSteps {
			return badParam(name("n_epochs"), "invalid_value", "%s %d over %d training characters in batches of %d × %d is %d steps, above this server's limit of %d", name("n_epochs"), h.nEpochs, len(j.data.Train), h.batchSize, j.config.BlockSize, h.steps, js.cfg.MaxSteps)
		}
	} else if h.steps = min(tc.Steps, js.cfg.MaxSteps); !auto("steps") {
		if err := hp.integer("steps", &h.steps, 1, js.cfg.MaxSteps); err != nil {
			return rename(err, "steps")
		}
	}
	h.evalEvery, h.sampleEvery = max(1, h.steps/20), max(1, h.steps/10)
	if err := hp.integer("eval_every", &h.evalEvery, 1, 1<<30); err != nil {
		return rename(err, "eval_every")
	}
	if err := hp.integer("sample_every", &h.sampleEvery, 0, 1<<30); err != nil {
		return rename(err, "sample_every")
	}
	tc.Steps, tc.BatchSize, tc.Seed, tc.EvalEvery = h.steps, h.batchSize, j.seed, h.evalEvery
	tc.LR *= h.lrMult
	if err := tc.Validate(); err != nil {
		return badParam(prefix, "invalid_value", "%s: %v", prefix, err)
	}
	j.hp, j.tc = h, tc
	return nil
}

// parseMetadata reads OpenAI's metadata: at most 16 string pairs, keys of
// at most 64 characters, values of at most 512.
func parseMetadata(f fields, j *job) *apiError {
	raw, ok := f["metadata"]
	if !ok || isNull(raw) {
		return nil
	}
	var m map[string]string
	if jsonKind(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		return wrongType("metadata", "an object of strings", raw)
	}
	if len(m) > 16 {
		return badParam("metadata", "invalid_value", "metadata has %d pairs, at most 16 are allowed", len(m))
	}
	for k, v := range m {
		if utf8.RuneCountInString(k) > 64 || utf8.RuneCountInString(v) > 512 {
			return badParam("metadata", "invalid_value", "metadata %q: keys have at most 64 characters, values at most 512", k)
		}
	}
	j.metadata = m
	return nil
}

// checkVocabulary refuses a text with a character the model m does not
// know, naming it, its position in characters (from 0), its line and
// column (from 1), and what the model knows.
func checkVocabulary(text, fileID string, m *servedModel) *apiError {
	known := make(map[rune]bool, m.vocab.Size())
	for _, c := range m.vocab.Chars() {
		known[c] = true
	}
	pos, line, col := 0, 1, 1
	for _, c := range text {
		if !known[c] {
			msg := fmt.Sprintf("training_file %s: the character %s at position %d (line %d, column %d) is not in model %s's vocabulary", fileID, quoteChar(c), pos, line, col, m.name)
			if chars := m.vocab.Chars(); len(chars) <= 200 {
				msg += fmt.Sprintf(" %q", string(chars))
			}
			msg += "; fine-tuning keeps the model's characters: remove it, or train from scratch (model \"scratch\")"
			return badParam("training_file", "unknown_character", "%s", msg)
		}
		pos++
		if col++; c == '\n' {
			line, col = line+1, 1
		}
	}
	return nil
}

// lookupJob returns the job named by the path, or the error to send.
func (s *Server) lookupJob(r *http.Request) (*jobs, *job, *apiError) {
	js := s.jobs
	if js == nil {
		return nil, nil, trainingOff()
	}
	id := r.PathValue("job")
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.id == id {
			return js, j, nil
		}
	}
	return nil, nil, errorWithStatus(http.StatusNotFound, "invalid_request_error", "fine_tuning_job_not_found",
		"fine-tuning job %q does not exist (GET /v1/fine_tuning/jobs lists the ones this server remembers)", id)
}

// serveListJobs lists the jobs, newest first: GET /v1/fine_tuning/jobs.
func (s *Server) serveListJobs(w http.ResponseWriter, r *http.Request) {
	js := s.jobs
	if js == nil {
		writeError(w, trainingOff())
		return
	}
	q, aerr := parseListQuery(r, 20)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	js.mu.Lock()
	items := make([]jobJSON, 0, len(js.list))
	for i := len(js.list) - 1; i >= 0; i-- {
		items = append(items, js.list[i].json())
	}
	js.mu.Unlock()
	writeJSON(w, page(items, q, func(j jobJSON) string { return j.ID }))
}

// serveJob describes a job: GET /v1/fine_tuning/jobs/{job}.
func (s *Server) serveJob(w http.ResponseWriter, r *http.Request) {
	js, j, aerr := s.lookupJob(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	js.mu.Lock()
	o := j.json()
	js.mu.Unlock()
	writeJSON(w, o)
}

// errCancelled is the cause of a job cancelled through the API.
var errCancelled = errors.New("cancelled")

// serveCancelJob cancels a job: POST /v1/fine_tuning/jobs/{job}/cancel,
// with no body (as OpenAI's clients send it) or an empty JSON object. A
// queued job is cancelled at once; a running one stops at the end of its
// step, and the answer waits for that, so that it shows the job
// cancelled. Cancelling a cancelled job answers it again.
func (s *Server) serveCancelJob(w http.ResponseWriter, r *http.Request) {
	js, j, aerr := s.lookupJob(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := js.readCancelBody(w, r); aerr != nil {
		writeError(w, aerr)
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
		writeError(w, errorWithStatus(http.StatusBadRequest, "invalid_request_error", "job_finished", "fine-tuning job %s has already %s: only a queued or running job can be cancelled", j.id, st))
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
	writeJSON(w, o)
}

// readCancelBody accepts no body, or an empty JSON object: a bodiless
// POST from a page on another site is refused (see crossSite).
func (js *jobs) readCancelBody(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := readBody(w, r, 4<<10)
	if aerr != nil {
		return aerr
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return js.crossSite(r)
	}
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return errorWithStatus(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"Content-Type %q is not supported: send no body, or {} as application/json", ct)
	}
	f, aerr := decodeObject(body)
	if aerr != nil {
		return aerr
	}
	for k := range f {
		return badParam(k, "unknown_parameter", "unknown parameter %q: cancelling takes no parameters", k)
	}
	return nil
}

// finish ends j with status and err (js.mu held).
func (js *jobs) finish(j *job, status string, err *jobErrorJSON) {
	j.status, j.err, j.finished = status, err, time.Now().Unix()
	j.data = nil
	close(j.done)
}

// event appends an event to j's list and wakes its streams (js.mu held).
func (js *jobs) event(j *job, level, typ, message string, data any) {
	j.events = append(j.events, event{seq: len(j.events) + 1, created: time.Now().Unix(), level: level, typ: typ, message: message, data: data})
	close(j.changed)
	j.changed = make(chan struct{})
}
