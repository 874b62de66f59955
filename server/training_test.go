package server

// The fine-tuning API inside the server (its own tests are in
// internal/finetune): a job's model served at once and deleted, completions
// while a job runs, the API key on its routes, shutdown during a job, and
// the routes with training off.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
)

// quickJob is a job of a few milliseconds a step.
const quickJob = `{"model":"scratch","training_file":"file-lanternbay","seed":7,"hyperparameters":{"steps":20,"batch_size":4,"eval_every":5,"sample_every":10}}`

// longJob runs until it is cancelled or the test ends.
const longJob = `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"steps":5000,"batch_size":4}}`

// newTrainingServer is newTestServer with training on (edit adjusts its
// limits), closed when the test ends so that no job outlives it.
func newTrainingServer(t testing.TB, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	s, ts := newTestServer(t, func(c *Config) {
		c.Training = &Training{}
		if edit != nil {
			edit(c)
		}
	})
	t.Cleanup(s.Close) // runs before ts.Close: cleanups run last first
	return s, ts
}

// jobView is what these tests read of a job object.
type jobView struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	Step           int     `json:"step"`
	FineTunedModel *string `json:"fine_tuned_model"`
}

func decodeJob(t testing.TB, r response) jobView {
	t.Helper()
	var j jobView
	if r.status != 200 || json.Unmarshal(r.body, &j) != nil || j.ID == "" {
		t.Fatalf("not a job: %d %s", r.status, r.body)
	}
	return j
}

func createJob(t testing.TB, ts *httptest.Server, body string) jobView {
	t.Helper()
	return decodeJob(t, do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", body))
}

func getJob(t testing.TB, ts *httptest.Server, id string) jobView {
	t.Helper()
	return decodeJob(t, do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+id, ""))
}

// waitJob polls a job until it has the status want, for 60 s at most.
func waitJob(t testing.TB, ts *httptest.Server, id, want string) jobView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if j := getJob(t, ts, id); j.Status == want {
			return j
		} else if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 60 s, want %s", id, j.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStep polls a running job until it has taken at least n steps.
func waitStep(t testing.TB, ts *httptest.Server, id string, n int) jobView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := getJob(t, ts, id)
		if j.Step >= n {
			return j
		}
		if j.Status != "running" && j.Status != "queued" || time.Now().After(deadline) {
			t.Fatalf("job %s is %s at step %d, waiting for step %d", id, j.Status, j.Step, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestFineTunedModelServed: a succeeded job's model is served at once,
// listed, retrievable, and it completes and scores with its own weights;
// once deleted, it is gone.
func TestFineTunedModelServed(t *testing.T) {
	s, ts := newTrainingServer(t, nil)
	name := *waitJob(t, ts, createJob(t, ts, quickJob).ID, "succeeded").FineTunedModel
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
	res, err := m.model.Complete(context.Background(), m.lib, "the ", minigpt.GenerateOptions{MaxNewTokens: 30, Seed: 1})
	if err != nil || res[0].Text != c.Choices[0].Text {
		t.Errorf("library %q, server %q (%v)", res[0].Text, c.Choices[0].Text, err)
	}
	if r := do(t, "DELETE", ts.URL+"/v1/models/"+name, ""); r.status != 200 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := post(t, ts, `{"model":"`+name+`","prompt":"the "}`); r.status != 404 {
		t.Errorf("a completion on the deleted model: %d", r.status)
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

// TestShutdownStopsJob: Shutdown stops a running job within a step and
// returns; the jobs API then answers 503.
func TestShutdownStopsJob(t *testing.T) {
	s, ts := newTrainingServer(t, nil)
	j := createJob(t, ts, longJob)
	waitStep(t, ts, j.ID, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+j.ID, ""); r.status != 503 {
		t.Errorf("after shutdown: %d", r.status)
	}
}

// TestTrainingOffInServer: without Config.Training the jobs API's routes
// answer 404 training_disabled, and models have no DELETE (405).
func TestTrainingOffInServer(t *testing.T) {
	_, ts := newTestServer(t, nil)
	if r := do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", quickJob); r.status != 404 || *r.apiError(t).Error.Code != "training_disabled" {
		t.Errorf("a job without training: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", ts.URL+"/v1/models/lanternbay", ""); r.status != 405 {
		t.Errorf("DELETE a model without training: %d", r.status)
	}
	m, v := lanternBay()
	if _, err := New(Config{Models: []Model{{Name: "lb", Model: m, Vocab: v}}, Training: &Training{MaxSteps: -1}}); err == nil || !strings.Contains(err.Error(), "MaxSteps is negative") {
		t.Errorf("a bad Training: %v", err)
	}
}
