// Package minigpt is a tiny character-level GPT, trained and sampled from
// scratch in pure Go with no dependencies beyond the standard library.
//
// The model follows the seed lessons' NumPy MiniGPT exactly: token and
// position embeddings, pre-LayerNorm blocks of causal multi-head attention
// and a ReLU feed-forward network, a final LayerNorm and a linear head,
// trained with a hand-written backward pass and Adam.
//
// # Types
//
//   - [Vocab] maps characters to token ids (sorted, like the seed's
//     sorted(set(text))); [Dataset] is a corpus encoded with one and split
//     90/10 into training and validation tokens.
//   - [Config] is a model's shape; [ConfigFor] gives the seed's shape for a
//     vocabulary. [Model] is a Config and one flat parameter slab
//     ([Model.Params]) with named views into it, llm.c style.
//   - [TrainConfig] describes a run; [Trainer] runs it with [Adam] and
//     reports [Progress] through a callback.
//   - [Checkpoint] is a model with its vocabulary, and for a full checkpoint
//     the trainer's whole state; CHECKPOINT.md at the repository root is the
//     byte format. [CheckpointInfo] is its header, read without the weights.
//   - [GenerateOptions] configures generation: greedy decoding, and the
//     seed's sampling pipeline (temperature, top-k, top-p, repetition
//     penalty) with the knobs of real sampling APIs (min-p, presence and
//     frequency penalties, logit bias, no-repeat n-grams, stop strings,
//     beam search). [Model.Generate] works on token ids,
//     [Model.GenerateText] on text, and [Model.Complete] computes n samples
//     (or beams) of one prompt together, streaming each [Chunk] of text as
//     it becomes final and returning a [Completion] per sample. A per-token
//     [Step] trace shows what each stage of the pipeline did.
//   - [Model.GreedyDecode] is the seed's greedy_decode (seed lesson 000)
//     and [LoopOnset] the loop detector of seed lesson 003's exercise 3.
//
// # Data flow
//
// corpus → training → checkpoint → generation:
//
//	data, _ := minigpt.NewDataset(text, 32)                     // vocabulary + 90/10 split
//	m, _ := minigpt.NewModel(minigpt.ConfigFor(data.Vocab), 42) // fresh weights
//	tr, _ := minigpt.NewTrainer(m, data, minigpt.DefaultTrainConfig())
//	_ = tr.Run(ctx, func(p minigpt.Progress) { ... })
//	_ = minigpt.SaveCheckpoint("my.ckpt", tr.Checkpoint(minigpt.FullCheckpoint))
//	c, _ := minigpt.LoadCheckpoint("my.ckpt")
//	text, _ := c.Model.GenerateText(ctx, c.Vocab, "the ", opts)
//
// A full checkpoint resumes bit for bit ([ResumeTrainer]). To fine-tune
// instead, pass a loaded model to [NewTrainer] with a dataset encoded with
// the checkpoint's vocabulary ([NewDatasetWithVocab]): fresh optimizer,
// step 0, new text. [DefaultModel] is the seed's trained Lantern Bay model,
// embedded in the package.
//
// The library never prints, exits or reads flags; cmd/train and
// cmd/generate do. Errors a caller may branch on wrap sentinels:
// ErrBadConfig, ErrBadTrainConfig, ErrBadAdamConfig and ErrBadOption for
// invalid settings; ErrUnknownChar, ErrBadText and ErrBadToken for text
// and ids; ErrVocabMismatch, ErrCorpusMismatch and ErrTooLarge from
// NewTrainer and ResumeTrainer; ErrDiverged from training; ErrNonFinite
// and ErrAllBanned from generation; ErrBadCheckpoint and ErrNotRegularFile
// from reading and writing files (with fs.ErrExist and fs.ErrNotExist).
//
// # Determinism
//
// The same seed gives the same weights, loss curve and text, to the bit,
// at any GOMAXPROCS, on amd64 and arm64, with or without assembly (build
// tag purego). Three rules make it so: every sum has one fixed order
// (internal/kernels' package doc states each; work is split between
// goroutines only across independent outputs, never inside a sum); every
// product that feeds a sum is an explicit math.FMA or explicitly rounded
// with float64(x*y), so no compiler can fuse differently per architecture;
// exp and log are the module's own (internal/kernels' Exp and Log) and the
// learning rate's cosine is a rounded Taylor series (cosDet), not the
// platform's. Random
// draws come from math/rand/v2 PCG sources with fixed streams:
// initialisation from NewModel's seed, batches and validation batches from
// TrainConfig.Seed, sampling from GenerateOptions.Rand. TestPinnedTrainingHash
// pins the weights after a short run; CI checks it on arm64 under qemu.
//
// # Kernel dispatch
//
// The matrix kernels and the vector loops (softmax, LayerNorm, ReLU,
// residual adds, Adam) live in internal/kernels: a portable Go twin of
// each, always compiled and the reference, and on amd64 AVX2 and AVX-512
// assembly versions chosen once at start-up from CPUID and XGETBV (the
// build tag purego or a CPU without the features selects Go). Every path
// computes the same order of operations, and the kernel tests check that
// they agree to the bit.
//
// # Concurrency
//
// Generation (Generate, GenerateText, Complete) only reads a Model and is
// safe for concurrent use: each call has its own KV cache and buffers,
// pooled, and gives the same bits whether or not others run. Logits, Loss
// and Gradients only read it too and are safe for concurrent use (a call
// that finds the Model's buffers taken works in its own). Training changes
// Params and needs exclusive use of the Model.
package minigpt
