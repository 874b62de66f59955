// Command serve serves MiniGPT models over HTTP: OpenAI's legacy
// completions API (POST /v1/completions, streaming included), the model
// list, health, Prometheus metrics, and a playground page at /.
//
//	go run ./cmd/serve                                   # the embedded Lantern Bay model on 127.0.0.1:8080
//	go run ./cmd/serve -model shakespeare=shakespeare.ckpt
//	go run ./cmd/serve -addr :8080 -api-key secret       # every interface: set a key
//
// SIGINT or SIGTERM stops accepting requests and lets those in progress
// finish for up to -drain-timeout; then they are cancelled (a second
// signal stops at once). Bad flags exit with status 2, an unreadable
// model or a busy address with status 1.
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
	"strings"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
	"example.org/minigpt/server"
)

func main() { cli.Main("serve", run) }

// embeddedName is the name the embedded Lantern Bay model is served under.
const embeddedName = "lanternbay"

// modelFlags collects repeated -model name=path flags.
type modelFlags []struct{ name, path string }

func (m *modelFlags) String() string {
	var s []string
	for _, f := range *m {
		s = append(s, f.name+"="+f.path)
	}
	return strings.Join(s, ",")
}

func (m *modelFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want name=path, got %q", v)
	}
	if strings.ContainsAny(name, "/ \t") {
		return fmt.Errorf("model name %q must not hold spaces or slashes", name)
	}
	if name == embeddedName {
		return fmt.Errorf("model name %q is the embedded model's", name)
	}
	for _, f := range *m {
		if f.name == name {
			return fmt.Errorf("model name %q given twice", name)
		}
	}
	*m = append(*m, struct{ name, path string }{name, path})
	return nil
}

type options struct {
	addr, apiKey, cors string
	models             modelFlags
	limits             server.Limits
	drain              time.Duration
	headerTimeout      time.Duration
	logRequests        bool
}

func newFlagSet(o *options) *flag.FlagSet {
	d := server.DefaultLimits()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (loopback by default; \":8080\" listens on every interface)")
	fs.Var(&o.models, "model", "serve a checkpoint as `name=path` (repeatable; the first is the default; the embedded model is always served as \"lanternbay\")")
	fs.StringVar(&o.apiKey, "api-key", "", "require \"Authorization: Bearer `key`\" on /v1/ (default: $MINIGPT_API_KEY, or no key)")
	fs.StringVar(&o.cors, "cors-origin", "", "send Access-Control-Allow-Origin: `origin` on /v1/ (default: no CORS)")
	fs.IntVar(&o.limits.Slots, "slots", d.Slots, "generations that run at once")
	fs.IntVar(&o.limits.Queue, "queue", d.Queue, "requests that may wait for a slot (more get 429); 0: none")
	fs.DurationVar(&o.limits.QueueTimeout, "queue-timeout", d.QueueTimeout, "longest wait for a slot (then 429)")
	fs.Int64Var(&o.limits.MaxBodyBytes, "max-body", d.MaxBodyBytes, "largest request body in bytes (413 above)")
	fs.IntVar(&o.limits.MaxTokens, "max-tokens", d.MaxTokens, "largest max_tokens a request may ask for")
	fs.IntVar(&o.limits.MaxPromptChars, "max-prompt", d.MaxPromptChars, "longest prompt, in characters")
	fs.IntVar(&o.limits.MaxChoices, "max-choices", d.MaxChoices, "most choices (prompts × n) in one request")
	fs.DurationVar(&o.limits.RequestTimeout, "request-timeout", d.RequestTimeout, "longest generation of one request (it then ends with finish_reason \"length\")")
	fs.DurationVar(&o.drain, "drain-timeout", 10*time.Second, "on SIGTERM, how long requests in progress may take to finish")
	fs.DurationVar(&o.headerTimeout, "header-timeout", 5*time.Second, "a client must send its request headers within this time (no slowloris)")
	fs.BoolVar(&o.logRequests, "log", false, "log every request to standard error")
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
		{"-max-choices", l.MaxChoices >= 1, "at least 1"}, {"-request-timeout", l.RequestTimeout > 0, "positive"},
		{"-drain-timeout", o.drain > 0, "positive"}, {"-header-timeout", o.headerTimeout > 0, "positive"},
	} {
		if !c.ok {
			return fmt.Errorf("%s: must be %s", c.name, c.rule)
		}
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("-addr %q: %w", o.addr, err)
	}
	return nil
}

// run serves until ctx is cancelled (SIGINT or SIGTERM in main), then
// drains. It prints the address it listens on to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	if _, err := cli.Parse(fs, args, "Serves MiniGPT models with OpenAI's completions API and a playground page.", stdout); err != nil {
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
	var models []server.Model
	for _, f := range o.models {
		c, err := minigpt.LoadCheckpoint(f.path)
		if err != nil {
			return fmt.Errorf("-model %s: %w", f.name, err)
		}
		models = append(models, server.Model{Name: f.name, Model: c.Model, Vocab: c.Vocab})
	}
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		return err
	}
	models = append(models, server.Model{Name: embeddedName, Model: m, Vocab: vocab})
	cfg := server.Config{Models: models, APIKey: o.apiKey, CORSOrigin: o.cors, Limits: o.limits}
	if o.logRequests {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler: srv,
		// Slow clients cannot hold a connection: the headers must arrive
		// within -header-timeout and the body within 30 s more; a
		// response (a stream included) may take as long as the longest
		// allowed generation.
		ReadHeaderTimeout: o.headerTimeout,
		ReadTimeout:       o.headerTimeout + 30*time.Second,
		WriteTimeout:      o.limits.QueueTimeout + o.limits.RequestTimeout + 10*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(stderr, "serve: ", 0),
	}
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	fmt.Fprintf(stdout, "serving %s on http://%s (playground at /, API at /v1/)\n", strings.Join(names, ", "), ln.Addr())
	if o.apiKey != "" {
		fmt.Fprintln(stdout, "the API requires Authorization: Bearer <key>")
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "serve: shutting down: finishing requests in progress (up to %v)\n", o.drain)
	srv.Drain()
	dctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		// The deadline passed: stop the generations still running, so
		// their handlers return, and close every connection.
		fmt.Fprintf(stderr, "serve: drain deadline passed: cancelling the requests still running\n")
		srv.Close()
		hs.Close()
		return nil
	}
	srv.Close()
	fmt.Fprintln(stderr, "serve: stopped")
	return nil
}
