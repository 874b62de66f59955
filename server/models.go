package server

// This file owns the served models: what the server keeps of each, the
// models given and the fine-tuned ones, the "model" of a request, and
// GET /v1/models and /v1/models/{model}.

import (
	"net/http"
	"slices"
	"strings"
	"text/template"

	"example.org/minigpt"
	"example.org/minigpt/server/internal/api"
)

// servedModel is a Model with what the server derives from it once.
type servedModel struct {
	name        string
	model       *minigpt.Model
	lib         *minigpt.Vocab // the vocabulary, for the library
	vocab       *vocabulary    // the vocabulary, for responses (vocab.go)
	config      minigpt.Config // the model's shape
	params      int            // its parameters
	created     int64
	fingerprint string             // system_fingerprint: a hash of the weights and vocabulary
	chat        *template.Template // makes a chat completion's prompt (chat.go)
	engine      *engine
	rows        modelRows // its batch's rows taken and waited for (Server.slots)
}

// model returns the served model called name, given or fine-tuned, or
// nil.
func (s *Server) model(name string) *servedModel {
	for _, m := range s.models {
		if m.name == name {
			return m
		}
	}
	s.tunedMu.Lock()
	defer s.tunedMu.Unlock()
	for _, m := range s.tuned {
		if m.name == name {
			return m
		}
	}
	return nil
}

// servedModels returns every model served: those given, then the
// fine-tuned ones, oldest first.
func (s *Server) servedModels() []*servedModel {
	s.tunedMu.Lock()
	defer s.tunedMu.Unlock()
	return slices.Concat(s.models, s.tuned)
}

// requestModel is the served model a request's "model" field names, the
// first model when it names none, or a 404 that lists the models there are.
func (s *Server) requestModel(f api.Fields) (*servedModel, *api.Error) {
	name := ""
	if err := f.Str("model", &name); err != nil {
		return nil, err
	}
	if name == "" {
		return s.models[0], nil
	}
	if m := s.model(name); m != nil {
		return m, nil
	}
	e := api.NewError(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"model %q does not exist: this server has %s", name, strings.Join(s.modelNames(), ", "))
	e.Param = api.Ptr("model")
	return nil, e
}

func (s *Server) modelNames() []string {
	var names []string
	for _, m := range s.servedModels() {
		names = append(names, m.name)
	}
	return names
}

// modelJSON is OpenAI's model object, with minigpt's shape and vocabulary
// as extensions (a client needs the vocabulary for logit_bias, whose keys
// are token ids).
type modelJSON struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	OwnedBy           string `json:"owned_by"`
	SystemFingerprint string `json:"system_fingerprint"`
	ContextLength     int    `json:"context_length"` // the block size, in tokens; longer prompts slide
	Parameters        int    `json:"parameters"`
	Layers            int    `json:"layers"`
	EmbedDim          int    `json:"embed_dim"`
	Heads             int    `json:"heads"`
	// Tokenizer is "char" (a token is a character) or "bpe" (byte-level
	// BPE: a token is bytes, several characters or part of one), with
	// VocabSize tokens; TokenizerDescription says it in words.
	Tokenizer            string   `json:"tokenizer"`
	VocabSize            int      `json:"vocab_size"`
	TokenizerDescription string   `json:"tokenizer_description"`
	Vocab                []string `json:"vocab"` // token id -> its form: its text, or "bytes:\xNN..." for part of a character
}

func (m *servedModel) json() modelJSON {
	c := m.config
	return modelJSON{
		ID: m.name, Object: "model", Created: m.created, OwnedBy: "minigpt",
		SystemFingerprint: m.fingerprint, ContextLength: c.BlockSize,
		Parameters: m.params, Layers: c.Layers, EmbedDim: c.EmbedDim, Heads: c.Heads,
		Tokenizer: m.vocab.kind, VocabSize: m.vocab.size(), TokenizerDescription: m.vocab.describe,
		Vocab: m.vocab.display,
	}
}

// serveModels lists the models: GET /v1/models.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	list := struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}{Object: "list", Data: []modelJSON{}}
	for _, m := range s.servedModels() {
		list.Data = append(list.Data, m.json())
	}
	api.WriteJSON(w, list)
}

// serveModel describes one model: GET /v1/models/{model}.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	m := s.model(name)
	if m == nil {
		e := api.NewError(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model %q does not exist: this server has %s", name, strings.Join(s.modelNames(), ", "))
		e.Param = api.Ptr("model")
		api.WriteError(w, e)
		return
	}
	api.WriteJSON(w, m.json())
}
