// Package minigpt is a small character-level GPT, trained and sampled from
// scratch in pure Go with no dependencies beyond the standard library, and
// reproducible to the bit: the same seed gives the same weights, loss
// curve and text on every machine.
//
// The model is the classic one: token and position embeddings,
// pre-LayerNorm blocks of causal multi-head attention and a ReLU
// feed-forward network, a final LayerNorm and a linear head, trained with
// a hand-written backward pass and Adam. It implements a series of
// lessons on GPTs written in NumPy, and follows their code exactly (where
// their prose and code disagree, the code; the repository's
// docs/lessons.md says where and why this package departs).
//
// # A map, in the order the data flows
//
// Text becomes a model, and a model becomes text:
//
//   - corpus.go: [Vocab] (characters ↔ token ids) and [Dataset] (a text
//     encoded and split 90/10). The built-in text is [LanternBay].
//   - minigpt.go: [Config] (a model's shape) and [Model] (a Config and one
//     flat slab of parameters with named views into it).
//   - forward.go, backward.go, activations.go: the one forward pass, for
//     training, scoring and every generation step alike, and the backward
//     pass; they compose the layers of internal/nn and schedule them
//     with internal/par.
//   - train.go, adam.go, clip.go: [Trainer] runs a [TrainConfig] with
//     [Adam], reporting [Progress] through a callback.
//   - checkpoint.go, checkpoint_write.go, checkpoint_read.go,
//     checkpoint_file.go: [Checkpoint], the model with its vocabulary and,
//     for a full checkpoint, the trainer's whole state (the byte format is
//     docs/checkpoint-format.md); safetensors*.go: the same weights in
//     the format PyTorch users exchange (docs/interop.md).
//   - generate.go: the two ways to generate, [Model.Generate] on token ids
//     and [Model.Complete] on text, configured by [GenerateOptions];
//     sample.go (the sampling pipeline), beam.go (beam search), stop.go
//     (stop strings), trace.go (the per-token [Step] trace).
//   - request.go, decode.go: a call while it runs, its samples as rows of
//     a decoder with a KV cache slot each; batch.go: [Batch], many callers'
//     requests decoded together (continuous batching).
//
// Below the package, each a layer the compiler keeps apart:
//
//   - internal/nn: the layers (encoder, LayerNorm, matrix product,
//     attention, cross-entropy) as forward/backward jobs over flat slices.
//   - internal/par: the deterministic fork-join scheduler, which knows only
//     jobs, item counts and costs.
//   - internal/kernels: the numbers themselves: matrix products, vector
//     loops, LayerNorm, softmax, exp and log, in portable Go and AVX2 and
//     AVX-512 assembly; its doc states every sum's fixed order.
//   - internal/safefile: atomic saves that never replace anything but a
//     regular file, and reads that never block on a FIFO.
//   - internal/testutil: what the packages' tests share (bit equality,
//     guard zones, directory listings, CPU time); only tests import it.
//
// The commands (cmd/train, cmd/generate, cmd/eval, cmd/serve,
// cmd/export, cmd/import, with cmd/internal/cli their shared plumbing and
// cmd/internal/clitest their tests' shared checks) and the
// OpenAI-compatible server (package server) sit on top.
//
// # Using it
//
//	ctx := context.Background()
//	data, _ := minigpt.NewDataset(minigpt.LanternBay, nil, 32)  // vocabulary + 90/10 split
//	m, _ := minigpt.NewModel(minigpt.ConfigFor(data.Vocab), 42) // fresh weights
//	tr, _ := minigpt.NewTrainer(m, data, minigpt.DefaultTrainConfig())
//	_ = tr.Run(ctx, func(p minigpt.Progress) { /* report */ })
//	_ = minigpt.SaveCheckpoint("my.ckpt", tr.Checkpoint())
//	c, _ := minigpt.LoadCheckpoint("my.ckpt")
//	res, _ := c.Model.Complete(ctx, c.Vocab, "the ", minigpt.GenerateOptions{
//		MaxNewTokens: 100, Temperature: 0.8, Seed: 1,
//	})
//
// (The README's program is the same, whole and tested.) A full checkpoint
// resumes bit for bit ([ResumeTrainer]). To fine-tune
// instead, pass a loaded model to [NewTrainer] with a dataset encoded with
// the checkpoint's vocabulary (NewDataset with it). [DefaultModel] is a
// model trained on Lantern Bay, embedded in the package.
//
// The library never prints, exits or reads flags; the commands do.
// Errors a caller may branch on wrap sentinels: ErrBadConfig,
// ErrBadTrainConfig, ErrBadAdamConfig and ErrBadOption for invalid
// settings; ErrBadText, ErrBadText and ErrBadToken for text and ids;
// ErrVocabMismatch, ErrCorpusMismatch, ErrTooLarge and ErrModelInUse from
// NewTrainer and ResumeTrainer; ErrDiverged from training; ErrNonFinite
// and ErrAllBanned from generation; ErrClosed from a closed Batch;
// ErrBadCheckpoint (and ErrBadSafetensors) and ErrNotRegularFile from
// reading and writing files (with fs.ErrExist and fs.ErrNotExist).
//
// # Reproducibility
//
// The same seed gives the same weights, loss curve and text, to the bit,
// at any GOMAXPROCS, on amd64 and arm64, with or without assembly (build
// tag purego), alone or batched with other requests. Three rules make it
// so. Every sum has one fixed order (internal/kernels states each), and
// work is split between goroutines only across independent outputs,
// never inside a sum (internal/par). Every product that feeds a sum is an
// explicit math.FMA or explicitly rounded with float64(x*y), so no
// compiler can fuse differently per architecture. Exp, log and the
// learning rate's cosine are this module's own, not the platform's.
// Random draws come from math/rand/v2 PCG sources with fixed streams:
// initialisation from NewModel's seed, batches and validation batches from
// TrainConfig.Seed, sampling from GenerateOptions.Seed.
//
// # Concurrency
//
// Generation, Logits, Loss and Gradients only read a Model and are safe
// for concurrent use, each call with buffers of its own, and give the
// same bits whether or not others run. A Trainer holds its model: its
// steps wait for readers and readers wait for a step, and a second
// Trainer on the same model is refused.
package minigpt
