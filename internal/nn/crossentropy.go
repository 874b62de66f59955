package nn

// This file holds the loss: cross-entropy of the logits against the
// targets, with its gradient.

import "example.org/minigpt/internal/kernels"

// CrossEntropy computes, for each row, the loss -log softmax(logits)[target]
// and, in the same pass, dlogits = (softmax - onehot(target)) / N: the
// gradient of the mean loss over the N rows (the caller sums the losses
// in row order). It computes -log softmax exactly (the lessons add 1e-12
// inside the log; the difference is below 1e-11 for any probability it
// matters for). A job over rows.
type CrossEntropy struct {
	Losses  []float64 // (N)
	DLogits []float64 // (N, V)
	Logits  []float64 // (N, V)
	Targets []int     // (N)
	N, V    int
}

// RowCost is a row's cost in multiply-adds.
func (j *CrossEntropy) RowCost() int { return 4 * j.V }

// Run computes rows [lo, hi).
func (j *CrossEntropy) Run(lo, hi int) {
	V := j.V
	for n := lo; n < hi; n++ {
		l := j.Logits[n*V : n*V+V]
		d := j.DLogits[n*V : n*V+V]
		maxv, sum := kernels.ExpShifted(d, l)
		tgt := j.Targets[n]
		j.Losses[n] = maxv + kernels.Log(sum) - l[tgt]
		for i := range d {
			d[i] /= sum
		}
		d[tgt]--
		for i := range d {
			d[i] /= float64(j.N)
		}
	}
}
