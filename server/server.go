package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"example.org/minigpt"
)

// Model is one model the server offers, under a name clients send as
// "model".
type Model struct {
	Name  string
	Model *minigpt.Model
	Vocab *minigpt.Vocab
}

// Limits bound what one request and the whole server may use. A zero field
// takes its value from DefaultLimits.
type Limits struct {
	// Slots is the number of generations that run at once.
	Slots int
	// Queue is the number of requests that may wait for a slot; a request
	// that finds every slot busy and the queue full gets 429. A negative
	// Queue means no queue at all (0 takes the default, as every field).
	Queue int
	// QueueTimeout is how long a request may wait for a slot before it
	// gets 429.
	QueueTimeout time.Duration
	// MaxBodyBytes caps the request body (413 above it).
	MaxBodyBytes int64
	// MaxTokens caps max_tokens.
	MaxTokens int
	// MaxPromptChars caps each prompt's length in characters.
	MaxPromptChars int
	// MaxChoices caps the choices of one request: prompts × n.
	MaxChoices int
	// RequestTimeout bounds one request's generation; a request still
	// generating then ends with finish_reason "length" as far as it got.
	RequestTimeout time.Duration
}

// DefaultLimits returns the limits cmd/serve starts with: one slot per
// processor, a queue four times that, 1 MiB bodies, 4096 tokens, 8192
// prompt characters, 16 choices, 10 s in the queue and 2 minutes of
// generation.
func DefaultLimits() Limits {
	p := runtime.GOMAXPROCS(0)
	return Limits{
		Slots:          p,
		Queue:          4 * p,
		QueueTimeout:   10 * time.Second,
		MaxBodyBytes:   1 << 20,
		MaxTokens:      4096,
		MaxPromptChars: 8192,
		MaxChoices:     16,
		RequestTimeout: 2 * time.Minute,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	pick(&l.Slots, d.Slots)
	pick(&l.Queue, d.Queue)
	pick(&l.MaxTokens, d.MaxTokens)
	pick(&l.MaxPromptChars, d.MaxPromptChars)
	pick(&l.MaxChoices, d.MaxChoices)
	if l.QueueTimeout == 0 {
		l.QueueTimeout = d.QueueTimeout
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.RequestTimeout == 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	return l
}

func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Slots", int64(l.Slots)}, {"MaxBodyBytes", l.MaxBodyBytes},
		{"MaxTokens", int64(l.MaxTokens)}, {"MaxPromptChars", int64(l.MaxPromptChars)},
		{"MaxChoices", int64(l.MaxChoices)}, {"QueueTimeout", int64(l.QueueTimeout)},
		{"RequestTimeout", int64(l.RequestTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("server: limit %s is negative (%d)", f.name, f.v)
		}
	}
	return nil
}

// Config configures a Server.
type Config struct {
	// Models are the models offered; the first is used when a request
	// names none. At least one is required, names must be distinct.
	Models []Model
	// APIKey, if not empty, is required as "Authorization: Bearer <key>"
	// on every /v1/ endpoint. The playground page, /health and /metrics
	// stay open.
	APIKey string
	// CORSOrigin, if not empty, is sent as Access-Control-Allow-Origin on
	// /v1/ responses (and preflight requests are answered). Without it
	// browsers on other origins cannot call the API.
	CORSOrigin string
	// Limits bounds the work; zero fields take DefaultLimits' values.
	Limits Limits
	// Logger receives one line per request; nil logs nothing.
	Logger *slog.Logger
}

// Server is an http.Handler serving OpenAI's legacy completions API, the
// model list, health, Prometheus metrics and the playground page. Mount
// it at the root of a mux or under a prefix with http.StripPrefix (the
// playground uses relative URLs).
type Server struct {
	models  []*servedModel
	apiKey  string
	cors    string
	limits  Limits
	log     *slog.Logger
	slots   *slots
	metrics *metrics

	draining atomic.Bool
	// base is the parent of every generation's context: Close cancels it.
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex     // guards closed and active.Add
	closed bool           // Close was called: no request may enter
	active sync.WaitGroup // requests inside a slot

	// Test hooks, nil outside tests: generationStart is called when a
	// request has its slot, before it generates (a test can hold the slot
	// there); generationDone when its generation returns, with its error.
	generationStart func(context.Context)
	generationDone  func(error)
}

// servedModel is a Model with what the server derives from it once.
type servedModel struct {
	name        string
	model       *minigpt.Model
	vocab       *minigpt.Vocab
	created     int64
	fingerprint string // system_fingerprint: a hash of the weights and vocabulary
	engine      *engine
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
	s := &Server{apiKey: cfg.APIKey, cors: cfg.CORSOrigin, limits: limits, log: cfg.Logger}
	now := time.Now().Unix()
	for i, m := range cfg.Models {
		switch {
		case m.Name == "" || strings.ContainsAny(m.Name, "/ \t\r\n"):
			return nil, fmt.Errorf("server: model %d: name %q must be non-empty, without spaces or slashes", i, m.Name)
		case m.Model == nil || m.Vocab == nil:
			return nil, fmt.Errorf("server: model %q: no model or no vocabulary", m.Name)
		case m.Vocab.Size() != m.Model.Config().VocabSize:
			return nil, fmt.Errorf("server: model %q: vocabulary has %d characters, the model %d", m.Name, m.Vocab.Size(), m.Model.Config().VocabSize)
		case s.model(m.Name) != nil:
			return nil, fmt.Errorf("server: model name %q given twice", m.Name)
		}
		s.models = append(s.models, &servedModel{
			name: m.Name, model: m.Model, vocab: m.Vocab, created: now,
			fingerprint: fingerprint(m.Model, m.Vocab),
			engine:      newEngine(m.Model, m.Vocab),
		})
	}
	s.slots = newSlots(limits.Slots, max(limits.Queue, 0))
	s.metrics = newMetrics()
	s.base, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

func (s *Server) model(name string) *servedModel {
	for _, m := range s.models {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (s *Server) modelNames() []string {
	var names []string
	for _, m := range s.models {
		names = append(names, m.name)
	}
	return names
}

// fingerprint hashes a model's configuration, weights and vocabulary: two
// servers with the same fingerprint and seed return the same text.
func fingerprint(m *minigpt.Model, v *minigpt.Vocab) string {
	h := sha256.New()
	c := m.Config()
	fmt.Fprintf(h, "%d %d %d %d %d %t\n", c.VocabSize, c.BlockSize, c.EmbedDim, c.Heads, c.Layers, c.TiedHead)
	var b [8]byte
	for _, x := range m.Params() {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	h.Write([]byte(string(v.Chars())))
	return "fp_" + hex.EncodeToString(h.Sum(nil)[:8])
}

// randomSeed returns a seed for a request that gave none: 53 random bits,
// so that a JavaScript client can send it back without rounding.
func randomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) & maxSeed
}

// Drain makes the server refuse new API requests with 503 while the ones
// in progress (and in the queue) finish. Call it when shutting down,
// before http.Server.Shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// Close cancels every generation in progress (each ends as if its client
// had gone) and waits for them to return. Use it after a drain deadline
// has passed.
func (s *Server) Close() {
	s.Drain()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.active.Wait()
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	path := s.route(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
		if r.Context().Err() != nil {
			// Nothing was sent and the client is gone (nginx's 499).
			rec.status = 499
		}
	}
	elapsed := time.Since(start)
	s.metrics.request(path, rec.status, elapsed)
	if s.log != nil {
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", elapsed.Round(time.Microsecond))
	}
}

// route dispatches r and returns the route's name for the metrics (never
// the raw path, so that clients cannot grow the label set).
func (s *Server) route(w http.ResponseWriter, r *http.Request) string {
	type route struct {
		methods []string
		serve   func(http.ResponseWriter, *http.Request)
		api     bool // under /v1/: authenticated, CORS
	}
	path := r.URL.Path
	var rt route
	name := path
	switch {
	case path == "/v1/completions":
		rt = route{[]string{"POST"}, s.serveCompletions, true}
	case path == "/v1/models":
		rt = route{[]string{"GET", "HEAD"}, s.serveModels, true}
	case strings.HasPrefix(path, "/v1/models/"):
		name = "/v1/models/{model}"
		rt = route{[]string{"GET", "HEAD"}, s.serveModel, true}
	case path == "/v1/chat/completions":
		rt = route{[]string{"POST"}, s.serveChat, true}
	case path == "/health":
		rt = route{[]string{"GET", "HEAD"}, s.serveHealth, false}
	case path == "/metrics":
		rt = route{[]string{"GET", "HEAD"}, s.serveMetrics, false}
	case path == "/" || strings.HasPrefix(path, "/playground/"):
		if path != "/" {
			name = "/playground/"
		}
		rt = route{[]string{"GET", "HEAD"}, s.servePlayground, false}
	default:
		writeError(w, errorWithStatus(http.StatusNotFound, "invalid_request_error", "unknown_url",
			"unknown path %s %s: this server has POST /v1/completions, GET /v1/models, GET /health, GET /metrics and the playground at /", r.Method, path))
		return "other"
	}
	if rt.api && s.cors != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", s.cors)
		h.Set("Access-Control-Expose-Headers", "Minigpt-Seed, Retry-After")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", strings.Join(rt.methods, ", "))
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return name
		}
	}
	if !slices.Contains(rt.methods, r.Method) {
		w.Header().Set("Allow", strings.Join(rt.methods, ", "))
		writeError(w, errorWithStatus(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"method %s is not allowed on %s: use %s", r.Method, path, strings.Join(rt.methods, " or ")))
		return name
	}
	if rt.api {
		if s.draining.Load() {
			e := errorWithStatus(http.StatusServiceUnavailable, "service_unavailable", "shutting_down", "the server is shutting down and takes no new requests")
			e.retryAfter = 1
			writeError(w, e)
			return name
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="minigpt"`)
			writeError(w, errorWithStatus(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
				"missing or wrong API key: send the header Authorization: Bearer <key>"))
			return name
		}
	}
	rt.serve(w, r)
	return name
}

func (s *Server) authorized(r *http.Request) bool {
	if s.apiKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.apiKey)) == 1
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	writeError(w, errorWithStatus(http.StatusBadRequest, "invalid_request_error", "chat_not_supported",
		"/v1/chat/completions is not supported: a character-level model has no chat format (no roles, no template); send the text to continue to POST /v1/completions"))
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if s.draining.Load() {
		status, code = "draining", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"status":%q,"slots":%d,"busy":%d,"queued":%d}`+"\n", status, s.limits.Slots, s.slots.busy(), s.slots.queued())
}

// statusRecorder remembers the status a handler sent, for the metrics and
// the log, and still lets the handler flush and set deadlines.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client (streaming needs it).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
