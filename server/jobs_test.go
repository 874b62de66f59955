package server

// The fine-tuning jobs: every field and its refusal, a job's life and
// events, the model it makes, reproducibility, cancel, one job at a time,
// shutdown during a job, completions while a job runs, the API key.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
)

// quickJob is a job of a few milliseconds a step.
const quickJob = `{"model":"scratch","training_file":"file-lanternbay","seed":7,"hyperparameters":{"steps":20,"batch_size":4,"eval_every":5,"sample_every":10}}`

// longJob runs until it is cancelled or the test ends.
const longJob = `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"steps":5000,"batch_size":4}}`

func TestJobRefusals(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *Config) {
		c.Training.MaxSteps = 100
		c.Training.MaxBatchSize = 16
	})
	upper := uploadID(t, ts, strings.Repeat("the lamp keeper walks the wall. ", 30)+"The Quay")
	short := uploadID(t, ts, "the lamp keeper")
	job := func(hp string) string {
		return `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{` + hp + `}}`
	}
	for _, tc := range []struct {
		name   string
		body   string
		status int
		param  string
		want   string
	}{
		{"unknown field", `{"model":"scratch","training_file":"file-lanternbay","epochs":3}`, 400, "epochs", `unknown parameter "epochs"`},
		{"no training_file", `{"model":"scratch"}`, 400, "training_file", "training_file is required"},
		{"unknown file", `{"model":"scratch","training_file":"file-nope"}`, 400, "training_file", `file "file-nope" does not exist`},
		{"training_file type", `{"model":"scratch","training_file":3}`, 400, "training_file", "must be a string"},
		{"validation_file", `{"model":"scratch","training_file":"file-lanternbay","validation_file":"file-lanternbay"}`, 400, "validation_file", "last 10% of training_file"},
		{"integrations", `{"model":"scratch","training_file":"file-lanternbay","integrations":[{"type":"wandb"}]}`, 400, "integrations", "not supported"},
		{"no model", `{"training_file":"file-lanternbay"}`, 400, "model", `preset to train from scratch ("scratch")`},
		{"unknown model", `{"model":"gpt-4o-mini","training_file":"file-lanternbay"}`, 404, "model", `neither a model this server serves (lanternbay) nor a preset`},
		{"suffix", `{"model":"scratch","training_file":"file-lanternbay","suffix":"a b"}`, 400, "suffix", "letters, digits"},
		{"long suffix", `{"model":"scratch","training_file":"file-lanternbay","suffix":"` + strings.Repeat("s", 41) + `"}`, 400, "suffix", "at most 40"},
		{"seed", `{"model":"scratch","training_file":"file-lanternbay","seed":-1}`, 400, "seed", "integer in [0, 2^64)"},
		{"metadata", `{"model":"scratch","training_file":"file-lanternbay","metadata":{"a":1}}`, 400, "metadata", "an object of strings"},
		{"hyperparameters type", `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":3}`, 400, "hyperparameters", "not a JSON object"},
		{"hyperparameter unknown", job(`"epochs":3`), 400, "hyperparameters.epochs", "the hyperparameters are n_epochs"},
		{"batch_size 0", job(`"batch_size":0`), 400, "hyperparameters.batch_size", "hyperparameters.batch_size 0 is out of range: it must be in [1, 16]"},
		{"batch_size above the cap", job(`"batch_size":17`), 400, "hyperparameters.batch_size", "[1, 16]"},
		{"batch_size string", job(`"batch_size":"big"`), 400, "hyperparameters.batch_size", "must be an integer"},
		{"learning_rate_multiplier 0", job(`"learning_rate_multiplier":0`), 400, "hyperparameters.learning_rate_multiplier", "in (0, 100]"},
		{"learning_rate_multiplier 101", job(`"learning_rate_multiplier":101`), 400, "hyperparameters.learning_rate_multiplier", "in (0, 100]"},
		{"steps 0", job(`"steps":0`), 400, "hyperparameters.steps", "[1, 100]"},
		{"steps above the cap", job(`"steps":101`), 400, "hyperparameters.steps", "[1, 100]"},
		{"steps and n_epochs", job(`"steps":10,"n_epochs":2`), 400, "hyperparameters.n_epochs", "not both"},
		{"n_epochs 0", job(`"n_epochs":0`), 400, "hyperparameters.n_epochs", "[1, 1000]"},
		{"n_epochs too many steps", job(`"n_epochs":10,"batch_size":1`), 400, "hyperparameters.n_epochs", "9018 training characters in batches of 1 × 32 is 2819 steps, above this server's limit of 100"},
		{"eval_every 0", job(`"eval_every":0`), 400, "hyperparameters.eval_every", "[1, 1073741824]"},
		{"sample_every -1", job(`"sample_every":-1`), 400, "hyperparameters.sample_every", "[0, 1073741824]"},
		{"method type", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"dpo"}}`, 400, "method.type", `"dpo" is not supported`},
		{"method and hyperparameters", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"supervised"},"hyperparameters":{}}`, 400, "method", "give the hyperparameters once"},
		{"method hyperparameter", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"supervised","supervised":{"hyperparameters":{"steps":0}}}}`, 400, "method.supervised.hyperparameters.steps", "[1, 100]"},
		{"character outside the vocabulary", `{"model":"lanternbay","training_file":"` + upper + `"}`, 400, "training_file", `the character 'T' (U+0054) at position 960 (line 1, column 961) is not in model lanternbay's vocabulary " .abcdefghiklmnoprstuvwy"; fine-tuning keeps the model's characters`},
		{"text too short", `{"model":"scratch","training_file":"` + short + `"}`, 400, "training_file", "block size 32 needs at least 34"},
		{"too short to fine-tune", `{"model":"lanternbay","training_file":"` + short + `"}`, 400, "training_file", "needs at least 34"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", tc.body)
			e := r.apiError(t)
			if r.status != tc.status || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("%d %s\nwant %d, param %q, %q", r.status, r.body, tc.status, tc.param, tc.want)
			}
		})
	}
	// The parameter caps: of the preset for a text's vocabulary, and of
	// the model fine-tuned.
	// The preset has 104,728 parameters for 24 characters, 104,986 for 26.
	_, small := newTrainingServer(t, func(c *Config) { c.Training.MaxParams = 104_900 })
	wide := uploadID(t, small, strings.Repeat("abcdefghijklmnopqrstuvwxyz", 20))
	r := do(t, "POST", small.URL+"/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"`+wide+`"}`)
	if e := r.apiError(t); r.status != 400 || *e.Error.Param != "training_file" || *e.Error.Code != "too_many_parameters" || !strings.Contains(e.Error.Message, "26 distinct characters") {
		t.Errorf("scratch over the cap: %d %s", r.status, r.body)
	}
	_, tiny := newTrainingServer(t, func(c *Config) { c.Training.MaxParams = 100_000 })
	r = do(t, "POST", tiny.URL+"/v1/fine_tuning/jobs", `{"model":"lanternbay","training_file":"file-lanternbay"}`)
	if e := r.apiError(t); r.status != 400 || *e.Error.Param != "model" || !strings.Contains(e.Error.Message, "104728 parameters, above this server's limit of 100000") {
		t.Errorf("fine-tune over the cap: %d %s", r.status, r.body)
	}
	// The body must be JSON.
	req, _ := http.NewRequest("POST", ts.URL+"/v1/fine_tuning/jobs", strings.NewReader(quickJob))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("text/plain: %v %v", resp.StatusCode, err)
	}
	// Nothing refused was queued.
	if l := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs", "").json(t); len(l["data"].([]any)) != 0 {
		t.Errorf("refused jobs listed: %v", l)
	}
}

