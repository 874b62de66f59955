// Command serve serves MiniGPT models over HTTP: OpenAI's legacy
// completions API (POST /v1/completions) and its chat completions (POST
// /v1/chat/completions), streaming included, the model list, health,
// Prometheus metrics, and a playground page at /; with
// -training, also OpenAI's fine-tuning jobs API (POST /v1/files,
// /v1/fine_tuning/jobs), whose models are served as soon as they are
// trained.
//
//	go run ./cmd/serve                                # Lantern Bay and Shakespeare on 127.0.0.1:8080
//	go run ./cmd/serve -model shakespeare.ckpt        # served as "shakespeare"
//	go run ./cmd/serve -addr :8080 -api-key secret    # every interface: set a key
//	go run ./cmd/serve -training -train-dir tuned     # train in the playground; keep the models in tuned/
//
// SIGINT or SIGTERM drains: new API requests get 503 (on every connection,
// idle keep-alive ones included) while those in progress finish, for up
// to -drain-timeout; then every request still running ends as
// -request-timeout ends it, and the server stops (a second signal kills
// at once). The exit status follows the rule of every minigpt command
// (see command.Exit).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/server"
)

func main() { cli.Main("serve", run) }

// embeddedName is the name the embedded Lantern Bay model is served under.
const embeddedName = "lanternbay"

// The shipped Shakespeare model (docs/training.md), served beside the
// embedded one when serve runs from the repository's root: 6.5 MB is too
// much to embed in every binary that links the package.
const (
	shippedName = "shakespeare"
	shippedPath = "models/shakespeare.ckpt"
)

// modelFlags collects repeated -model flags: name=path, or a bare path
// that names the model after its file.
type modelFlags []struct{ name, path, arg string } // arg: the value as given

func (m *modelFlags) String() string {
	var s []string
	for _, f := range *m {
		s = append(s, f.name+"="+f.path)
	}
	return strings.Join(s, ",")
}

func (m *modelFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	fromFile := !ok
	if fromFile {
		// A bare path: the model is named after the file, without its
		// extension (models/shakespeare.ckpt serves as "shakespeare").
		path = v
		name = strings.TrimSuffix(filepath.Base(v), filepath.Ext(v))
	}
	if name == "" || path == "" {
		return fmt.Errorf("want a path or name=path, got %q", v)
	}
	if strings.ContainsAny(name, "/ \t") {
		if fromFile {
			return fmt.Errorf("the file name %q cannot name a model (it holds spaces): give -model name=%s", name, v)
		}
		return fmt.Errorf("model name %q must not hold spaces or slashes", name)
	}
	if name == embeddedName {
		if fromFile {
			return fmt.Errorf("model name %q (the file's name) is the embedded model's: give -model name=%s", name, v)
		}
		return fmt.Errorf("model name %q is the embedded model's", name)
	}
	for _, f := range *m {
		if f.name == name {
			return fmt.Errorf("model name %q given twice", name)
		}
	}
	*m = append(*m, struct{ name, path, arg string }{name, path, v})
	return nil
}

type options struct {
	addr, apiKey, cors string
	allowedHosts       hostList
	models             modelFlags
	chatTemplates      templateFlags
	limits             server.Limits
	drain              time.Duration
	headerTimeout      time.Duration
	logRequests        bool
	training           bool
	train              server.Training
}

// hostList is the comma-separated -allowed-hosts.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	*h = nil
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, "/:@ \t") {
			return fmt.Errorf("want host names without port, separated by commas, got %q", v)
		}
		*h = append(*h, name)
	}
	return nil
}

