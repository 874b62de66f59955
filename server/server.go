package server

// This file owns the Server: its configuration, construction, the handler
// chain it serves, and its lifecycle (drain, shutdown, close).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/internal/bpe"
	"example.org/minigpt/server/internal/finetune"
)

// Model is one model the server offers, under a name clients send as
// "model".
type Model struct {
	Name  string
	Model *minigpt.Model
	Vocab *minigpt.Vocab
	// ChatTemplate is the text/template that makes the prompt of a chat
	// completion from its messages: it executes on a value whose
	// .Messages each have .Role, .Content and .Name, and every character
	// it writes must be in the vocabulary. Empty is the default for a
	// model trained on plain text: {{range .Messages}}{{.Content}}{{end}},
	// the contents concatenated, which the reply continues.
	ChatTemplate string
}

// Config configures a Server.
type Config struct {
	// Models are the models offered; the first is used when a request
	// names none. At least one is required, names must be distinct.
	Models []Model
	// APIKey, if not empty, is required as "Authorization: Bearer <key>"
	// (the scheme in any case) on every /v1/ path. The playground page,
	// /health and /metrics stay open.
	APIKey string
	// CORSOrigin, if not empty, is sent as Access-Control-Allow-Origin on
	// /v1/ responses (and preflight requests are answered). Without it
	// browsers on other origins cannot call the API.
	CORSOrigin string
	// AllowedHosts are host names (without port) accepted in the Host
	// header of a request that arrives on a loopback address, besides
	// localhost, *.localhost and loopback IP addresses; any other is
	// refused with 403, so that a web page cannot reach a server on
	// loopback through a name it controls (DNS rebinding). List the names
	// a reverse proxy on the same machine forwards.
	AllowedHosts []string
	// Limits bounds the work; zero fields take DefaultLimits' values.
	Limits Limits
	// Logger receives one line per request; nil logs nothing.
	Logger *slog.Logger
	// Training, if not nil, turns on the fine-tuning jobs API (see
	// Training); nil leaves it off.
	Training *Training
	// GPT2, if not nil, holds GPT-2's published tokenizer files,
	// encoder.json and vocab.bpe (os.DirFS of their directory), which
	// POST /v1/tokenize then offers beside the models' own tokenizers.
	GPT2 fs.FS
}