// TestCheckVocabularyPosition: the refusal of a character a model does
// not know counts characters (not bytes) and lines.
func TestCheckVocabularyPosition(t *testing.T) {
	v, _ := minigpt.NewVocab("ab\né")
	m, _ := minigpt.NewModel(minigpt.Config{VocabSize: 4, BlockSize: 4, EmbedDim: 4, Heads: 1, Layers: 1}, 1)
	sm := newServedModel(Model{Name: "m", Model: m, Vocab: v}, 0)
	if e := checkVocabulary("abé\nba\néaXb", "file-x", sm); e == nil || !strings.Contains(e.Message, "'X' (U+0058) at position 9 (line 3, column 3)") {
		t.Errorf("%v", e)
	}
	if e := checkVocabulary("ab\né", "file-x", sm); e != nil {
		t.Errorf("a known text refused: %v", e)
	}
}

func TestJobDefaultsAndEpochs(t *testing.T) {
	_, ts := newTrainingServer(t, nil)
	// Nothing given: cmd/train's defaults, and a seed chosen and reported.
	j := createJob(t, ts, `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"n_epochs":"auto","batch_size":"auto","learning_rate_multiplier":"auto"}}`)
	h := j.Hyperparameters
	if h.NEpochs != "auto" || h.BatchSize != 32 || h.LearningRateMultiplier != 1 || h.Steps != 1200 || h.LearningRate != 3e-3 || h.EvalEvery != 60 || h.SampleEvery != 120 {
		t.Errorf("defaults: %+v", h)
	}
	if j.Seed == 0 || j.Seed >= 1<<53 {
		t.Errorf("chosen seed %d", j.Seed)
	}
	do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+j.ID+"/cancel", "")
	// n_epochs: an epoch is the training part's characters, in windows
	// of batch_size × 32: 2 × 9018 / (8 × 32) = 70.45, so 71 steps.
	j = createJob(t, ts, `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"supervised","supervised":{"hyperparameters":{"n_epochs":2,"batch_size":8,"learning_rate_multiplier":0.5}}}}`)
	if h := j.Hyperparameters; h.NEpochs != 2.0 || h.Steps != 71 || h.LearningRate != 1.5e-3 || h.BatchSize != 8 {
		t.Errorf("n_epochs 2: %+v", h)
	}
	do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+j.ID+"/cancel", "")
}

