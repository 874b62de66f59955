// Command import turns a safetensors file — from cmd/export, or trained in
// PyTorch by python/train_ddp.py — into a weights-only minigpt checkpoint
// for cmd/generate -model, cmd/serve -model and cmd/train -init-from
// (docs/interop.md has the whole path and the tensor names).
//
//	go run ./cmd/import -in trained.safetensors -out trained.ckpt
//	go run ./cmd/generate -model trained.ckpt -greedy
//
// The file is checked whole before anything is written (minigpt.
// ReadSafetensors: the header, the config and vocabulary in its metadata,
// every tensor's name, dtype, shape and offsets, finite values), and a
// refusal names the tensor or key and what is wrong. F64 weights come in
// bit for bit; F32 ones are widened exactly. An existing -out is replaced
// only with -force, and a device, FIFO, socket, symbolic link or
// directory never. Exit status (usage.go words it for -h): 0 done; 2 refused before
// any work (a flag, the -in file, an output that may not be written),
// nothing written; 1 failed while writing.
package main

import (
	"bufio"
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
	in, out string
	force   bool
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.StringVar(&o.in, "in", "", "the safetensors `file` to read (required)")
	fs.StringVar(&o.out, "out", "", "write the checkpoint `file` here (required)")
	fs.BoolVar(&o.force, "force", false, "replace an existing -out file")
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
	c, err := read(o.in)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w before writing; nothing written", cli.ErrInterrupted)
	}
	if err := out.Save(func(w io.Writer) error { return minigpt.WriteCheckpoint(w, c) }); err != nil {
		return err
	}
	cfg := c.Model.Config()
	fmt.Fprintf(stderr, "wrote %s: a weights-only checkpoint of %s, step %d: %d parameters, vocabulary of %d, block %d, width %d, %d heads, %d layers, tied head %v\n",
		o.out, o.in, c.Step, c.Model.Config().NumParams(), cfg.VocabSize, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, cfg.TiedHead)
	return nil
}

// read reads and checks the -in file whole.
func read(path string) (*minigpt.Checkpoint, error) {
	f, err := cli.OpenRegular(path) // a FIFO is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("-in %w", err)
	}
	defer f.Close()
	c, err := minigpt.ReadCheckpoint(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("-in %s: %w", path, err)
	}
	return c, nil
}
