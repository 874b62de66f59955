// Command docwalk is a newcomer's walk through the documentation: it runs
// every shell block of README.md and docs/*.md, in order, as a reader
// would paste it, and reports each block that fails.
//
//	go run ./bench/docwalk              # every page
//	go run ./bench/docwalk -only README.md,docs/training.md -v
//
// Each page starts in a fresh copy of the repository's data/, models/ and
// python/ (what the pages name), with the commands built once: "go run
// ./cmd/NAME" runs the built NAME. A block runs under bash -e, so any
// command that fails fails its block. "go run ./cmd/serve" starts the
// server in the background and waits for /health before the block's next
// command (the curl examples), and stops it before the next serve and at
// the block's end.
//
// What it cannot run as printed it changes or leaves out, and says so in
// its report: a training run of -preset baby or shakespeare-char (minutes
// to hours) runs 5 steps, and so does the 2000-step torchrun from scratch;
// the GPU torchrun and the mutation run are left out; go test lines are
// CI's own, and so are the arm64 ones under qemu (and the walk itself);
// torchrun needs PyTorch (left out, with a note, where it is missing). A
// file a page assumes the reader has is made for it: mytext.txt is tiny
// Shakespeare, another page's checkpoint the shipped model.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "docwalk:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("docwalk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", ".", "the repository `directory` to walk")
	only := fs.String("only", "", "walk only these `pages` (comma-separated paths, e.g. README.md,docs/training.md)")
	verbose := fs.Bool("v", false, "print each block's script and output")
	timeout := fs.Duration("timeout", 10*time.Minute, "the most one block may take")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pages, err := filepath.Glob(filepath.Join(*repo, "docs", "*.md"))
	if err != nil {
		return err
	}
	pages = append([]string{filepath.Join(*repo, "README.md")}, pages...)
	if *only != "" {
		var keep []string
		for _, p := range strings.Split(*only, ",") {
			keep = append(keep, filepath.Join(*repo, strings.TrimSpace(p)))
		}
		pages = keep
	}
	tmp, err := os.MkdirTemp("", "docwalk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./cmd/...")
	build.Dir = *repo
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the commands: %v\n%s", err, out)
	}
	_, torchErr := exec.LookPath("torchrun")
	var failed, blocks int
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*repo, page)
		work := filepath.Join(tmp, "walk-"+strings.NewReplacer("/", "-", ".", "-").Replace(rel))
		if err := setUp(*repo, work, rel, bin); err != nil {
			return err
		}
		for _, b := range shellBlocks(string(text)) {
			blocks++
			script, notes := rewrite(b.lines, bin, torchErr == nil)
			start := time.Now()
			out, err := runBlock(ctx, work, script, *timeout)
			status := "ok  "
			if err != nil {
				status = "FAIL"
				failed++
			}
			fmt.Fprintf(stdout, "%s %s:%d (%d lines, %.1fs)\n", status, rel, b.line, len(b.lines), time.Since(start).Seconds())
			for _, n := range notes {
				fmt.Fprintf(stdout, "       %s\n", n)
			}
			if err != nil || *verbose {
				fmt.Fprintf(stdout, "--- script\n%s--- output\n%s", script, out)
				if err != nil {
					fmt.Fprintf(stdout, "--- %v\n", err)
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	fmt.Fprintf(stdout, "%d of %d shell blocks ran as a reader would run them\n", blocks-failed, blocks)
	if failed > 0 {
		return fmt.Errorf("%d blocks failed", failed)
	}
	return nil
}

// setUp makes a page's working directory: copies of data/, models/ and
// python/, and the files a page assumes the reader has.
func setUp(repo, work, page, bin string) error {
	for _, d := range []string{"data", "models", "python"} {
		cmd := exec.Command("cp", "-R", filepath.Join(repo, d), filepath.Join(work, d))
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s: %v\n%s", d, err, out)
		}
	}
	text, err := os.ReadFile(filepath.Join(repo, "data", "tinyshakespeare.txt"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "mytext.txt"), text, 0o644); err != nil {
		return err
	}
	for _, name := range madeElsewhere[page] {
		var cmd *exec.Cmd
		switch filepath.Ext(name) {
		case ".safetensors":
			cmd = exec.Command(filepath.Join(bin, "export"), "-model", "models/lanternbay.ckpt", "-out", name)
		default:
			cmd = exec.Command("cp", "models/lanternbay.ckpt", name)
		}
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("making %s for %s: %v\n%s", name, page, err, out)
		}
	}
	return nil
}