// Server is an http.Handler serving OpenAI's completions and chat
// completions APIs, the score and tokenize extensions, the model list,
// health, Prometheus metrics and the playground page. Mount
// it at the root of a mux or under a prefix with http.StripPrefix (the
// playground uses relative URLs).
type Server struct {
	models  []*servedModel
	limits  Limits
	slots   *slots
	metrics *metrics
	jobs    *finetune.Jobs // the fine-tuning jobs API; nil when off
	gpt2    *bpe.Tokenizer // GPT-2's tokenizer (Config.GPT2); nil when off
	// compiling holds a token per constraint compiling (guided.go): its
	// capacity is how many may run at once.
	compiling chan struct{}
	handler   http.Handler // the wrapped mux

	tunedMu sync.Mutex
	tuned   []*servedModel // the fine-tuned models the jobs made, oldest first

	draining atomic.Bool // Drain was called: the API answers 503
	// base is the parent of every generation's context: Close cancels it
	// with errClosed, and each generation then ends as its timeout ends it.
	base   context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex    // guards admits and the closing of idle
	admits int           // completion requests admitted and not yet answered
	idle   chan struct{} // closed once draining with nothing admitted

	// Test hooks, nil outside tests: generationStart is called when a
	// request has its rows, before it generates (a test can hold them
	// there); generationDone when its generation returns, with its error.
	generationStart func(context.Context)
	generationDone  func(error)
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("server: no models")
	}
	limits := cfg.Limits.withDefaults()
	if err := limits.validate(); err != nil {
		return nil, err
	}
	var hosts []string
	for _, h := range cfg.AllowedHosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if h == "" || strings.ContainsAny(h, "/:@ \t\r\n") {
			return nil, fmt.Errorf("server: allowed host %q must be a host name without port", h)
		}
		hosts = append(hosts, h)
	}
	s := &Server{limits: limits}
	now := time.Now().Unix()
	for i, m := range cfg.Models {
		switch {
		case m.Name == "" || strings.ContainsAny(m.Name, "/ \t\r\n"):
			return nil, fmt.Errorf("server: model %d: name %q must be non-empty, without spaces or slashes", i, m.Name)
		case m.Model == nil || m.Vocab == nil:
			return nil, fmt.Errorf("server: model %q: no model or no vocabulary", m.Name)
		}
		if err := checkVocab(m); err != nil {
			return nil, fmt.Errorf("server: model %q: %w", m.Name, err)
		}
		if s.model(m.Name) != nil {
			return nil, fmt.Errorf("server: model name %q given twice", m.Name)
		}
		tmpl, err := parseChatTemplate(m.Name, m.ChatTemplate)
		if err != nil {
			return nil, fmt.Errorf("server: model %q: %w", m.Name, err)
		}
		sm := newServedModel(m, now)
		sm.chat = tmpl
		if _, err := sm.engine.batchFor(limits.Slots); err != nil {
			return nil, fmt.Errorf("server: model %q with %d batch rows (Limits.Slots): %w", m.Name, limits.Slots, err)
		}
		s.models = append(s.models, sm)
	}
	var err error
	if cfg.GPT2 != nil {
		if s.gpt2, err = loadGPT2(cfg.GPT2); err != nil {
			return nil, fmt.Errorf("server: GPT-2's tokenizer: %w", err)
		}
	}
	if s.jobs, err = newJobs(s, cfg); err != nil {
		return nil, err
	}
	s.slots = newSlots(limits.Slots, max(limits.Queue, 0), limits.MaxInFlightBytes)
	s.compiling = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))
	s.metrics = newMetrics()
	s.base, s.cancel = context.WithCancelCause(context.Background())
	s.idle = make(chan struct{})
	mux := s.routes()
	// Outermost first: every request is logged and counted, then its Host
	// checked; /v1/ paths get CORS headers (and preflights an answer), are
	// refused while draining, and need the key, before the mux routes
	// them.
	s.handler = chain(jsonMuxErrors(mux),
		logRequests(cfg.Logger, s.metrics, mux),
		checkHost(hosts),
		allowCORS(cfg.CORSOrigin, mux),
		refuseWhileDraining(&s.draining),
		requireAPIKey(cfg.APIKey),
	)
	return s, nil
}

// chain wraps h in the wrappers, the first outermost.
func chain(h http.Handler, wrappers ...func(http.Handler) http.Handler) http.Handler {
	for i := len(wrappers) - 1; i >= 0; i-- {
		h = wrappers[i](h)
	}
	return h
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Drain makes the server refuse new API requests with 503 (and ask each
// client to close its connection) while the ones in progress, and in the
// queue, finish. The server keeps answering on every connection, idle
// keep-alive ones included: close the listener only once Shutdown
// returns.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.jobs.Shutdown() // a training job stops at the end of its step
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteIdle()
}

// Shutdown drains the server and waits for the requests in progress and
// in the queue to finish. If ctx ends first, it calls Close and returns
// ctx's error. Call it on SIGTERM, before http.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	for _, done := range []<-chan struct{}{s.idle, s.jobs.Ended()} {
		select {
		case <-done:
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		}
	}
	return nil
}

// Close drains the server and ends every generation in progress as
// Limits.RequestTimeout ends it: each choice stops as far as it got, with
// finish_reason "length", its usage and, for a stream, "data: [DONE]".
// Queued requests get 503. Close waits until every admitted request has
// been answered (each response's writes are bounded by
// Limits.WriteTimeout).
func (s *Server) Close() {
	s.Drain()
	s.cancel(errClosed)
	<-s.idle
	<-s.jobs.Ended()
}

// admit registers a completion request, unless the server is draining.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.admits++
	return true
}

// leave unregisters an admitted request once it is answered.
func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admits--
	s.noteIdle()
}

// noteIdle closes idle once draining with nothing admitted (s.mu held).
func (s *Server) noteIdle() {
	if s.draining.Load() && s.admits == 0 {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if s.draining.Load() {
		status, code = "draining", http.StatusServiceUnavailable
	}
	busy, queued, _ := s.slots.state()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"status":%q,"slots":%d,"busy":%d,"queued":%d}`+"\n", status, s.limits.Slots, busy, queued)
}