func TestJobLifecycle(t *testing.T) {
	s, ts := newTrainingServer(t, nil)
	created := createJob(t, ts, strings.Replace(quickJob, `"seed":7`, `"seed":7,"suffix":"gulls","metadata":{"who":"test"}`, 1))
	if !regexp.MustCompile(`^ftjob-[0-9a-f]{24}$`).MatchString(created.ID) || created.Model != "scratch" || created.TrainingFile != builtinFileID ||
		created.Seed != 7 || created.FineTunedModel != nil || created.FinishedAt != nil || (created.Status != statusQueued && created.Status != statusRunning) {
		t.Errorf("created: %+v", created)
	}
	// The stream, opened at once, follows the job to its end.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streamed := streamJobEvents(t, ctx, ts, created.ID, "")
	j := waitJob(t, ts, created.ID, statusSucceeded)
	name := *j.FineTunedModel
	if !regexp.MustCompile(`^ft:scratch:gulls:[0-9a-f]{8}$`).MatchString(name) || name[len(name)-8:] != created.ID[6:14] {
		t.Errorf("fine_tuned_model %q", name)
	}
	if j.Step != 20 || *j.TrainedTokens != 20*4*32 || j.FinishedAt == nil || j.Error != nil || j.CheckpointFile != nil {
		t.Errorf("succeeded: %+v", j)
	}
	raw := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+j.ID, "").json(t)
	if md := raw["metadata"].(map[string]any); md["who"] != "test" || raw["user_provided_suffix"] != "gulls" || raw["organization_id"] != "minigpt" {
		t.Errorf("job object: %v", raw)
	}

	// The events, paged as the SDK pages them, and streamed: the same.
	evs := allEvents(t, ts, j.ID)
	if len(streamed) != len(evs) {
		t.Fatalf("%d events streamed, %d listed", len(streamed), len(evs))
	}
	var metrics, samples []eventView
	for i, e := range evs {
		if streamed[i].ID != e.ID || e.Object != "fine_tuning.job.event" || !strings.HasPrefix(e.ID, "ftevent-") {
			t.Fatalf("event %d: listed %+v, streamed %+v", i, e, streamed[i])
		}
		switch {
		case e.Type == "metrics":
			metrics = append(metrics, e)
		case e.Data.Sample != nil:
			samples = append(samples, e)
		}
	}
	if len(metrics) != 20 {
		t.Fatalf("%d metrics events", len(metrics))
	}
	for i, e := range metrics {
		step := i + 1
		if e.Data.Step != step || e.Data.TotalSteps != 20 || e.Data.TrainLoss == nil || !(*e.Data.TrainLoss > 0) ||
			(e.Data.ValidLoss != nil) != (step%5 == 0) || !strings.HasPrefix(e.Message, fmt.Sprintf("Step %d/20: training loss=", step)) {
			t.Errorf("metrics %d: %+v", step, e)
		}
	}
	if first, last := *metrics[0].Data.TrainLoss, *metrics[19].Data.TrainLoss; !(last < first) {
		t.Errorf("the loss did not fall: %v → %v", first, last)
	}
	if len(samples) != 2 || samples[0].Data.Step != 10 || samples[1].Data.Step != 20 {
		t.Fatalf("samples: %+v", samples)
	}
	for _, e := range samples {
		if txt := *e.Data.Sample; len([]rune(txt)) != 81 || !strings.HasPrefix(txt, "t") {
			t.Errorf("sample %q: want the first character of the text and 80 more", txt)
		}
	}
	msgs := ""
	for _, e := range evs {
		if e.Type == "message" {
			msgs += e.Message + "\n"
		}
	}
	for _, want := range []string{"Created fine-tuning job: " + j.ID, "Validated training file file-lanternbay: 9018 training and 1002 validation characters",
		"Fine-tuning job started: training the scratch preset from scratch, 104728 parameters, 20 steps of batch 4, learning rate 0.003, seed 7",
		"New fine-tuned model created: " + name, "The job has successfully completed"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("events lack %q:\n%s", want, msgs)
		}
	}
	if l := listEvents(t, ts, j.ID, "?limit=1"); len(l.Data) != 1 || !l.HasMore || l.Data[0].Message != "The job has successfully completed" {
		t.Errorf("the newest event first: %+v", l)
	}
	// A stream from after an event sends the rest.
	if rest := streamJobEvents(t, ctx, ts, j.ID, "&after="+evs[len(evs)-3].ID); len(rest) != 2 || rest[1].ID != evs[len(evs)-1].ID {
		t.Errorf("stream after: %+v", rest)
	}
	for q, param := range map[string]string{"?stream=yes": "stream", "?limit=-1": "limit", "?cursor=x": "cursor"} {
		if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+j.ID+"/events"+q, ""); r.status != 400 || *r.apiError(t).Error.Param != param {
			t.Errorf("events%s: %d %s", q, r.status, r.body)
		}
	}

	// The model is served at once: listed, retrievable, and it completes
	// and scores.
	models := do(t, "GET", ts.URL+"/v1/models", "").json(t)["data"].([]any)
	if len(models) != 2 || models[1].(map[string]any)["id"] != name {
		t.Errorf("models: %v", models)
	}
	if m := do(t, "GET", ts.URL+"/v1/models/"+name, "").json(t); m["parameters"] != 104728.0 || m["context_length"] != 32.0 {
		t.Errorf("model: %v", m)
	}
	c := post(t, ts, `{"model":"`+name+`","prompt":"the ","max_tokens":30,"seed":1}`).completion(t)
	if c.Model != name || len(c.Choices[0].Text) != 30 {
		t.Errorf("completion on %s: %+v", name, c)
	}
	if r := do(t, "POST", ts.URL+"/v1/score", `{"model":"`+name+`","text":"the lamp"}`); r.status != 200 {
		t.Errorf("score on %s: %d %s", name, r.status, r.body)
	}
	// The model generates what the library generates with its weights.
	m := s.model(name)
	res, err := m.model.Complete(context.Background(), m.vocab, "the ", minigpt.GenerateOptions{MaxNewTokens: 30, Seed: 1})
	if err != nil || res[0].Text != c.Choices[0].Text {
		t.Errorf("library %q, server %q (%v)", res[0].Text, c.Choices[0].Text, err)
	}

	// The list, newest first.
	second := createJob(t, ts, quickJob)
	waitJob(t, ts, second.ID, statusSucceeded)
	var l struct {
		Data    []jobView `json:"data"`
		HasMore bool      `json:"has_more"`
	}
	json.Unmarshal(do(t, "GET", ts.URL+"/v1/fine_tuning/jobs", "").body, &l)
	if len(l.Data) != 2 || l.Data[0].ID != second.ID || l.Data[1].ID != j.ID || l.HasMore {
		t.Errorf("list: %+v", l)
	}
	json.Unmarshal(do(t, "GET", ts.URL+"/v1/fine_tuning/jobs?limit=1&after="+second.ID, "").body, &l)
	if len(l.Data) != 1 || l.Data[0].ID != j.ID || l.HasMore {
		t.Errorf("list after: %+v", l)
	}
	if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/ftjob-nope", ""); r.status != 404 || *r.apiError(t).Error.Code != "fine_tuning_job_not_found" {
		t.Errorf("unknown job: %d %s", r.status, r.body)
	}
}

