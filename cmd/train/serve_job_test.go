package main

// A training job of the server (package server, -training) against this
// command: the same text, settings and seed must give the same weights,
// and the same checkpoint file byte for byte.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.org/minigpt"
	"example.org/minigpt/server"
)

// weightsSHA256 hashes parameters as the root package's pinned hashes do.
func weightsSHA256(p []float64) string {
	h := sha256.New()
	var b [8]byte
	for _, x := range p {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestServerJobMatchesTrain runs a job from scratch and a fine-tuning job
// on cmd/serve's server with -train-dir, and this command with the flags
// that mean the same (the job's model "scratch" is the default model,
// learning_rate_multiplier m is -lr m×3e-3, "lanternbay" is
// models/lanternbay.ckpt, the embedded model): the weights' SHA-256 and
// the checkpoint files are equal.
func TestServerJobMatchesTrain(t *testing.T) {
	dir := t.TempDir()
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Models: []server.Model{{Name: "lanternbay", Model: m, Vocab: v}}, Training: &server.Training{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	call := func(method, path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return out
	}
	text := strings.Repeat("the gulls sleep on the harbour wall. the keeper counts them. ", 12)
	corpus := filepath.Join(dir, "gulls.txt")
	if err := os.WriteFile(corpus, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"purpose": "fine-tune", "filename": "gulls.txt", "content": text})
	file := call("POST", "/v1/files", string(body))["id"].(string)

	for _, tc := range []struct {
		name, job string
		flags     []string
	}{
		{"from scratch",
			`{"model":"scratch","training_file":"` + file + `","seed":11,"hyperparameters":{"steps":25,"batch_size":6,"learning_rate_multiplier":0.5,"eval_every":5}}`,
			[]string{"-corpus", corpus, "-seed", "11", "-steps", "25", "-batch", "6", "-lr", "1.5e-3", "-eval-every", "5"}},
		{"fine-tuning the embedded model",
			`{"model":"lanternbay","training_file":"` + file + `","seed":3,"hyperparameters":{"steps":15,"batch_size":4,"eval_every":3}}`,
			[]string{"-init-from", filepath.Join("..", "..", "models", "lanternbay.ckpt"), "-corpus", corpus, "-seed", "3", "-steps", "15", "-batch", "4", "-eval-every", "3"}},
		{"Lantern Bay from scratch",
			`{"model":"scratch","training_file":"file-lanternbay","seed":42,"hyperparameters":{"steps":10,"eval_every":10}}`,
			[]string{"-steps", "10", "-eval-every", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := call("POST", "/v1/fine_tuning/jobs", tc.job)["id"].(string)
			var job map[string]any
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				job = call("GET", "/v1/fine_tuning/jobs/"+id, "")
				if job["status"] != "queued" && job["status"] != "running" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job still %v", job["status"])
				}
			}
			if job["status"] != "succeeded" {
				t.Fatalf("job: %v", job)
			}
			jobFile := filepath.Join(dir, job["checkpoint_file"].(string))
			out := filepath.Join(t.TempDir(), "train.ckpt")
			if _, stderr, err := runTrain(context.Background(), append(tc.flags, "-out", out)...); err != nil {
				t.Fatalf("train: %v\n%s", err, stderr)
			}
			fromJob, fromTrain := load(t, jobFile), load(t, out)
			if a, b := weightsSHA256(fromJob.Model.Params()), weightsSHA256(fromTrain.Model.Params()); a != b {
				t.Errorf("weights SHA-256: job %s, cmd/train %s", a, b)
			}
			a, _ := os.ReadFile(jobFile)
			b, _ := os.ReadFile(out)
			if !bytes.Equal(a, b) {
				t.Errorf("the checkpoints differ (%d and %d bytes)", len(a), len(b))
			}
		})
	}
}
