// Package minigpt is a small character-level GPT, trained and sampled from
// scratch in pure Go with no dependencies beyond the standard library, and
// reproducible to the bit: the same seed gives the same weights, loss
// curve and text on every machine. To see the model itself, read
// reference.go first: the whole GPT and its training step written as the
// math, each layer a forward/backward pair of plain loops in llm.c's
// style, which a test proves gives the fast engine's exact bits.
//
// The model is the classic one: token and position embeddings,
// pre-LayerNorm blocks of causal multi-head attention and a ReLU
// feed-forward network, a final LayerNorm and a linear head, trained with
// a hand-written backward pass and Adam. It implements the lessons: a
// course of NumPy lessons that builds a char-level MiniGPT and its text
// generator, whose code this package follows exactly (where their prose
// and code disagree, the code). The repository's docs/lessons.md maps
// each lesson to the code and says where and why this package departs.
//
// # A map, in the order the data flows
//
// Text becomes a model, and a model becomes text:
//
//   - corpus.go: [Vocab] (characters ↔ token ids) and [Dataset] (a text
//     encoded and split 90/10). The built-in text is [LanternBay].
//   - minigpt.go: [Config] (a model's shape) and [Model] (a Config and one
//     flat slab of parameters with named views into it).
//   - reference.go: the model written as the math, to read first.
//   - activations.go, forward.go, backward.go, schedule.go: the engine.
//     The one forward pass, for training, scoring and every generation
//     step alike, and the backward pass, each the list of the model's
//     layers (the jobs of internal/nn), which the schedule groups into the
//     parallel sections of internal/par.
//   - train.go, adam.go, clip.go: [Trainer] runs a [TrainConfig] with the
//     lessons' Adam, reporting [Progress] through a callback.
//   - checkpoint.go, checkpoint_write.go, checkpoint_read.go:
//     [Checkpoint], the model with its vocabulary and, for a full
//     checkpoint, the trainer's whole state (the byte format is
//     docs/checkpoint-format.md); safetensors*.go: the same weights in
//     the format PyTorch users exchange (docs/interop.md).
//     [ReadCheckpoint] and [LoadCheckpoint] read either format.
//   - generate.go: [GenerateOptions] and the two ways to generate,
//     [Model.Generate] on token ids and [Model.Complete] on text;
//     trace.go: the per-token [Step]; sample.go: the sampling pipeline;
//     stop.go: stop strings; beam.go: beam search; decode.go: the
//     decoding machinery (a call's request, its rows in a decoder with a
//     KV cache slot each); batch.go: [Batch], many callers' requests
//     decoded together (continuous batching); score.go: [Model.Score].
//
// Below the package, in layers the compiler keeps apart: internal/nn
// (the layers as forward/backward jobs over flat slices), internal/par
// (the deterministic fork-join scheduler), internal/kernels (matrix
// products, vector loops, LayerNorm, softmax, exp and log, in Go and in
// AVX2 and AVX-512 assembly; its doc states every sum's fixed order),
// internal/safefile (atomic saves, reads that never block on a FIFO) and
// internal/testutil (what the tests share). The commands (cmd/...) and
// the OpenAI-compatible server (package server) sit on top. The README
// has a whole program; the Examples show fine-tuning, resuming, several
// samples at once, stop strings and per-step traces.
//
// The library never prints, exits or reads flags; the commands do. Errors
// a caller may branch on wrap the Err sentinels below.
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
// Generation, Logits, Score and Gradients only read a Model and are safe
// for concurrent use, each call with buffers of its own, and give the
// same bits whether or not others run. A Trainer holds its model: its
// steps wait for readers and readers wait for a step, and a second
// Trainer on the same model is refused.
//
// # Words
//
// A row is one position of one sequence in a pass (a pass's activations
// are (rows, width) matrices, several sequences' rows end to end); a slot
// is a sequence's place in a KV cache; a lane is one of a Batch's
// decoding loops, one per processor; a chain is row jobs run one after
// another over one chunk of rows (par.Chain), or a sum's terms added one
// after another in a fixed order; halves are a sum over rows run as two
// jobs, the second continuing the first's chains (par.Halves); a section
// is jobs run in parallel behind one barrier (par.Section).
package minigpt
