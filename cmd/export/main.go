// Command export writes a minigpt checkpoint as a safetensors file, the
// weights format PyTorch and Hugging Face users exchange, for
// python/minigpt.py and python/train_ddp.py (docs/interop.md has the
// whole path and the tensor names).
//
//	go run ./cmd/export -out lanternbay.safetensors           # the embedded model
//	go run ./cmd/export -model shakespeare.ckpt -out shakespeare.safetensors
//	go run ./cmd/export -model shakespeare.ckpt -out small.safetensors -dtype F32
//
// Only the weights go out, with the config, vocabulary and step in the
// file's __metadata__; a full checkpoint's optimizer state does not.
// -logits also writes the model's float64 logits on -logits-prompt as
// JSON, for checking another implementation of the model against this
// one (python/test.sh does).
//
// Everything is checked before anything is written: an existing file is
// replaced only with -force, and a device, FIFO, socket, symbolic link or
// directory never. Exit status (usage.go words it for -h): 0 done; 2 refused before
// any work (a flag, the -model file, an output that may not be written,
// a weight beyond float32 with -dtype F32), nothing written; 1 failed
// while writing.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("export", run) }

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode).
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("export", err, stderr) }

type options struct {
	model, out, dtype    string
	logits, logitsPrompt string
	force, progress      bool
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.StringVar(&o.model, "model", "", "the model to export: a checkpoint `file` (full or weights-only), or a .safetensors one to convert to -dtype (told by its content; default: the embedded Lantern Bay model)")
	fs.StringVar(&o.out, "out", "", "write the safetensors `file` here (required)")
	fs.StringVar(&o.dtype, "dtype", "F64", "store the weights as F64 (every bit) or F32 (half the size, rounded to float32)")
	fs.BoolVar(&o.force, "force", false, "replace existing -out and -logits files")
	fs.StringVar(&o.logits, "logits", "", "also write the model's float64 logits on -logits-prompt to this JSON `file`, to check another implementation against this one")
	fs.StringVar(&o.logitsPrompt, "logits-prompt", "the keeper rings the bell", "the `text` -logits runs the model on (at most the block size in characters, all in the vocabulary)")
	fs.BoolVar(&o.progress, "progress", false, cli.ProgressUsage)
	return fs
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	set, err := command.Parse(fs, args, stdout)
	if err != nil {
		return err
	}
	switch {
	case o.out == "":
		return cli.Usagef("-out is empty: give the safetensors file to write")
	case o.dtype != "F64" && o.dtype != "F32":
		return cli.BadValue(fs, "dtype", "want F64 or F32")
	case set["logits-prompt"] && o.logits == "":
		return cli.Usagef("-logits-prompt is given without -logits")
	}
	out := &cli.Output{Flag: "out", Path: o.out, Replace: o.force}
	outs := []*cli.Output{out}
	var logitsOut *cli.Output
	if o.logits != "" {
		logitsOut = &cli.Output{Flag: "logits", Path: o.logits, Replace: o.force}
		outs = append(outs, logitsOut)
	}
	if err := checkPaths(o, outs); err != nil {
		return err
	}

	po := cli.ProgressTo(stderr, o.progress)
	c, from, err := load(o.model, po)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	var logits []byte
	if logitsOut != nil {
		if logits, err = logitsJSON(c, o.logitsPrompt); err != nil {
			return cli.Usagef("-logits-prompt %q: %w", o.logitsPrompt, err)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w before writing; nothing written", cli.ErrInterrupted)
	}

	elem := int64(8)
	if o.dtype == "F32" {
		elem = 4
	}
	size := int64(c.Model.Config().NumParams())*elem + headerBytes
	p := po.StartLarge("writing "+o.out, size)
	err = out.Save(func(w io.Writer) error {
		if err := minigpt.WriteSafetensors(p.Writer(w), c, o.dtype); err != nil {
			return err
		}
		p.Set(size)
		return nil
	})
	p.Done()
	if errors.Is(err, minigpt.ErrBadCheckpoint) {
		return cli.UsageError{Err: fmt.Errorf("%s: %w; nothing written", from, err)} // the model cannot be stored so
	}
	if err != nil {
		return err
	}
	size = -1
	if fi, err := os.Stat(o.out); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stderr, "wrote %s: %s as %s, %d parameters, step %d, %d bytes\n", o.out, from, o.dtype, c.Model.Config().NumParams(), c.Step, size)
	if logitsOut != nil {
		if err := logitsOut.Save(func(w io.Writer) error { _, err := w.Write(logits); return err }); err != nil {
			return fmt.Errorf("wrote %s, but %w", o.out, err)
		}
		fmt.Fprintf(stderr, "wrote %s: the logits on %q\n", o.logits, o.logitsPrompt)
	}
	return nil
}

// headerBytes is about what a safetensors file holds besides the weights
// (its JSON header), for the progress of writing one.
const headerBytes = 4 << 10

// load reads the -model checkpoint, or the embedded model, and names it
// for messages.
func load(path string, po cli.ProgressOut) (*minigpt.Checkpoint, string, error) {
	if path == "" {
		m, vocab, err := minigpt.DefaultModel()
		if err != nil {
			return nil, "", err
		}
		// The embedded model is the default training run's last step.
		step := minigpt.DefaultTrainConfig().Steps
		return &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: step}, "the embedded Lantern Bay model", nil
	}
	c, err := cli.LoadCheckpoint("model", path, po)
	if err != nil {
		return nil, "", err
	}
	return c, path, nil
}

// logitsJSON runs the model on prompt and returns its logits as JSON:
// the prompt, its token ids, and one row of VocabSize logits a position.
// encoding/json writes each float64 in the shortest form that reads back
// to the same bits.
func logitsJSON(c *minigpt.Checkpoint, prompt string) ([]byte, error) {
	ids, err := c.Vocab.Encode(prompt)
	if err != nil {
		return nil, cli.CheckText(prompt, c.Vocab)
	}
	T, V := len(ids), c.Model.Config().VocabSize
	if T == 0 || T > c.Model.Config().BlockSize {
		return nil, fmt.Errorf("%d characters, want 1 to the block size, %d", T, c.Model.Config().BlockSize)
	}
	flat, err := c.Model.Logits(ids, 1, T)
	if err != nil {
		return nil, err
	}
	rows := make([][]float64, T)
	for t := range rows {
		rows[t] = flat[t*V : (t+1)*V]
	}
	b, err := json.Marshal(struct {
		Prompt string      `json:"prompt"`
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}{prompt, ids, rows})
	return append(b, '\n'), err
}

// checkPaths refuses, before any work, outputs that would overwrite the
// input or each other, and any output that cannot or may not be written.
func checkPaths(o options, outs []*cli.Output) error {
	for i, a := range outs {
		if o.model != "" && cli.SamePath(a.Path, o.model) {
			return cli.Usagef("-%s and -model both name %s: the export would overwrite its input", a.Flag, a.Path)
		}
		for _, b := range outs[i+1:] {
			if cli.SamePath(a.Path, b.Path) {
				return cli.Usagef("-%s and -%s both name %s", a.Flag, b.Flag, a.Path)
			}
		}
	}
	for _, f := range outs {
		if err := f.Check(); err != nil {
			return err
		}
	}
	return nil
}