func newFlagSet(o *options) *flag.FlagSet {
	d := server.DefaultLimits()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (loopback by default; \":8080\" listens on every interface)")
	fs.Var(&o.models, "model", "serve a checkpoint, as `path` (named after the file: shakespeare.ckpt serves as \"shakespeare\") or name=path (repeatable; the first is the default; the embedded model is always served as \"lanternbay\")")
	fs.Var(&o.chatTemplates, "chat-template", "make chat completions' prompts with the Go text/template in `file` (for every model), or name=file (for one; repeatable), instead of the messages' contents concatenated (docs/serving.md)")
	fs.StringVar(&o.apiKey, "api-key", "", "require \"Authorization: Bearer `key`\" on /v1/ (default: $MINIGPT_API_KEY, or no key)")
	fs.StringVar(&o.cors, "cors-origin", "", "send Access-Control-Allow-Origin: `origin` on /v1/ (default: no CORS)")
	fs.Var(&o.allowedHosts, "allowed-hosts", "comma-separated host `names` also accepted in the Host header of requests arriving on loopback (default: only localhost, *.localhost and loopback addresses, against DNS rebinding)")
	fs.IntVar(&o.limits.Slots, "slots", d.Slots, "rows of each model's batch: the most sequences decoded together, one per sample or beam of a request (larger n or num_beams get 400)")
	fs.IntVar(&o.limits.Queue, "queue", d.Queue, "requests that may wait, in arrival order, for batch rows or room in -max-inflight (more get 429); 0: none")
	fs.DurationVar(&o.limits.QueueTimeout, "queue-timeout", d.QueueTimeout, "longest wait for batch rows (then 429)")
	fs.Int64Var(&o.limits.MaxBodyBytes, "max-body", d.MaxBodyBytes, "largest request body in bytes (413 above)")
	fs.IntVar(&o.limits.MaxTokens, "max-tokens", d.MaxTokens, "largest max_tokens a request may ask for")
	fs.IntVar(&o.limits.MaxPromptChars, "max-prompt", d.MaxPromptChars, "longest prompt, in characters")
	fs.IntVar(&o.limits.MaxChoices, "max-choices", d.MaxChoices, "most choices (prompts × n) in one request")
	fs.Int64Var(&o.limits.MaxResponseBytes, "max-response", d.MaxResponseBytes, "largest response one request may ask for, in bytes, bounded from n, the echoed prompt, max_tokens, logprobs and trace before it runs (400 above)")
	fs.Int64Var(&o.limits.MaxInFlightBytes, "max-inflight", d.MaxInFlightBytes, "most bytes of responses (as -max-response bounds them) generating or being written at once; more wait in the queue")
	fs.DurationVar(&o.limits.RequestTimeout, "request-timeout", d.RequestTimeout, "longest generation of one request (it then ends with finish_reason \"length\"); its response must be written within -write-timeout more")
	fs.DurationVar(&o.limits.WriteTimeout, "write-timeout", d.WriteTimeout, "longest a client may take to accept a write: one that stops reading loses its request")
	fs.DurationVar(&o.drain, "drain-timeout", 10*time.Second, "on SIGINT or SIGTERM, how long requests in progress may take to finish (then they end as -request-timeout ends them)")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 5*time.Second, "a client must send its request headers within this time (no slowloris)")
	fs.BoolVar(&o.logRequests, "log", false, "log every request to standard error")
	t := server.DefaultTraining()
	fs.BoolVar(&o.training, "training", false, "serve the fine-tuning jobs API (POST /v1/files, /v1/fine_tuning/jobs, the playground's Train tab): one job trains at a time, pausing between steps while completions run; off by default, as training is the expensive operation")
	fs.StringVar(&o.train.Dir, "train-dir", "", "with -training, also save each fine-tuned model as a checkpoint in this existing `directory` (never replacing a file), loadable with generate -model")
	fs.Int64Var(&o.train.MaxFileBytes, "train-max-file", t.MaxFileBytes, "with -training, largest training file in bytes")
	fs.IntVar(&o.train.MaxSteps, "train-max-steps", t.MaxSteps, fmt.Sprintf("with -training, most steps of one job (at most %d)", cli.MaxSteps))
	fs.IntVar(&o.train.MaxParams, "train-max-params", t.MaxParams, "with -training, most parameters of a model a job trains")
	fs.IntVar(&o.train.Queue, "train-queue", t.Queue, "with -training, jobs that may wait behind the running one (more get 429); 0: none")
	return fs
}

