// Package nn holds the model's layers as forward/backward pairs over flat
// row-major []float64 slices, llm.c style: the encoder (token and position
// embeddings), LayerNorm, the matrix product (with the ReLU and the
// residual add it feeds), causal multi-head attention, and the
// cross-entropy loss. Each pass of a layer is a job over a range of
// independent items — rows, columns of a sum over rows, (sequence, head)
// pairs — with a Run(lo, hi) method, so the scheduler (package par) can
// split it; a job gives every item the same bits whatever range it
// arrives in. Names are the math's: N rows (positions), C a width, OC an
// output width, NH heads, T the block size.
//
// # Backward passes set their outputs
//
// Every backward job writes its gradient outputs; none adds to what the
// memory held before, so no gradient needs clearing first. Where a
// gradient is a sum of two terms — the residual stream's gradient
// flowing past a LayerNorm, say — the job takes the other term as an
// input (LayerNormBackward.Start) and writes start + its own, the bits of
// copying start and adding. The exceptions are explicit and live within
// one backward pass: the second of two Halves continues the sums the
// first left (MatmulWeightGrad.Add, ColumnSum and LayerNormParamGrads
// without Set, EncoderBackward's later rows), and with a tied head the
// encoder's backward adds its part to the token embedding's gradient,
// which the head's gradient set first.
//
// # Orders
//
// Every sum a layer forms has one fixed order, whichever rows, columns or
// heads a job's range holds: the kernels' (package kernels states them),
// or, for the sums written here (column sums, the embedding gradients,
// attention's weighted sums), rows in ascending order. Every product that
// feeds a sum is a math.FMA or explicitly rounded with float64(), so no
// compiler may fuse it differently on another architecture.
package nn