// madeElsewhere lists, for a page, the files it uses that the reader made
// on another page (README.md's my.ckpt, interop.md's tuned.safetensors);
// docwalk makes them from the shipped model.
var madeElsewhere = map[string][]string{
	"docs/serving.md": {"my.ckpt", "tuned.safetensors"},
}

// block is one shell block of a page: its lines (continuations joined)
// and the line of the page it starts on.
type block struct {
	line  int
	lines []string
}

// shellBlocks returns the page's ```sh and ```bash blocks.
func shellBlocks(text string) []block {
	var bs []block
	var cur *block
	var cont string
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && (line == "```sh" || line == "```bash"):
			cur = &block{line: n + 1}
		case cur != nil && strings.HasPrefix(line, "```"):
			if len(cur.lines) > 0 {
				bs = append(bs, *cur)
			}
			cur, cont = nil, ""
		case cur != nil:
			if s, ok := strings.CutSuffix(line, `\`); ok {
				cont += s
				continue
			}
			if l := strings.TrimSpace(cont + line); l != "" && !strings.HasPrefix(l, "#") {
				cur.lines = append(cur.lines, cont+line)
			}
			cont = ""
		}
	}
	return bs
}

// stripComment drops a trailing shell comment (a # after white space,
// outside quotes).
func stripComment(line string) string {
	var quote rune
	prev := ' '
	for i, c := range line {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimRight(line[:i], " \t")
		}
		prev = c
	}
	return line
}

// rewrite turns a block into the script docwalk runs, and notes what it
// changed or left out.
func rewrite(lines []string, bin string, torch bool) (string, []string) {
	var b strings.Builder
	var notes []string
	b.WriteString(`serve_pid=
serve_stop() { if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" || true; serve_pid=; fi; }
serve_start() {
  "$BIN/serve" "$@" > serve.log 2>&1 & serve_pid=$!
  for i in $(seq 100); do
    if curl -s -o /dev/null localhost:8080/health; then return 0; fi
    if ! kill -0 "$serve_pid" 2>/dev/null; then cat serve.log; return 1; fi
    sleep 0.2
  done
  cat serve.log; return 1
}
trap serve_stop EXIT
`)
	serving := false
	skip := func(line, why string) {
		notes = append(notes, fmt.Sprintf("left out (%s): %s", why, strings.TrimSpace(line)))
	}
	for _, line := range lines {
		l := stripComment(line)
		t := strings.TrimSpace(l)
		switch {
		case strings.Contains(t, "go test"):
			skip(t, "CI runs the tests itself")
			continue
		case strings.Contains(t, "go run ./bench/docwalk"):
			skip(t, "this walk itself")
			continue
		case strings.Contains(t, "go run ./bench/mutate"):
			skip(t, "the mutation run takes most of an hour")
			continue
		case strings.Contains(t, "GOARCH=arm64") || strings.Contains(t, "qemu-aarch64"):
			skip(t, "arm64 under qemu is CI's own step")
			continue
		case strings.Contains(t, "torchrun") && !torch:
			skip(t, "PyTorch is not installed here")
			continue
		case strings.Contains(t, "torchrun") && strings.Contains(t, "--device cuda"):
			skip(t, "no GPU")
			continue
		case strings.Contains(t, "torchrun") && strings.Contains(t, "--steps 2000"):
			l += " --steps 5"
			notes = append(notes, "shortened to 5 steps: "+t)
		}
		if strings.Contains(l, "go run ./cmd/train") && (strings.Contains(l, "-preset baby") || strings.Contains(l, "-preset shakespeare-char")) && !strings.Contains(l, "-steps") {
			l += " -steps 5 -warmup 1 -eval-every 0"
			notes = append(notes, "shortened to 5 steps: "+t)
		}
		if i := strings.Index(l, "go run ./cmd/serve"); i >= 0 {
			b.WriteString("serve_stop; serve_start" + l[i+len("go run ./cmd/serve"):] + "\n")
			serving = true
			continue
		}
		if strings.HasPrefix(t, "curl") && strings.Contains(t, "localhost:8080") && !serving {
			// A block of requests alone: the page's server runs in
			// another terminal.
			b.WriteString("serve_start\n")
			notes = append(notes, "started go run ./cmd/serve for it, as the page's reader has")
			serving = true
		}
		for _, name := range []string{"train", "generate", "eval", "export", "import", "tokenize"} {
			l = strings.ReplaceAll(l, "go run ./cmd/"+name, `"$BIN/`+name+`"`)
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("serve_stop\n")
	return strings.ReplaceAll(b.String(), "$BIN", bin), notes
}

// runBlock runs script under bash -e in dir and returns its output.
func runBlock(ctx context.Context, dir, script string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("took more than %v", timeout)
	}
	return string(out), err
}
