// Package minigpt is a small GPT, trained and sampled from scratch in pure Go
// with no dependencies beyond the standard library, and reproducible to the
// bit. To see the model itself, read reference.go and reference_layers.go
// first: the whole GPT and its training step written as the math, each layer a
// forward/backward pair of plain loops in llm.c's style, which a test proves
// gives the fast engine's exact bits.
//
// The model is the classic one: token and position embeddings,
// pre-LayerNorm blocks of causal multi-head attention and a ReLU
// feed-forward network, a final LayerNorm and a linear head, trained with
// a hand-written backward pass and Adam. It implements the lessons: a
// course of NumPy lessons that builds a char-level MiniGPT and its text
// generator, whose code this package follows exactly (where their prose
// and code disagree, the code); the repository's docs/lessons.md maps
// each lesson to the code. Beyond them, a model may read byte-level BPE
// tokens, and output may be held to a format.
//
// # A map, in the order the data flows
//
//   - corpus.go: [Vocab] (characters or BPE tokens ↔ ids) and [Dataset] (a
//     text encoded and split 90/10); the built-in text is [LanternBay].
//   - minigpt.go: [Config] and [Model], a Config and one flat slab of
//     parameters with named views into it; reference.go: the model as
//     the math.
//   - activations.go, forward.go, backward.go, schedule.go: the engine,
//     each pass the list of the model's layers (internal/nn's jobs), which
//     the schedule groups into internal/par's parallel sections.
//   - train.go, adam.go, clip.go: [Trainer] runs a [TrainConfig].
//   - checkpoint*.go: [Checkpoint] in minigpt's format
//     (docs/checkpoint-format.md); safetensors*.go: PyTorch's.
//   - generate.go: [GenerateOptions], [Model.Generate] on ids and
//     [Model.Complete] on text; sample.go, constrain.go, stop.go,
//     beam.go: the pipeline, [Constraint], stop strings, beam search;
//     trace.go: the per-token [Step]; request.go: a call's request;
//     batch.go: [Batch], continuous batching; score.go.
//
// Below: internal/kernels (the products and vector loops in Go, AVX2 and
// AVX-512, each sum's order stated), internal/nn, internal/par,
// internal/decode (a request's rows, each step's pass, the KV cache),
// internal/bpe, internal/grammar, internal/safefile. The commands
// (cmd/...) and the OpenAI-compatible server sit on top. The library
// never prints, exits or reads flags; errors a caller may branch on wrap
// the Err sentinels below.
//
// # Reproducibility and concurrency
//
// The same seed gives the same weights, loss curve and text, to the bit,
// at any GOMAXPROCS, on amd64 and arm64, with or without assembly (build
// tag purego), alone or batched. Every sum has one fixed order, and work
// is split between goroutines only across independent outputs; every
// product that feeds a sum is an explicit math.FMA or float64(x*y); exp,
// log and the cosine are this module's own; random draws come from
// math/rand/v2 PCG sources with fixed streams. Generation, Logits, Score
// and Gradients only read a Model and are safe for concurrent use; a
// Trainer's steps and the readers wait for each other.
//
// # Words
//
// A row is one position of one sequence in a pass (activations are
// (rows, width) matrices); a slot is a sequence's place in a KV cache; a
// lane is one of a Batch's decoding loops; a chain is row jobs run one
// after another over a chunk of rows, or a sum's terms added in a fixed
// order; halves are a sum over rows run as two jobs, the second
// continuing the first's chains; a section is jobs run in parallel behind
// one barrier.
package minigpt
