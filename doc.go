// Package minigpt is a tiny character-level GPT, trained and sampled from
// scratch in pure Go with no dependencies beyond the standard library.
//
// The model follows the seed lessons' NumPy MiniGPT exactly: token and
// position embeddings, pre-LayerNorm blocks of causal multi-head attention
// and a ReLU feed-forward network, a final LayerNorm and a linear head,
// trained with a hand-written backward pass and Adam.
//
// Everything is reproducible to the bit: the same seed gives the same
// weights, loss curve and text at any GOMAXPROCS and on amd64 and arm64.
// Every sum has one defined order (see kernels.go), every product that
// feeds a sum is an explicit fused multiply-add or explicitly rounded, and
// exp and log are computed by this package rather than by the platform.
package minigpt
