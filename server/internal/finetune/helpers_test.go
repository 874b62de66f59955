package finetune

// Helpers of the jobs API's tests: the API on a test host, requests,
// files, jobs and their events as a client sees them.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"example.org/minigpt"
)

// lanternBay loads the embedded model once for every test.
var lanternBay = sync.OnceValues(func() (*minigpt.Model, *minigpt.Vocab) {
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		panic(err)
	}
	return m, v
})

// hostModel is a model the test host serves.
type hostModel struct {
	name  string
	model *minigpt.Model
	vocab *minigpt.Vocab
}

// testHost is the server the jobs API runs in, as a test needs it: the
// models given (lanternbay, and any the test adds), those the jobs make,
// and yield, called between steps, which waits for nothing by default.
type testHost struct {
	mu    sync.Mutex
	given []hostModel
	tuned []hostModel
	yield func(ctx context.Context)
}

func (h *testHost) Model(name string) (*minigpt.Model, *minigpt.Vocab, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range slices.Concat(h.given, h.tuned) {
		if m.name == name {
			return m.model, m.vocab, true
		}
	}
	return nil, nil, false
}

func (h *testHost) ModelNames() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for _, m := range slices.Concat(h.given, h.tuned) {
		names = append(names, m.name)
	}
	return names
}

func (h *testHost) Serve(name string, m *minigpt.Model, v *minigpt.Vocab) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tuned = append(h.tuned, hostModel{name, m, v})
}

func (h *testHost) Unserve(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tuned = slices.DeleteFunc(h.tuned, func(m hostModel) bool { return m.name == name })
}

func (h *testHost) Yield(ctx context.Context) {
	h.mu.Lock()
	y := h.yield
	h.mu.Unlock()
	if y != nil {
		y(ctx)
	}
}

// testConfig is what a test may set: the limits, more models to serve,
// and the server's options.
type testConfig struct {
	Config
	Options
	models []hostModel
}

// testServer is the jobs API on a mux, with its host.
type testServer struct {
	*Jobs
	host *testHost
}

// model returns the served model called name (the test fails if there
// is none).
func (s *testServer) model(t testing.TB, name string) *minigpt.Model {
	t.Helper()
	m, _, ok := s.host.Model(name)
	if !ok {
		t.Fatalf("no model %q", name)
	}
	return m
}

// newTrainingServer serves the jobs API for the embedded model as
// "lanternbay" (edit adjusts the config before New), shut down when the
// test ends so that no job outlives it.
func newTrainingServer(t testing.TB, edit func(*testConfig)) (*testServer, *httptest.Server) {
	t.Helper()
	m, v := lanternBay()
	c := testConfig{Options: Options{MaxBodyBytes: 1 << 20, WriteTimeout: 10 * time.Second}}
	if edit != nil {
		edit(&c)
	}
	h := &testHost{given: append([]hostModel{{"lanternbay", m, v}}, c.models...)}
	js, err := New(c.Config, h, c.Options)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	js.Routes(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { js.Shutdown(); <-js.Ended() }) // runs before ts.Close: cleanups run last first
	return &testServer{js, h}, ts
}

// response is a decoded HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body is not JSON: %v\n%s", r.status, err, r.body)
	}
	return m
}

// do sends a request with a JSON body and extra headers, and reads the
// whole response.
func do(t testing.TB, method, url, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// errorJSON is the OpenAI error object.
type errorJSON struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (r response) apiError(t testing.TB) errorJSON {
	t.Helper()
	var e errorJSON
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("status %d: body is not an OpenAI error object: %s", r.status, r.body)
	}
	return e
}

// jobView is a job object as a client decodes it.
type jobView struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	Model          string  `json:"model"`
	Status         string  `json:"status"`
	FineTunedModel *string `json:"fine_tuned_model"`
	FinishedAt     *int64  `json:"finished_at"`
	TrainingFile   string  `json:"training_file"`
	TrainedTokens  *int    `json:"trained_tokens"`
	Seed           uint64  `json:"seed"`
	Step           int     `json:"step"`
	CheckpointFile *string `json:"checkpoint_file"`
	Error          *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Hyperparameters struct {
		NEpochs                any     `json:"n_epochs"`
		BatchSize              int     `json:"batch_size"`
		LearningRateMultiplier float64 `json:"learning_rate_multiplier"`
		Steps                  int     `json:"steps"`
		LearningRate           float64 `json:"learning_rate"`
		EvalEvery              int     `json:"eval_every"`
		SampleEvery            int     `json:"sample_every"`
	} `json:"hyperparameters"`
}

func decodeJob(t testing.TB, r response) jobView {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var j jobView
	if err := json.Unmarshal(r.body, &j); err != nil || j.Object != "fine_tuning.job" {
		t.Fatalf("not a job object (%v): %s", err, r.body)
	}
	return j
}

