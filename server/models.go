package server

// This file owns the model list: GET /v1/models and /v1/models/{model}.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// modelJSON is OpenAI's model object, with minigpt's shape and vocabulary
// as extensions (a client needs the vocabulary for logit_bias, whose keys
// are token ids).
type modelJSON struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	OwnedBy           string   `json:"owned_by"`
	SystemFingerprint string   `json:"system_fingerprint"`
	ContextLength     int      `json:"context_length"` // the block size; longer prompts slide
	Parameters        int      `json:"parameters"`
	Layers            int      `json:"layers"`
	EmbedDim          int      `json:"embed_dim"`
	Heads             int      `json:"heads"`
	Vocab             []string `json:"vocab"` // token id -> character
}

func (m *servedModel) json() modelJSON {
	c := m.model.Config()
	vocab := make([]string, 0, c.VocabSize)
	for _, r := range m.vocab.Chars() {
		vocab = append(vocab, string(r))
	}
	return modelJSON{
		ID: m.name, Object: "model", Created: m.created, OwnedBy: "minigpt",
		SystemFingerprint: m.fingerprint, ContextLength: c.BlockSize,
		Parameters: m.model.Config().NumParams(), Layers: c.Layers, EmbedDim: c.EmbedDim, Heads: c.Heads,
		Vocab: vocab,
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// serveModels lists the models: GET /v1/models.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	list := struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}{Object: "list", Data: []modelJSON{}}
	for _, m := range slices.Concat(s.models, s.jobs.tunedModels()) {
		list.Data = append(list.Data, m.json())
	}
	writeJSON(w, list)
}

// serveModel describes one model: GET /v1/models/{model}.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	m := s.model(name)
	if m == nil {
		e := errorWithStatus(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model %q does not exist: this server has %s", name, strings.Join(s.modelNames(), ", "))
		e.Param = strp("model")
		writeError(w, e)
		return
	}
	writeJSON(w, m.json())
}
