package main

// serve -training as a command: its refusals, and a signal while a job
// trains.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt/cmd/internal/cli"
)

func TestTrainingFlagRefusals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-train-dir", t.TempDir()}, "-train-dir saves what training jobs make: give -training too"},
		{[]string{"-training", "-train-dir", filepath.Join(t.TempDir(), "missing")}, "not an existing directory"},
		{[]string{"-training", "-train-dir", file}, "not an existing directory"},
		{[]string{"-training", "-train-max-file", "0"}, "-train-max-file: must be at least 1"},
		{[]string{"-training", "-train-max-steps", "0"}, "-train-max-steps"},
		// Issue 39: a job of this many steps panicked the server.
		{[]string{"-training", "-train-max-steps", "9223372036854775807"}, "-train-max-steps: must be in [1, 1073741824] (2^30: a job must be able to finish)"},
		{[]string{"-training", "-train-max-steps", "1073741825"}, "-train-max-steps: must be in [1, 1073741824]"},
		{[]string{"-training", "-train-max-params", "0"}, "-train-max-params"},
		{[]string{"-training", "-train-queue", "-1"}, "-train-queue: must be >= 0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, tc.args...), &out, &errOut)
		cancel()
		if code := cli.ExitCode("serve", err, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 mentioning %q", tc.args, code, errOut.String(), tc.msg)
		}
	}
}

// TestSignalDuringJob: SIGINT or SIGTERM while a job trains stops the job
// at the end of its step, and the server exits 0 well within the drain
// timeout.
func TestSignalDuringJob(t *testing.T) {
	s := startServe(t, "-training", "-drain-timeout", "5s")
	p := probe{t, s}
	st, body := p.do("POST", "/v1/fine_tuning/jobs", `{"model":"scratch","training_file":"file-lanternbay","hyperparameters":{"steps":5000,"batch_size":4}}`)
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	id := jsonField(t, body, "id")
	waitFor(t, "a few steps", func() bool {
		_, body := p.do("GET", "/v1/fine_tuning/jobs/"+id, "")
		return !strings.Contains(body, `"step":0,`)
	})
	start := time.Now()
	if code := cli.ExitCode("serve", s.stop(t), os.Stderr); code != 0 {
		t.Errorf("exit %d", code)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stopped %v after the signal", d)
	}
	if !strings.Contains(s.stderr.String(), "serve: stopped") {
		t.Errorf("stderr: %s", s.stderr)
	}
}