// TestJobReproducible: the same text, settings and seed give the same
// weights, bit for bit, and they are the library's own run (NewModel with
// the seed, NewTrainer with cmd/train's defaults and the job's settings);
// cmd/train's test TestServerJobMatchesTrain checks the command itself. A
// chosen seed, reported, reproduces the job.
func TestJobReproducible(t *testing.T) {
	s, ts := newTrainingServer(t, nil)
	run := func(body string) (jobView, string) {
		j := waitJob(t, ts, createJob(t, ts, body).ID, statusSucceeded)
		return j, paramsHash(tunedParams(t, s, *j.FineTunedModel))
	}
	_, a := run(quickJob)
	_, b := run(quickJob)
	_, other := run(strings.Replace(quickJob, `"seed":7`, `"seed":8`, 1))
	if a != b || a == other {
		t.Errorf("seed 7 twice: %s, %s; seed 8: %s", a, b, other)
	}
	d, err := minigpt.NewDataset(minigpt.LanternBay, nil, 32)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := minigpt.NewModel(minigpt.ConfigFor(d.Vocab), 7)
	tc := minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.Seed, tc.EvalEvery = 20, 4, 7, 5
	tr, err := minigpt.NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if lib := paramsHash(m.Params()); lib != a {
		t.Errorf("the job's weights %s, the library's run %s", a, lib)
	}

	// Fine-tuning: the served model's clone, the text with its vocabulary.
	text := strings.Repeat("the gulls sleep on the wall. ", 40)
	file := uploadID(t, ts, text)
	j, tuned := run(`{"model":"lanternbay","training_file":"` + file + `","hyperparameters":{"steps":10,"batch_size":4}}`)
	base, vocab := lanternBay()
	d, _ = minigpt.NewDataset(text, vocab, 32)
	tc = minigpt.DefaultTrainConfig()
	tc.Steps, tc.BatchSize, tc.Seed, tc.EvalEvery = 10, 4, j.Seed, 1
	m = base.Clone()
	tr, _ = minigpt.NewTrainer(m, d, tc)
	if err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if lib := paramsHash(m.Params()); lib != tuned {
		t.Errorf("fine-tuned weights %s, the library's %s", tuned, lib)
	}
	if _, again := run(fmt.Sprintf(`{"model":"lanternbay","training_file":"%s","seed":%d,"hyperparameters":{"steps":10,"batch_size":4}}`, file, j.Seed)); again != tuned {
		t.Errorf("the reported seed %d does not reproduce the job", j.Seed)
	}
	// The served model is untouched by fine-tuning it.
	if fresh, _, _ := minigpt.DefaultModel(); paramsHash(fresh.Params()) != paramsHash(base.Params()) {
		t.Error("fine-tuning changed the served model")
	}
}

