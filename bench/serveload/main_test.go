package main

// serveload against an in-process server.

import (
	"bytes"
	"net/http/httptest"
	"regexp"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/server"
)

// TestRun: against an in-process server, every request is counted with
// its tokens, and the texts' checksum is the same streamed or not and
// whatever the number of clients running at once.
func TestRun(t *testing.T) {
	m, v, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Models: []server.Model{{Name: "lanternbay", Model: m, Vocab: v}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	texts := map[string]bool{}
	for _, args := range [][]string{
		{"-clients", "3", "-requests", "2"},
		{"-clients", "1", "-requests", "6", "-stream"},
		{"-clients", "6", "-requests", "1", "-stream"},
	} {
		var out, errs bytes.Buffer
		if err := run(append(args, "-url", ts.URL, "-tokens", "40"), &out, &errs); err != nil {
			t.Fatalf("%v: %v %s", args, err, errs.String())
		}
		m := regexp.MustCompile(`requests=6 stream=\w+ tokens=240 .* texts=([0-9a-f]+)\n$`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%v: %q", args, out.String())
		}
		texts[m[1]] = true
	}
	if len(texts) != 1 {
		t.Errorf("the texts' checksums differ: %v", texts)
	}
}
