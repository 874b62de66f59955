package main

// The walk's reading of a page: its blocks, its comments and what it
// changes, each as a reader would see it.

import (
	"strings"
	"testing"
)

func TestShellBlocks(t *testing.T) {
	page := "text\n```sh\n# a comment alone\ngo run ./cmd/train -preset baby \\\n    -out a.ckpt\n\ncurl -s localhost:8080/health\n```\n```go\nnot shell\n```\n```bash\necho hi\n```\n"
	bs := shellBlocks(page)
	if len(bs) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(bs), bs)
	}
	if bs[0].line != 3 || len(bs[0].lines) != 2 || bs[0].lines[0] != "go run ./cmd/train -preset baby     -out a.ckpt" {
		t.Errorf("first block %q at line %d", bs[0].lines, bs[0].line)
	}
	if bs[1].lines[0] != "echo hi" || bs[1].line != 13 {
		t.Errorf("second block %q at line %d", bs[1].lines, bs[1].line)
	}
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		"go run ./cmd/generate -greedy     # write with it": "go run ./cmd/generate -greedy",
		"go run ./cmd/generate -logit-bias '#3=-100'":       "go run ./cmd/generate -logit-bias '#3=-100'",
		`echo "a # b" # c`:                               `echo "a # b"`,
		"printf 'x %.0s' $(seq 12) > gulls.txt":          "printf 'x %.0s' $(seq 12) > gulls.txt",
		"curl -s localhost:8080/v1/models#not-a-comment": "curl -s localhost:8080/v1/models#not-a-comment",
	} {
		if got := stripComment(in); got != want {
			t.Errorf("stripComment(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewrite(t *testing.T) {
	script, notes := rewrite([]string{
		"go run ./cmd/train -preset baby -corpus c.txt -out s.ckpt   # minutes",
		"go run ./cmd/train -preset baby -steps 20",
		"go test ./...",
		"go run ./bench/docwalk        # every shell block",
		"go run ./cmd/generate -model s.ckpt",
	}, "/bin-dir", false)
	for _, want := range []string{
		`"/bin-dir/train" -preset baby -corpus c.txt -out s.ckpt -steps 5 -warmup 1 -eval-every 0` + "\n",
		`"/bin-dir/train" -preset baby -steps 20` + "\n",
		`"/bin-dir/generate" -model s.ckpt` + "\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "go test") || strings.Contains(script, "docwalk") || len(notes) != 3 {
		t.Errorf("go test kept, or notes %q", notes)
	}
	// Requests alone get the server the page's reader has running.
	script, notes = rewrite([]string{"curl -s localhost:8080/v1/models"}, "/b", false)
	if !strings.Contains(script, "serve_start\ncurl -s localhost:8080/v1/models\n") || len(notes) != 1 {
		t.Errorf("no server started before a request alone:\n%s", script)
	}
	script, _ = rewrite([]string{"go run ./cmd/serve -model m.ckpt   # then:", "curl -s localhost:8080/v1/models"}, "/b", false)
	if strings.Count(script, "serve_start") != 2 || !strings.Contains(script, "serve_stop; serve_start -model m.ckpt\ncurl") {
		t.Errorf("the page's own server not used:\n%s", script)
	}
	// torchrun: left out without PyTorch, shortened from scratch, never on a GPU.
	_, notes = rewrite([]string{"torchrun --nproc_per_node=2 python/train_ddp.py --steps 200"}, "/b", false)
	if len(notes) != 1 || !strings.Contains(notes[0], "PyTorch is not installed") {
		t.Errorf("notes %q", notes)
	}
	script, _ = rewrite([]string{"torchrun python/train_ddp.py --device cuda", "torchrun python/train_ddp.py --steps 2000 --out b.safetensors"}, "/b", true)
	if strings.Contains(script, "cuda") || !strings.Contains(script, "--steps 2000 --out b.safetensors --steps 5\n") {
		t.Errorf("torchrun lines:\n%s", script)
	}
}
