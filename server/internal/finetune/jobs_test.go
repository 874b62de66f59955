package finetune

// The fine-tuning jobs: a job's life and events, the model it makes,
// reproducibility, cancel, one job at a time, shutdown during a job, the
// models' bound, Dir, divergence and the jobs remembered. (server's
// training_test.go follows a job into the server: its model served,
// completions while it runs, the API key.)

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

	// The model is handed to the host at once, with the shape it trained
	// (server's TestFineTunedModelServed follows it into completions).
	if m := s.model(t, name); m.Config().NumParams() != 104728 || m.Config().BlockSize != 32 {
		t.Errorf("model %s: %d parameters, block size %d", name, m.Config().NumParams(), m.Config().BlockSize)
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
	_, ts := newTrainingServer(t, func(c *testConfig) { c.Queue = 2 })
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
// running one within a step, ends its event stream, refuses new jobs,
// and Ended follows.
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
	start := time.Now()
	s.Shutdown()
	select {
	case <-s.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("the running job did not end within 10 s of Shutdown")
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
	// The jobs, read from the inside, ended (server's TestShutdownStopsJob
	// checks the 503 that follows).
	if r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", quickJob); r.status != 503 {
		t.Errorf("a job after shutdown: %d %s", r.status, r.body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.list {
		if j.status != statusCancelled || (j.id == queued.ID && j.step != 0) {
			t.Errorf("job %s: %s at step %d", j.id, j.status, j.step)
		}
	}
}

// TestFineTunedModelsBoundedAndDeleted: MaxModels bounds the fine-tuned
// models with the jobs pending; DELETE /v1/models/{model} removes one.
func TestFineTunedModelsBoundedAndDeleted(t *testing.T) {
	s, ts := newTrainingServer(t, func(c *testConfig) { c.MaxModels = 1 })
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
	if _, _, ok := s.host.Model(name); ok {
		t.Errorf("the deleted model %s is still served", name)
	}
	createJob(t, ts, quickJob)
}

// TestTrainDir: a succeeded job's model is saved as a full checkpoint in
// Training.Dir, with the served weights; a name already taken is never
// replaced, and fails the job.
func TestTrainDir(t *testing.T) {
	dir := t.TempDir()
	s, ts := newTrainingServer(t, func(c *testConfig) { c.Dir = dir })
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
	_, ts := newTrainingServer(t, func(c *testConfig) {
		c.models = append(c.models, hostModel{"broken", broken, v})
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
	_, ts := newTrainingServer(t, func(c *testConfig) {
		c.MaxJobs = 2
		c.Queue = 1
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
