package bpe_test

// This file holds the tests against the independent Python trainer
// (testdata/reference_bpe.py): the merges of Lantern Bay and of a mixed
// text, and GPT-2's split as the regex module computes it.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt"
	"example.org/minigpt/internal/bpe"
)

var update = flag.Bool("update", false, "rewrite testdata/lanternbay.txt from minigpt.LanternBay (then rerun testdata/reference_bpe.py)")

// regenerate is what the goldens' headers say, for failure messages.
const regenerate = "python3 internal/bpe/testdata/reference_bpe.py internal/bpe/testdata"

// The Python script reads Lantern Bay from a file; this test keeps that
// file the root package's constant.
func TestLanternBayCopy(t *testing.T) {
	path := filepath.Join("testdata", "lanternbay.txt")
	if *update {
		if err := os.WriteFile(path, []byte(minigpt.LanternBay), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != minigpt.LanternBay {
		t.Fatalf("%s is not minigpt.LanternBay: run go test ./internal/bpe -run TestLanternBayCopy -update, then %s", path, regenerate)
	}
}

// readGolden reads a merges golden: comment lines, "vocab V merges M",
// then M lines of two ids.
func readGolden(t *testing.T, path string) (vocab int, merges []bpe.Pair) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := -1
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case n < 0:
			if _, err := fmt.Sscanf(line, "vocab %d merges %d", &vocab, &n); err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
		default:
			var p bpe.Pair
			if _, err := fmt.Sscanf(line, "%d %d", &p.Left, &p.Right); err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			merges = append(merges, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 0 || len(merges) != n {
		t.Fatalf("%s: %d merges listed, the header says %d", path, len(merges), n)
	}
	return vocab, merges
}

// Training on Lantern Bay and on the mixed text gives the merges the
// Python trainer gives (merges, ties and the early stop: Lantern Bay's
// pieces are all single tokens before vocabulary 1024).
func TestMergesMatchPython(t *testing.T) {
	for _, name := range []string{"lanternbay", "mixed"} {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			vocab, want := readGolden(t, filepath.Join("testdata", name+"_merges.golden"))
			tok, err := bpe.Train(context.Background(), string(text), vocab)
			if err != nil {
				t.Fatal(err)
			}
			got := tok.Merges()
			for r := range min(len(got), len(want)) {
				if got[r] != want[r] {
					t.Fatalf("merge %d is %v (%q + %q), Python's is %v (%q + %q)", r,
						got[r], tok.Token(got[r].Left), tok.Token(got[r].Right),
						want[r], tok.Token(want[r].Left), tok.Token(want[r].Right))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d merges, Python made %d", len(got), len(want))
			}
			if len(want) == vocab-bpe.NumBytes && name == "lanternbay" {
				t.Errorf("Lantern Bay reached vocabulary %d: the early stop is not tested", vocab)
			}
		})
	}
}

// Split gives the pieces Python's regex module finds with GPT-2's
// pattern, on hand-picked and generated texts (lookahead after runs of
// spaces, contractions, U+0085 and U+FEFF, marks, emoji).
func TestSplitMatchesPython(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "split.golden"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		var c struct {
			Text   string   `json:"text"`
			Pieces []string `json:"pieces"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Pieces == nil {
			c.Pieces = []string{}
		}
		got := bpe.Split(c.Text)
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, c.Pieces) {
			t.Errorf("Split(%q) = %q, Python's regex: %q", c.Text, got, c.Pieces)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 600 {
		t.Fatalf("only %d cases in split.golden", n)
	}
}
