package finetune

// This file owns the reading of a fine-tuning job's request: every field
// of POST /v1/fine_tuning/jobs and its hyperparameters, checked, each
// refusal a 400 naming the field.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt/internal/textpos"
	"example.org/minigpt/server/internal/api"
)

// parseJob reads and checks a job request, and prepares its dataset.
func (js *Jobs) parseJob(w http.ResponseWriter, r *http.Request) (*job, *api.Error) {
	f, aerr := api.ReadObject(w, r, js.opt.MaxBodyBytes, jobFields, "a fine-tuning job takes "+strings.Join(jobFields, ", "))
	if aerr != nil {
		return nil, aerr
	}
	j := &job{id: api.NewID("ftjob-"), created: time.Now().Unix(), status: statusQueued, done: make(chan struct{}), changed: make(chan struct{})}

	// The fields this server does not do are refused, not ignored.
	if raw, ok := f["validation_file"]; ok && !api.IsNull(raw) {
		return nil, api.BadParam("validation_file", "unsupported_parameter", "validation_file is not supported: the last 10%% of training_file validates, as cmd/train does")
	}
	if raw, ok := f["integrations"]; ok && !api.IsNull(raw) && string(raw) != "[]" {
		return nil, api.BadParam("integrations", "unsupported_parameter", "integrations are not supported")
	}

	if err := f.Str("training_file", &j.trainingFile); err != nil {
		return nil, err
	}
	if j.trainingFile == "" {
		return nil, api.BadParam("training_file", "missing_parameter", "training_file is required: the id of an uploaded file (POST /v1/files), or %s for the built-in Lantern Bay text", builtinFileID)
	}
	js.mu.Lock()
	file := js.file(j.trainingFile)
	js.mu.Unlock()
	if file == nil {
		e := fileNotFound(j.trainingFile, "training_file")
		e.Status = http.StatusBadRequest
		return nil, e
	}

	if err := f.Str("model", &j.model); err != nil {
		return nil, err
	}
	preset, isPreset := presets[j.model]
	switch {
	case j.model == "":
		return nil, api.BadParam("model", "missing_parameter", "model is required: a model this server serves, to fine-tune (%s), or a preset to train from scratch (%s)", strings.Join(js.host.ModelNames(), ", "), presetNames)
	case isPreset:
	default:
		m, v, ok := js.host.Model(j.model)
		if !ok {
			e := api.NewError(http.StatusNotFound, "invalid_request_error", "model_not_found",
				"model %q is neither a model this server serves (%s) nor a preset to train from scratch (%s)", j.model, strings.Join(js.host.ModelNames(), ", "), presetNames)
			e.Param = api.Ptr("model")
			return nil, e
		}
		j.base = &baseModel{j.model, m, v}
	}

	if j.seed, _, aerr = f.Seed(); aerr != nil {
		return nil, aerr
	}
	if err := f.Str("suffix", &j.suffix); err != nil {
		return nil, err
	}
	if n := len(j.suffix); n > maxSuffix || strings.IndexFunc(j.suffix, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return nil, api.BadParam("suffix", "invalid_value", "suffix %q must be at most %d letters, digits, '-', '_' or '.': it becomes part of the model's name", j.suffix, maxSuffix)
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
		vocab, sh, vocabErr, shapeErr := presetShape(preset, text)
		switch {
		case vocabErr != nil:
			return nil, api.BadParam("training_file", "invalid_text", "training_file %s: %v", file.id, vocabErr)
		case shapeErr != nil:
			return nil, api.BadParam("training_file", "invalid_text", "training_file %s: a model of its %d characters cannot be made: %v", file.id, vocabSize(vocab), shapeErr)
		case sh.params > js.cfg.MaxParams:
			return nil, api.BadParam("training_file", "too_many_parameters", "training_file %s has %d distinct characters: the %s model of them would have %d parameters, above this server's limit of %d", file.id, vocabSize(vocab), j.model, sh.params, js.cfg.MaxParams)
		}
		j.shape = sh
		var err error
		if j.data, err = newDataset(text, vocab, sh.config.BlockSize); err != nil {
			return nil, api.BadParam("training_file", "invalid_text", "training_file %s: %v", file.id, err)
		}
	} else {
		j.shape = modelShape(j.base.model)
		if j.shape.params > js.cfg.MaxParams {
			return nil, api.BadParam("model", "too_many_parameters", "model %s has %d parameters, above this server's limit of %d for training", j.model, j.shape.params, js.cfg.MaxParams)
		}
		if aerr := checkVocabulary(text, file.id, j.base); aerr != nil {
			return nil, aerr
		}
		var err error
		if j.data, err = newDataset(text, j.base.vocab, j.shape.config.BlockSize); err != nil {
			return nil, api.BadParam("training_file", "invalid_text", "training_file %s: %v", file.id, err)
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
func hyperparameterObject(f api.Fields) (api.Fields, string, *api.Error) {
	hpRaw, hasHP := f["hyperparameters"]
	mRaw, hasMethod := f["method"]
	hasHP, hasMethod = hasHP && !api.IsNull(hpRaw), hasMethod && !api.IsNull(mRaw)
	switch {
	case hasHP && hasMethod:
		return nil, "", api.BadParam("method", "invalid_value", "give the hyperparameters once: in hyperparameters or in method.supervised.hyperparameters")
	case hasMethod:
		m, aerr := api.DecodeObject(mRaw)
		if aerr != nil {
			aerr.Param, aerr.Message = api.Ptr("method"), "method: "+aerr.Message
			return nil, "", aerr
		}
		for k := range m {
			if k != "type" && k != "supervised" {
				return nil, "", api.BadParam("method."+k, "unsupported_parameter", "method.%s is not supported: only supervised fine-tuning is", k)
			}
		}
		var typ string
		if err := m.Str("type", &typ); err != nil {
			err.Param = api.Ptr("method.type")
			return nil, "", err
		}
		if typ != "supervised" {
			return nil, "", api.BadParam("method.type", "unsupported_parameter", "method.type %q is not supported: only \"supervised\" (next-character prediction on the text) is", typ)
		}
		raw, ok := m["supervised"]
		if !ok || api.IsNull(raw) {
			return api.Fields{}, "method.supervised.hyperparameters", nil
		}
		sup, aerr := api.DecodeObject(raw)
		if aerr != nil {
			aerr.Param = api.Ptr("method.supervised")
			return nil, "", aerr
		}
		for k := range sup {
			if k != "hyperparameters" {
				return nil, "", api.BadParam("method.supervised."+k, "unknown_parameter", "unknown parameter method.supervised.%s", k)
			}
		}
		if raw, ok := sup["hyperparameters"]; ok && !api.IsNull(raw) {
			hp, aerr := api.DecodeObject(raw)
			if aerr != nil {
				aerr.Param = api.Ptr("method.supervised.hyperparameters")
				return nil, "", aerr
			}
			return hp, "method.supervised.hyperparameters", nil
		}
		return api.Fields{}, "method.supervised.hyperparameters", nil
	case hasHP:
		hp, aerr := api.DecodeObject(hpRaw)
		if aerr != nil {
			aerr.Param, aerr.Message = api.Ptr("hyperparameters"), "hyperparameters: "+aerr.Message
			return nil, "", aerr
		}
		return hp, "hyperparameters", nil
	}
	return api.Fields{}, "hyperparameters", nil
}

// parseHyperparameters resolves hp onto j: the training config is
// cmd/train's defaults with batch_size, the learning rate (the
// multiplier times 3e-3), the steps and the seed set, so that the run is
// the one cmd/train makes with the same flags.
func (js *Jobs) parseHyperparameters(hp api.Fields, prefix string, j *job) *api.Error {
	name := func(k string) string { return prefix + "." + k }
	for k := range hp {
		if !slices.Contains(hyperparameterFields, k) {
			return api.BadParam(name(k), "unknown_parameter", "unknown parameter %s: the hyperparameters are %s", name(k), strings.Join(hyperparameterFields, ", "))
		}
	}
	tc := defaultTrainConfig()
	h := hyperparameters{batchSize: tc.BatchSize, lrMult: 1}
	// auto reads "auto" (or null) as the default; anything else is checked.
	auto := func(k string) bool {
		raw, ok := hp[k]
		var s string
		return !ok || api.IsNull(raw) || (json.Unmarshal(raw, &s) == nil && s == "auto")
	}
	rename := func(err *api.Error, k string) *api.Error {
		if err != nil {
			err.Param = api.Ptr(name(k))
			err.Message = prefix + "." + err.Message
		}
		return err
	}
	if !auto("batch_size") {
		if err := hp.Integer("batch_size", &h.batchSize, 1, js.cfg.MaxBatchSize); err != nil {
			return rename(err, "batch_size")
		}
	}
	if !auto("learning_rate_multiplier") {
		if err := hp.Number("learning_rate_multiplier", &h.lrMult, math.SmallestNonzeroFloat64, 100, "in (0, 100]: the learning rate is it times 3e-3"); err != nil {
			return rename(err, "learning_rate_multiplier")
		}
	}
	if !auto("n_epochs") {
		if !auto("steps") {
			return api.BadParam(name("n_epochs"), "invalid_value", "give %s or %s, not both", name("steps"), name("n_epochs"))
		}
		if err := hp.Integer("n_epochs", &h.nEpochs, 1, 1000); err != nil {
			return rename(err, "n_epochs")
		}
		// An epoch is as many windows' characters as the training part
		// holds (the windows are drawn at random).
		per := h.batchSize * j.shape.config.BlockSize
		h.steps = (h.nEpochs*len(j.data.Train) + per - 1) / per
		if h.steps > js.cfg.MaxSteps {
			return api.BadParam(name("n_epochs"), "invalid_value", "%s %d over %d training characters in batches of %d × %d is %d steps, above this server's limit of %d", name("n_epochs"), h.nEpochs, len(j.data.Train), h.batchSize, j.shape.config.BlockSize, h.steps, js.cfg.MaxSteps)
		}
	} else if h.steps = min(tc.Steps, js.cfg.MaxSteps); !auto("steps") {
		if err := hp.Integer("steps", &h.steps, 1, js.cfg.MaxSteps); err != nil {
			return rename(err, "steps")
		}
	}
	h.evalEvery, h.sampleEvery = max(1, h.steps/20), max(1, h.steps/10)
	if err := hp.Integer("eval_every", &h.evalEvery, 1, 1<<30); err != nil {
		return rename(err, "eval_every")
	}
	if err := hp.Integer("sample_every", &h.sampleEvery, 0, 1<<30); err != nil {
		return rename(err, "sample_every")
	}
	tc.Steps, tc.BatchSize, tc.Seed, tc.EvalEvery = h.steps, h.batchSize, j.seed, h.evalEvery
	tc.LR *= h.lrMult
	if err := checkTrainConfig(tc); err != nil {
		return api.BadParam(prefix, "invalid_value", "%s: %v", prefix, err)
	}
	j.hp, j.tc = h, tc
	return nil
}

// parseMetadata reads OpenAI's metadata: at most 16 string pairs, keys of
// at most 64 characters, values of at most 512.
func parseMetadata(f api.Fields, j *job) *api.Error {
	raw, ok := f["metadata"]
	if !ok || api.IsNull(raw) {
		return nil
	}
	var m map[string]string
	if api.Kind(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		return api.WrongType("metadata", "an object of strings", raw)
	}
	if len(m) > 16 {
		return api.BadParam("metadata", "invalid_value", "metadata has %d pairs, at most 16 are allowed", len(m))
	}
	for k, v := range m {
		if utf8.RuneCountInString(k) > 64 || utf8.RuneCountInString(v) > 512 {
			return api.BadParam("metadata", "invalid_value", "metadata %q: keys have at most 64 characters, values at most 512", k)
		}
	}
	j.metadata = m
	return nil
}

// checkVocabulary refuses a text with a character the model m does not
// know, naming it, its position in characters (from 0), its line and
// column (from 1), and what the model knows.
func checkVocabulary(text, fileID string, m *baseModel) *api.Error {
	chars := vocabChars(m.vocab)
	known := make(map[rune]bool, len(chars))
	for _, c := range chars {
		known[c] = true
	}
	pos := 0
	for _, c := range text {
		if !known[c] {
			msg := fmt.Sprintf("training_file %s: the character %s %s is not in model %s's vocabulary", fileID, api.QuoteChar(c), textpos.At(text, pos), m.name)
			if len(chars) <= 200 {
				msg += fmt.Sprintf(" %q", string(chars))
			}
			msg += "; fine-tuning keeps the model's characters: remove it, or train from scratch (model \"scratch\")"
			return api.BadParam("training_file", "unknown_character", "%s", msg)
		}
		pos++
	}
	return nil
}
