package main

// This file holds what serve says about itself: -h by purpose, with an
// example a group, and its exit-status rule.

import "example.org/minigpt/cmd/internal/cli"

// command is serve's -h and -version.
var command = cli.Command{
	Name: "serve",
	Summary: `Serves MiniGPT models over HTTP: OpenAI's completions and chat completions
APIs under /v1/ (streaming included), the model list, health, Prometheus
metrics, and the playground at /. Every model generates through one batch:
requests join and leave it between tokens, and each gets exactly the text it
would get alone.
SIGINT or SIGTERM drains: requests in progress may finish for up to
-drain-timeout, then end as -request-timeout ends them.`,
	Groups: []cli.Group{{
		Title:   "What to serve, and where",
		Flags:   []string{"model", "chat-template", "addr"},
		Example: []string{"-model", "shakespeare.ckpt", "-addr", "127.0.0.1:8081"},
	}, {
		Title:   "Who may call it",
		Flags:   []string{"api-key", "cors-origin", "allowed-hosts"},
		Example: []string{"-addr", ":8080", "-api-key", "secret"},
	}, {
		Title:   "How much at once",
		Flags:   []string{"slots", "queue", "queue-timeout", "max-inflight"},
		Example: []string{"-slots", "64", "-queue", "128"},
	}, {
		Title:   "What one request may ask for",
		Flags:   []string{"max-body", "max-tokens", "max-prompt", "max-choices", "max-response"},
		Example: []string{"-max-tokens", "512", "-max-choices", "4"},
	}, {
		Title:   "Timeouts",
		Flags:   []string{"request-timeout", "write-timeout", "header-timeout", "drain-timeout"},
		Example: []string{"-request-timeout", "30s", "-drain-timeout", "5s"},
	}, {
		Title:   "Training jobs (off by default: training is the expensive operation)",
		Flags:   []string{"training", "train-dir", "train-max-file", "train-max-steps", "train-max-params", "train-queue"},
		Example: []string{"-training", "-train-dir", "."},
	}, {
		Title:   "Logging",
		Flags:   []string{"log"},
		Example: []string{"-log"},
	}},
	Notes: `The embedded Lantern Bay model is always served, as "lanternbay", and run
from the repository's root, so is the shipped models/shakespeare.ckpt, as
"shakespeare" (a -model of that name takes its place). Bound to
loopback (the default), the server accepts only loopback Host names
(against DNS rebinding); on any other address, set -api-key.
docs/serving.md is the API reference.`,
	Exit: cli.ExitStatus{
		Done:        "stopped by SIGINT or SIGTERM after every request finished",
		Refused:     "a bad flag or value, or a -model checkpoint that cannot be loaded; nothing was served",
		Failed:      "the address cannot be listened on, or serving failed",
		Interrupted: "the drain deadline came with requests still running, which ended early",
	},
}