func (o *options) validate() error {
	l := o.limits
	for _, c := range []struct {
		name string
		ok   bool
		rule string
	}{
		{"-slots", l.Slots >= 1, "at least 1"}, {"-queue", l.Queue >= 0, ">= 0 (0: no queue)"},
		{"-queue-timeout", l.QueueTimeout > 0, "positive"}, {"-max-body", l.MaxBodyBytes >= 1, "at least 1"},
		{"-max-tokens", l.MaxTokens >= 1, "at least 1"}, {"-max-prompt", l.MaxPromptChars >= 1, "at least 1"},
		{"-max-choices", l.MaxChoices >= 1 && l.MaxChoices <= 128, "in [1, 128] (the library generates at most 128 samples together)"},
		{"-max-response", l.MaxResponseBytes >= 1, "at least 1"},
		{"-max-inflight", l.MaxInFlightBytes >= l.MaxResponseBytes, "at least -max-response"},
		{"-request-timeout", l.RequestTimeout > 0, "positive"}, {"-write-timeout", l.WriteTimeout > 0, "positive"},
		{"-drain-timeout", o.drain > 0, "positive"}, {"-header-timeout", o.headerTimeout > 0, "positive"},
		{"-train-max-file", o.train.MaxFileBytes >= 1, "at least 1"},
		{"-train-max-steps", o.train.MaxSteps >= 1 && o.train.MaxSteps <= cli.MaxSteps, fmt.Sprintf("in [1, %d] (2^30: a job must be able to finish)", cli.MaxSteps)},
		{"-train-max-params", o.train.MaxParams >= 1, "at least 1"}, {"-train-queue", o.train.Queue >= 0, ">= 0 (0: none)"},
	} {
		if !c.ok {
			return fmt.Errorf("%s: must be %s", c.name, c.rule)
		}
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("-addr %q: %w", o.addr, err)
	}
	if o.train.Dir != "" {
		if !o.training {
			return fmt.Errorf("-train-dir saves what training jobs make: give -training too")
		}
		if fi, err := os.Stat(o.train.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("-train-dir %s: not an existing directory (create it first)", o.train.Dir)
		}
	}
	return nil
}

