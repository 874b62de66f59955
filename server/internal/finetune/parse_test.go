package finetune

// A job's request: every field and its refusal, the defaults, n_epochs,
// metadata, OpenAI's method object, and the methods each route takes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"example.org/minigpt"
)

func TestJobRefusals(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *testConfig) {
		c.MaxSteps = 100
		c.MaxBatchSize = 16
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
		{"steps at int64's top", job(`"steps":9223372036854775807`), 400, "hyperparameters.steps", "9223372036854775807 is out of range: it must be in [1, 100]"},
		{"steps past int64", job(`"steps":92233720368547758070`), 400, "hyperparameters.steps", "is out of range: it must be in [1, 100]"},
		{"steps 2^62", job(`"steps":4611686018427387904`), 400, "hyperparameters.steps", "4611686018427387904 is out of range"},
		{"steps and n_epochs", job(`"steps":10,"n_epochs":2`), 400, "hyperparameters.n_epochs", "not both"},
		{"n_epochs 0", job(`"n_epochs":0`), 400, "hyperparameters.n_epochs", "[1, 1000]"},
		{"n_epochs too many steps", job(`"n_epochs":10,"batch_size":1`), 400, "hyperparameters.n_epochs", "9018 training characters in batches of 1 × 32 is 2819 steps, above this server's limit of 100"},
		{"eval_every 0", job(`"eval_every":0`), 400, "hyperparameters.eval_every", "[1, 1073741824]"},
		{"sample_every -1", job(`"sample_every":-1`), 400, "hyperparameters.sample_every", "[0, 1073741824]"},
		{"method type", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"dpo"}}`, 400, "method.type", `"dpo" is not supported`},
		{"method and hyperparameters", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"supervised"},"hyperparameters":{}}`, 400, "method", "give the hyperparameters once"},
		{"method hyperparameter", `{"model":"scratch","training_file":"file-lanternbay","method":{"type":"supervised","supervised":{"hyperparameters":{"steps":0}}}}`, 400, "method.supervised.hyperparameters.steps", "[1, 100]"},
		{"character outside the vocabulary", `{"model":"lanternbay","training_file":"` + upper + `"}`, 400, "training_file", `the character 'T' (U+0054) at character 960 (counting from 0) is not in model lanternbay's vocabulary " .abcdefghiklmnoprstuvwy"; fine-tuning keeps the model's characters`},
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
	_, small := newTrainingServer(t, func(c *testConfig) { c.MaxParams = 104_900 })
	wide := uploadID(t, small, strings.Repeat("abcdefghijklmnopqrstuvwxyz", 20))
	r := do(t, "POST", small.URL+"/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"`+wide+`"}`)
	if e := r.apiError(t); r.status != 400 || *e.Error.Param != "training_file" || *e.Error.Code != "too_many_parameters" || !strings.Contains(e.Error.Message, "26 distinct characters") {
		t.Errorf("scratch over the cap: %d %s", r.status, r.body)
	}
	_, tiny := newTrainingServer(t, func(c *testConfig) { c.MaxParams = 100_000 })
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
	sm := &baseModel{"m", m, v}
	if e := checkVocabulary("abé\nba\néaXb", "file-x", sm); e == nil || !strings.Contains(e.Message, "'X' (U+0058) at character 9 (counting from 0), line 3, column 3") {
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