func TestJobCancel(t *testing.T) {
	_, ts := newTrainingServer(t, nil)
	running := createJob(t, ts, longJob)
	queued := createJob(t, ts, longJob)
	waitStep(t, ts, running.ID, 3)
	if getJob(t, ts, queued.ID).Status != statusQueued {
		t.Fatal("the second job is not queued")
	}
	// A queued job is cancelled at once.
	j := decodeJob(t, do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+queued.ID+"/cancel", ""))
	if j.Status != statusCancelled || j.Step != 0 || j.FinishedAt == nil {
		t.Errorf("cancelled queued job: %+v", j)
	}
	// A running one within a step: the answer shows it cancelled.
	start := time.Now()
	j = decodeJob(t, do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+running.ID+"/cancel", "{}"))
	if j.Status != statusCancelled || j.Step < 3 || j.Step >= 5000 || j.FineTunedModel != nil || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled running job after %v: %+v", time.Since(start), j)
	}
	step := j.Step
	time.Sleep(50 * time.Millisecond)
	if j := getJob(t, ts, running.ID); j.Step != step {
		t.Errorf("the job went on after cancel: step %d, then %d", step, j.Step)
	}
	evs := allEvents(t, ts, running.ID)
	if last := evs[len(evs)-1].Message; last != fmt.Sprintf("Fine-tuning job cancelled after step %d of 5000", step) {
		t.Errorf("last event %q", last)
	}
	// Again: the same answer; a finished job cannot be.
	if j := decodeJob(t, do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+running.ID+"/cancel", "")); j.Status != statusCancelled {
		t.Errorf("second cancel: %+v", j)
	}
	done := waitJob(t, ts, createJob(t, ts, quickJob).ID, statusSucceeded)
	for _, tc := range []struct {
		id, body, ct string
		header       []string
		status       int
		want         string
	}{
		{done.ID, "", "", nil, 400, "has already succeeded"},
		{"ftjob-nope", "", "", nil, 404, "does not exist"},
		{running.ID, `{"reason":"x"}`, "application/json", nil, 400, `unknown parameter "reason"`},
		{running.ID, "stop", "text/plain", nil, 415, "send no body, or {}"},
		{running.ID, "", "", []string{"Origin", "https://evil.example"}, 403, "bodiless POST"},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/fine_tuning/jobs/"+tc.id+"/cancel", strings.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		for i := 0; i < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e errorJSON
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("cancel %s %q: %d %q, want %d %q", tc.id, tc.body, resp.StatusCode, e.Error.Message, tc.status, tc.want)
		}
	}
}