// run serves until ctx is cancelled (SIGINT or SIGTERM in main), then
// drains. It prints the address it listens on to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	if _, err := command.Parse(fs, args, stdout); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	if o.apiKey == "" {
		o.apiKey = os.Getenv("MINIGPT_API_KEY")
	}
	if o.limits.Queue == 0 {
		o.limits.Queue = -1 // -queue 0: no queue (server.Limits reads 0 as "the default")
	}
	// Every checkpoint is loaded before anything is served: one that
	// cannot be is a refusal (status 2), as generate and train refuse.
	var models []server.Model
	po := cli.ProgressTo(stderr, false) // loading a large model shows on a terminal
	for _, f := range o.models {
		c, err := cli.LoadCheckpointAs("-model "+f.arg, f.path, po)
		if err != nil {
			return cli.UsageError{Err: err}
		}
		models = append(models, server.Model{Name: f.name, Model: c.Model, Vocab: c.Vocab})
	}
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		return err
	}
	models = append(models, server.Model{Name: embeddedName, Model: m, Vocab: vocab})
	if shipped, err := loadShipped(o.models, po); err != nil {
		return cli.UsageError{Err: err}
	} else if shipped != nil {
		models = append(models, *shipped)
	}
	if err := o.chatTemplates.apply(models); err != nil {
		return cli.UsageError{Err: err}
	}
	cfg := server.Config{Models: models, APIKey: o.apiKey, CORSOrigin: o.cors, AllowedHosts: o.allowedHosts, Limits: o.limits}
	if o.training {
		if o.train.Queue == 0 {
			o.train.Queue = -1 // -train-queue 0: none (server.Training reads 0 as "the default")
		}
		cfg.Training = &o.train
	}
	if o.logRequests {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	srv, err := server.New(cfg)
	if err != nil {
		return cli.UsageError{Err: err}
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	ln = boundedListener{ln}
	hs := &http.Server{
		Handler: srv,
		// Slow clients cannot hold a connection: the headers must arrive
		// within -header-timeout and the body within 30 s more. A
		// completion sets its own write deadlines (-write-timeout per
		// write, -request-timeout in all); this one bounds the rest.
		ReadHeaderTimeout: o.headerTimeout,
		ReadTimeout:       o.headerTimeout + 30*time.Second,
		WriteTimeout:      o.limits.QueueTimeout + o.limits.RequestTimeout + o.limits.WriteTimeout + 10*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(stderr, "serve: ", 0),
	}
	var silent silentConns
	hs.ConnState = silent.track
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	fmt.Fprintf(stdout, "serving %s on http://%s (playground at /, API at /v1/)\n", strings.Join(names, ", "), ln.Addr())
	if o.apiKey != "" {
		fmt.Fprintln(stdout, "the API requires Authorization: Bearer <key>")
	}
	if o.training {
		where := ""
		if o.train.Dir != "" {
			where = "; fine-tuned models are saved in " + o.train.Dir
		}
		fmt.Fprintf(stdout, "training jobs are on (POST /v1/fine_tuning/jobs, the playground's Train tab)%s\n", where)
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "serve: shutting down: finishing requests in progress (up to %v); new ones get 503\n", o.drain)
	// The listener and every connection stay open while the server
	// drains, so that a request on an idle keep-alive connection gets the
	// 503 rather than a closed connection; only then does the HTTP server
	// close them.
	dctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	shut := make(chan bool, 1)
	go func() { shut <- srv.Shutdown(dctx) != nil }()
	var cut bool
	select {
	case cut = <-shut:
	case <-dctx.Done():
		// The requests still running end now, and a client that reads
		// gets its ending at once; one that has stopped reading would hold
		// its handler for -write-timeout, so after a second its
		// connection is closed.
		select {
		case cut = <-shut:
		case <-time.After(min(time.Second, o.limits.WriteTimeout)):
			hs.Close()
			cut = <-shut
		}
	}
	if cut {
		fmt.Fprintf(stderr, "serve: drain deadline passed: the requests still running were ended as -request-timeout ends them\n")
	}
	// Handlers have returned; the HTTP server sends what they wrote and
	// closes the connections.
	hctx, hcancel := context.WithTimeout(context.Background(), o.limits.WriteTimeout)
	defer hcancel()
	silent.close()
	if err := hs.Shutdown(hctx); err != nil {
		hs.Close()
	}
	if cut {
		return fmt.Errorf("%w: stopped at the drain deadline (-drain-timeout %v)", cli.ErrInterrupted, o.drain)
	}
	fmt.Fprintln(stderr, "serve: stopped")
	return nil
}

// loadShipped loads the shipped Shakespeare model if shippedPath is a
// file in the working directory and no -model takes its name; nil if not.
func loadShipped(given modelFlags, po cli.ProgressOut) (*server.Model, error) {
	for _, f := range given {
		if f.name == shippedName {
			return nil, nil
		}
	}
	if fi, err := os.Lstat(shippedPath); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	c, err := cli.LoadCheckpoint("model", shippedPath, po)
	if err != nil {
		return nil, fmt.Errorf("the shipped model: %w", err)
	}
	return &server.Model{Name: shippedName, Model: c.Model, Vocab: c.Vocab}, nil
}

// sendBuffer is the socket send buffer of every connection the server
// accepts. Left to the kernel, it grows to megabytes (4 MB on Linux), so
// a client that never reads would leave a whole stream unread in it and
// hold its rows until the generation ended; bounded, the server's writes
// block once it and the client's receive window are full (about
// 200 KiB on loopback, as measured by TestNonReaderLosesItsRows), and
// the request ends after -write-timeout. Linux doubles the value asked
// for.
const sendBuffer = 64 << 10

// boundedListener sets sendBuffer on each accepted TCP connection.
type boundedListener struct{ net.Listener }

func (l boundedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(sendBuffer)
	}
	return c, err
}

// silentConns are the connections that have sent no request yet (a
// browser's preconnect, a client's spare dial). http.Server.Shutdown waits
// up to 5 s for each before it counts it as idle; at the end of a drain
// they carry nothing, so the stop closes them first.
type silentConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// track is the HTTP server's ConnState hook.
func (s *silentConns) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state != http.StateNew {
		delete(s.conns, c)
		return
	}
	if s.conns == nil {
		s.conns = make(map[net.Conn]bool)
	}
	s.conns[c] = true
}

// close closes every connection that has sent nothing.
func (s *silentConns) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}