// createJob posts a job and returns it; it must be accepted.
func createJob(t testing.TB, ts *httptest.Server, body string) jobView {
	t.Helper()
	return decodeJob(t, do(t, "POST", ts.URL+"/v1/fine_tuning/jobs", body))
}

func getJob(t testing.TB, ts *httptest.Server, id string) jobView {
	t.Helper()
	return decodeJob(t, do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+id, ""))
}

// waitJob polls a job until its status is one of want, for 60 s at most.
func waitJob(t testing.TB, ts *httptest.Server, id string, want ...string) jobView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := getJob(t, ts, id)
		for _, w := range want {
			if j.Status == w {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 60 s, want %v", id, j.Status, want)
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
		if j.Status != statusRunning && j.Status != statusQueued || time.Now().After(deadline) {
			t.Fatalf("job %s is %s at step %d, waiting for step %d", id, j.Status, j.Step, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// eventView is a job event as a client decodes it.
type eventView struct {
	Object  string `json:"object"`
	ID      string `json:"id"`
	Level   string `json:"level"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Data    struct {
		Step       int      `json:"step"`
		TotalSteps int      `json:"total_steps"`
		TrainLoss  *float64 `json:"train_loss"`
		ValidLoss  *float64 `json:"valid_loss"`
		Sample     *string  `json:"sample"`
	} `json:"data"`
}

type eventList struct {
	Object  string      `json:"object"`
	Data    []eventView `json:"data"`
	HasMore bool        `json:"has_more"`
}

func listEvents(t testing.TB, ts *httptest.Server, id, query string) eventList {
	t.Helper()
	r := do(t, "GET", ts.URL+"/v1/fine_tuning/jobs/"+id+"/events"+query, "")
	if r.status != 200 {
		t.Fatalf("events: status %d: %s", r.status, r.body)
	}
	var l eventList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// allEvents pages through a job's events as the openai SDK does (after =
// the last id of a page, while has_more), and returns them oldest first.
func allEvents(t testing.TB, ts *httptest.Server, id string) []eventView {
	t.Helper()
	var all []eventView
	q := "?limit=7"
	for {
		l := listEvents(t, ts, id, q)
		all = append(all, l.Data...)
		if !l.HasMore {
			break
		}
		q = "?limit=7&after=" + l.Data[len(l.Data)-1].ID
	}
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	return all
}

// streamJobEvents reads a job's event stream to its end (the job must
// end).
func streamJobEvents(t testing.TB, ctx context.Context, ts *httptest.Server, id, query string) []eventView {
	t.Helper()
	evs, err := readEventStream(openEventStream(t, ctx, ts, id, query))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// openEventStream opens a job's event stream and checks its head.
func openEventStream(t testing.TB, ctx context.Context, ts *httptest.Server, id, query string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/fine_tuning/jobs/"+id+"/events?stream=true"+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream: status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), buf.Bytes())
	}
	return resp
}

// readEventStream reads an event stream to its end, which must be
// "data: [DONE]", and closes it. It may run on another goroutine.
func readEventStream(resp *http.Response) ([]eventView, error) {
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	var data []string
	for _, ev := range strings.Split(buf.String(), "\n\n") {
		if ev == "" || strings.HasPrefix(ev, ":") {
			continue // the end, a keep-alive comment
		}
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(d, "\n") {
			return nil, fmt.Errorf("event %q is not one data line", ev)
		}
		data = append(data, d)
	}
	if len(data) == 0 || data[len(data)-1] != "[DONE]" || !strings.HasSuffix(buf.String(), "\n\n") {
		return nil, fmt.Errorf("stream does not end with [DONE]: %q", data)
	}
	var evs []eventView
	for _, d := range data[:len(data)-1] {
		var e eventView
		if err := json.Unmarshal([]byte(d), &e); err != nil {
			return nil, fmt.Errorf("event %s: %v", d, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// upload sends content as OpenAI's multipart upload, with extra headers.
func upload(t testing.TB, ts *httptest.Server, purpose, filename, content string, header ...string) response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if purpose != "" {
		mw.WriteField("purpose", purpose)
	}
	if filename != "" {
		fw, _ := mw.CreateFormFile("file", filename)
		fw.Write([]byte(content))
	}
	mw.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/files", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return response{resp.StatusCode, resp.Header, b.Bytes()}
}

// uploadID uploads text as JSON and returns the file's id.
func uploadID(t testing.TB, ts *httptest.Server, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"purpose": "fine-tune", "filename": "t.txt", "content": text})
	r := do(t, "POST", ts.URL+"/v1/files", string(body))
	if r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	return r.json(t)["id"].(string)
}

// paramsHash is the SHA-256 of parameters as little-endian float64 bits,
// as the root package's pinned hashes (weightsHash) are computed.
func paramsHash(p []float64) string {
	h := sha256.New()
	var b [8]byte
	for _, x := range p {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// tunedParams returns the parameters of the fine-tuned model name.
func tunedParams(t testing.TB, s *testServer, name string) []float64 {
	t.Helper()
	return s.model(t, name).Params()
}