// TestOneJobAtATime: one job trains, Queue wait in order, more get 429
// with Retry-After; when the running job ends the next starts.
func TestOneJobAtATime(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *Config) { c.Training.Queue = 2 })
	a, b, c := createJob(t, ts, longJob), createJob(t, ts, longJob), createJob(t, ts, longJob)
	r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", longJob)
	if e := r.apiError(t); r.status != 429 || *e.Error.Code != "too_many_jobs" || r.header.Get("Retry-After") == "" || !strings.Contains(e.Error.Message, "2 are waiting") {
		t.Errorf("fourth job: %d %s", r.status, r.body)
	}
	waitStep(t, ts, a.ID, 1)
	if sb, sc := getJob(t, ts, b.ID), getJob(t, ts, c.ID); sb.Status != statusQueued || sc.Status != statusQueued || sb.Step+sc.Step != 0 {
		t.Errorf("behind the running job: %s %s", sb.Status, sc.Status)
	}
	do(t, "POST", ts.URL+"/v1/fine_tuning/jobs/"+a.ID+"/cancel", "")
	waitStep(t, ts, b.ID, 1)
	if getJob(t, ts, c.ID).Status != statusQueued {
		t.Error("the third job started beside the second")
	}
	if r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", longJob); r.status != 200 {
		t.Errorf("a place in the queue is free again: %d %s", r.status, r.body)
	}
}

// TestShutdownDuringJob: Shutdown cancels the queued jobs, stops the
// running one within a step, ends its event stream, and returns.
func TestShutdownDuringJob(t *testing.T) {
	s, ts := newTrainingServer(t, nil)
	running, queued := createJob(t, ts, longJob), createJob(t, ts, longJob)
	waitStep(t, ts, running.ID, 2)
	type result struct {
		evs []eventView
		err error
	}
	stream := make(chan result, 1)
	resp := openEventStream(t, context.Background(), ts, running.ID, "")
	go func() {
		evs, err := readEventStream(resp)
		stream <- result{evs, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	res := <-stream
	if res.err != nil {
		t.Fatal(res.err)
	}
	evs := res.evs
	if last := evs[len(evs)-1].Message; !strings.HasPrefix(last, "The server is shutting down: the job was cancelled after step") {
		t.Errorf("the stream's last event: %q", last)
	}
	// The API answers 503 now; the jobs, read from the inside, ended.
	if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+running.ID, ""); r.status != 503 {
		t.Errorf("after shutdown: %d", r.status)
	}
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, j := range s.jobs.list {
		if j.status != statusCancelled || (j.id == queued.ID && j.step != 0) {
			t.Errorf("job %s: %s at step %d", j.id, j.status, j.step)
		}
	}
}

// TestConcurrentCompletionsWhileJobRuns: completions are answered while a job
// trains, with the text they have without it; and while a completion is
// in progress the job does not take a step (the one it is in may end), so
// the slots keep the processors.
func TestConcurrentCompletionsWhileJobRuns(t *testing.T) {
	_, quiet := newTestServer(t, nil)
	want := text(t, quiet, `{"prompt":"the ","max_tokens":50,"seed":3}`)

	s, ts := newTrainingServer(t, nil)
	hold, release := make(chan struct{}), make(chan struct{})
	s.generationStart = func(ctx context.Context) {
		select {
		case hold <- struct{}{}:
			<-release
		default:
		}
	}
	j := createJob(t, ts, longJob)
	waitStep(t, ts, j.ID, 2)
	for range 3 {
		if got := text(t, ts, `{"prompt":"the ","max_tokens":50,"seed":3}`); got != want {
			t.Fatalf("during a job: %q, without: %q", got, want)
		}
	}
	// Hold a completion in its slot and watch the steps.
	errc := make(chan error, 1)
	go func() {
		r, err := http.DefaultClient.Do(newPost(context.Background(), ts.URL+"/v1/completions", `{"prompt":"the ","max_tokens":5}`))
		if err == nil {
			r.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-hold:
	case <-time.After(10 * time.Second):
		t.Fatal("the completion never started")
	}
	time.Sleep(20 * time.Millisecond) // the step in progress ends
	before := getJob(t, ts, j.ID).Step
	time.Sleep(300 * time.Millisecond)
	during := getJob(t, ts, j.ID).Step
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	after := waitStep(t, ts, j.ID, during+3).Step
	if during > before+1 {
		t.Errorf("the job took %d steps while a completion held its slot (from %d to %d)", during-before, before, during)
	}
	t.Logf("steps: %d before, %d while a completion ran, then %d", before, during, after)
}

func TestTrainingNeedsTheKey(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *Config) { c.APIKey = "k" })
	for _, rt := range [][2]string{{"POST", "/v1/files"}, {"GET", "/v1/files"}, {"POST", "/v1/fine_tuning/jobs"}, {"GET", "/v1/fine_tuning/jobs"},
		{"GET", "/v1/fine_tuning/jobs/x/events"}, {"POST", "/v1/fine_tuning/jobs/x/cancel"}, {"DELETE", "/v1/models/x"}, {"POST", "/v1/score"}} {
		if r := do(t, rt[0], ts.URL+rt[1], quickJob); r.status != 401 {
			t.Errorf("%s %s without the key: %d", rt[0], rt[1], r.status)
		}
	}
	if r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", quickJob, "Authorization", "Bearer k"); r.status != 200 {
		t.Errorf("with the key: %d %s", r.status, r.body)
	}
}

