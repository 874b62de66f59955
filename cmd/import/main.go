// Command import turns a safetensors file — from cmd/export, or trained in
// PyTorch by python/train_ddp.py — into a weights-only minigpt checkpoint
// for cmd/generate -model, cmd/serve -model and cmd/train -init-from
// (docs/interop.md has the whole path and the tensor names).
//
//	go run ./cmd/import -in trained.safetensors -out trained.ckpt
//	go run ./cmd/generate -model trained.ckpt -greedy
//
// The file is checked whole before anything is written
// (minigpt.ReadCheckpoint: the header, the config and vocabulary in its
// metadata, a BPE model's tokenizer included, every tensor's name, dtype,
// shape and offsets, finite values), and a
// refusal names the tensor or key and what is wrong. F64 weights come in
// bit for bit; F32 ones are widened exactly. An existing -out is replaced
// only with -force, and a device, FIFO, socket, symbolic link or
// directory never. Exit status (usage.go words it for -h): 0 done; 2 refused before
// any work (a flag, the -in file, an output that may not be written),
// nothing written; 1 failed while writing.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

func main() { cli.Main("import", run) }

// exitCode reports err on stderr and returns the exit status (see
// cli.ExitCode).
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("import", err, stderr) }

type options struct {
	in, out         string
	force, progress bool
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.StringVar(&o.in, "in", "", "the safetensors `file` to read (required; a minigpt checkpoint is taken too, told by its content, and written weights-only)")
	fs.StringVar(&o.out, "out", "", "write the checkpoint `file` here (required)")
	fs.BoolVar(&o.force, "force", false, "replace an existing -out file")
	fs.BoolVar(&o.progress, "progress", false, cli.ProgressUsage)
	return fs
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := newFlagSet(&o)
	if _, err := command.Parse(fs, args, stdout); err != nil {
		return err
	}
	switch {
	case o.in == "":
		return cli.Usagef("-in is empty: give the safetensors file to read")
	case o.out == "":
		return cli.Usagef("-out is empty: give the checkpoint file to write")
	case cli.SamePath(o.in, o.out):
		return cli.Usagef("-in and -out both name %s: the import would overwrite its input", o.in)
	}
	out := &cli.Output{Flag: "out", Path: o.out, Replace: o.force}
	if err := out.Check(); err != nil {
		return err
	}
	po := cli.ProgressTo(stderr, o.progress)
	c, err := cli.LoadCheckpoint("in", o.in, po)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	c = c.WeightsOnly()
	if ctx.Err() != nil {
		return fmt.Errorf("%w before writing; nothing written", cli.ErrInterrupted)
	}
	size := int64(c.Model.Config().NumParams())*8 + headerBytes
	p := po.StartLarge("writing "+o.out, size)
	err = out.Save(func(w io.Writer) error {
		if err := minigpt.WriteCheckpoint(p.Writer(w), c); err != nil {
			return err
		}
		p.Set(size)
		return nil
	})
	p.Done()
	if err != nil {
		return err
	}
	cfg := c.Model.Config()
	vocab := fmt.Sprintf("vocabulary of %d", cfg.VocabSize)
	if cli.IsBPE(c.Vocab) {
		vocab = fmt.Sprintf("vocabulary %s (format version 3)", c.Vocab)
	}
	fmt.Fprintf(stderr, "wrote %s: a weights-only checkpoint of %s, step %d: %d parameters, %s, block %d, width %d, %d heads, %d layers, tied head %v\n",
		o.out, o.in, c.Step, c.Model.Config().NumParams(), vocab, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, cfg.TiedHead)
	return nil
}

// headerBytes is about what a weights-only checkpoint holds besides the
// weights (header, config, vocabulary, checksum), for the progress of
// writing one.
const headerBytes = 4 << 10
