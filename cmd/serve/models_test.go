package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// modelIDs lists the served models, in order.
func modelIDs(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// complete asks model for a greedy continuation of prompt.
func complete(t *testing.T, url, model, prompt string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 40, "temperature": 0})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct{ Choices []struct{ Text string } }
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 {
		t.Fatalf("%s: %d %s", model, resp.StatusCode, b)
	}
	return r.Choices[0].Text
}

// Run from the repository's root, serve serves its two models by
// default: the embedded Lantern Bay one first, then the shipped
// Shakespeare one, which writes what generate writes with it.
func TestServesTheShippedModels(t *testing.T) {
	t.Chdir("../..")
	s := startServe(t)
	if ids := modelIDs(t, s.url); !slices.Equal(ids, []string{"lanternbay", "shakespeare"}) {
		t.Fatalf("serves %q, want lanternbay and shakespeare", ids)
	}
	c, err := minigpt.LoadCheckpoint("models/shakespeare.ckpt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Model.Complete(context.Background(), c.Vocab, "ROMEO:", minigpt.GenerateOptions{MaxNewTokens: 40, Greedy: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := complete(t, s.url, "shakespeare", "ROMEO:"); got != res[0].Text {
		t.Errorf("shakespeare writes %q, the checkpoint %q", got, res[0].Text)
	}
	if !strings.Contains(s.stdout.String(), "serving lanternbay, shakespeare on http://") {
		t.Errorf("stdout %q", s.stdout.String())
	}
}

// A -model of the shipped model's name takes its place; elsewhere than
// the repository's root only the embedded model is there beside those
// given.
func TestShippedModelGivesWay(t *testing.T) {
	dir := t.TempDir()
	m, v, _ := minigpt.DefaultModel()
	mine := filepath.Join(dir, "shakespeare.ckpt")
	if err := minigpt.SaveCheckpoint(mine, &minigpt.Checkpoint{Model: m, Vocab: v, Step: 1}); err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..")
	s := startServe(t, "-model", mine)
	if ids := modelIDs(t, s.url); !slices.Equal(ids, []string{"shakespeare", "lanternbay"}) {
		t.Fatalf("serves %q, want the -model shakespeare and lanternbay", ids)
	}
	if got, want := complete(t, s.url, "shakespeare", "the "), complete(t, s.url, "lanternbay", "the "); got != want {
		t.Errorf("-model %s is not the one served as shakespeare: %q, want %q", mine, got, want)
	}
	s.stop(t)

	t.Chdir(dir)
	os.Remove(mine)
	s = startServe(t)
	if ids := modelIDs(t, s.url); !slices.Equal(ids, []string{"lanternbay"}) {
		t.Fatalf("outside the repository: serves %q, want lanternbay", ids)
	}
}

// -model takes weights as they come: a bare path names the model after
// the file, a safetensors file is read by its content, and a file of
// neither format is refused with what each starts with.
func TestModelFilesAsTheyCome(t *testing.T) {
	dir := t.TempDir()
	m, v, _ := minigpt.DefaultModel()
	var buf bytes.Buffer
	if err := minigpt.WriteSafetensors(&buf, &minigpt.Checkpoint{Model: m, Vocab: v, Step: 1200}, "F32"); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "bay32.safetensors")
	os.WriteFile(st, buf.Bytes(), 0o644)
	s := startServe(t, "-model", st, "-model", "other="+st)
	if ids := modelIDs(t, s.url); len(ids) < 3 || ids[0] != "bay32" || ids[1] != "other" {
		t.Fatalf("serves %q, want bay32 (named after the file) and other first", ids)
	}
	complete(t, s.url, "bay32", "the ")
	s.stop(t)

	junk := filepath.Join(dir, "junk.ckpt")
	os.WriteFile(junk, []byte("#!/bin/sh\necho not a model\n"), 0o644)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-model", junk}, &out, &errOut)
	code := cli.ExitCode("serve", err, &errOut)
	if code != 2 || !strings.HasPrefix(errOut.String(), "serve: -model "+junk+": bad checkpoint: magic number is \"#!/bin/s\"") ||
		!strings.Contains(errOut.String(), "nor a safetensors file (an 8-byte header length, then '{')") || out.Len() != 0 {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errOut.String(), out.String())
	}
}