// TestFineTunedModelsBoundedAndDeleted: MaxModels bounds the fine-tuned
// models with the jobs pending; DELETE /v1/models/{model} removes one.
func TestFineTunedModelsBoundedAndDeleted(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *Config) { c.Training.MaxModels = 1 })
	j := waitJob(t, ts, createJob(t, ts, quickJob).ID, statusSucceeded)
	name := *j.FineTunedModel
	r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", quickJob)
	if e := r.apiError(t); r.status != 429 || *e.Error.Code != "too_many_models" {
		t.Errorf("second model: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", ts.URL+"/v1/models/lanternbay", ""); r.status != 403 {
		t.Errorf("delete a startup model: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", ts.URL+"/v1/models/nope", ""); r.status != 404 {
		t.Errorf("delete an unknown model: %d", r.status)
	}
	d := do(t, "DELETE", ts.URL+"/v1/models/"+name, "").json(t)
	if d["id"] != name || d["deleted"] != true {
		t.Errorf("delete: %v", d)
	}
	if r := post(t, ts, `{"model":"`+name+`","prompt":"the "}`); r.status != 404 {
		t.Errorf("a completion on the deleted model: %d", r.status)
	}
	createJob(t, ts, quickJob)
}

// TestTrainDir: a succeeded job's model is saved as a full checkpoint in
// Training.Dir, with the served weights; a name already taken is never
// replaced, and fails the job.
func TestTrainDir(t *testing.T) {
	dir := t.TempDir()
	s, ts := newTrainingServer(t, func(c *Config) { c.Training.Dir = dir })
	j := waitJob(t, ts, createJob(t, ts, strings.Replace(quickJob, `"seed":7`, `"seed":7,"suffix":"kept"`, 1)).ID, statusSucceeded)
	file := strings.ReplaceAll(*j.FineTunedModel, ":", "-") + ".ckpt"
	if j.CheckpointFile == nil || *j.CheckpointFile != file {
		t.Fatalf("checkpoint_file %v, want %s", j.CheckpointFile, file)
	}
	c, err := minigpt.LoadCheckpoint(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if c.Train == nil || c.Step != 20 || c.Train.Seed != 7 || paramsHash(c.Model.Params()) != paramsHash(tunedParams(t, s, *j.FineTunedModel)) {
		t.Errorf("checkpoint: full %v, step %d, seed %d", c.Train != nil, c.Step, c.Train.Seed)
	}

	// A file already there under the next job's name stays as it is.
	long := strings.Replace(quickJob, `"steps":20`, `"steps":300`, 1)
	next := createJob(t, ts, long)
	taken := filepath.Join(dir, "ft-scratch-"+next.ID[6:14]+".ckpt")
	if err := os.WriteFile(taken, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := waitJob(t, ts, next.ID, statusFailed, statusSucceeded)
	if failed.Status != statusFailed || failed.Error == nil || failed.Error.Code != "checkpoint_not_saved" || failed.FineTunedModel != nil {
		t.Fatalf("job over a taken name: %+v", failed)
	}
	if b, _ := os.ReadFile(taken); string(b) != "mine" {
		t.Errorf("the file was replaced: %q", b)
	}
}

// TestDivergedJobFails: fine-tuning a model whose weights overflow the
// logits makes the first step's loss non-finite: the job fails with
// training_diverged and serves nothing.
func TestDivergedJobFails(t *testing.T) {
	m, v := lanternBay()
	broken := m.Clone()
	for i := range broken.Params() {
		broken.Params()[i] *= 1e300
	}
	_, ts := newTrainingServer(t, func(c *Config) {
		c.Models = append(c.Models, Model{Name: "broken", Model: broken, Vocab: v})
	})
	j := waitJob(t, ts, createJob(t, ts, `{"model":"broken","training_file":"file-lanternbay","hyperparameters":{"steps":5,"batch_size":2}}`).ID, statusFailed, statusSucceeded)
	if j.Status != statusFailed || j.Error == nil || j.Error.Code != "training_diverged" || !strings.Contains(j.Error.Message, "learning_rate_multiplier") || j.FineTunedModel != nil || j.Step != 0 {
		t.Errorf("diverged job: %+v", j)
	}
	evs := allEvents(t, ts, j.ID)
	if last := evs[len(evs)-1]; last.Level != "error" || !strings.HasPrefix(last.Message, "Fine-tuning job failed: ") {
		t.Errorf("last event %+v", last)
	}
}

// TestJobsRemembered: MaxJobs jobs are remembered, the oldest finished
// one forgotten to make room. (MaxJobs holds the running job and the
// queue, so there is always a finished one to forget when the queue has
// room.)
func TestJobsRemembered(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *Config) {
		c.Training.MaxJobs = 2
		c.Training.Queue = 1
	})
	first := waitJob(t, ts, createJob(t, ts, quickJob).ID, statusSucceeded)
	second := waitJob(t, ts, createJob(t, ts, quickJob).ID, statusSucceeded)
	third := createJob(t, ts, longJob)
	if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+first.ID, ""); r.status != 404 {
		t.Errorf("the oldest finished job is still remembered: %d", r.status)
	}
	getJob(t, ts, second.ID)
	waitStep(t, ts, third.ID, 1)
	fourth := createJob(t, ts, longJob) // forgets the second, waits behind the third
	r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", longJob)
	if e := r.apiError(t); r.status != 429 || *e.Error.Code != "too_many_jobs" || !strings.Contains(e.Error.Message, "1 are waiting") {
		t.Errorf("a job behind a full queue: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+second.ID, ""); r.status != 404 {
		t.Errorf("second job: %d", r.status)
	}
	getJob(t, ts, fourth.ID)
}

func TestJobMetadataAndMethods(t *testing.T) {
	_, ts := newTrainingServer(t, nil)
	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprint("k", i)] = "v"
	}
	b, _ := json.Marshal(many)
	for body, want := range map[string]string{
		`{"model":"scratch","training_file":"file-lanternbay","metadata":` + string(b) + `}`:                        "17 pairs, at most 16",
		`{"model":"scratch","training_file":"file-lanternbay","metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`:  "keys have at most 64 characters",
		`{"model":"scratch","training_file":"file-lanternbay","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`: "values at most 512",
	} {
		r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", body)
		if e := r.apiError(t); r.status != 400 || *e.Error.Param != "metadata" || !strings.Contains(e.Error.Message, want) {
			t.Errorf("%.80s: %d %s", body, r.status, r.body)
		}
	}
	for _, rt := range [][2]string{{"PUT", "/v1/fine_tuning/jobs"}, {"DELETE", "/v1/fine_tuning/jobs/x"}, {"GET", "/v1/fine_tuning/jobs/x/cancel"}, {"PATCH", "/v1/files"}} {
		if r := do(t, rt[0], ts.URL+rt[1], ""); r.status != 405 || r.header.Get("Allow") == "" {
			t.Errorf("%s %s: %d, Allow %q", rt[0], rt[1], r.status, r.header.Get("Allow"))
		}
	}
}
