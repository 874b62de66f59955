package nn

// This file holds the encoder: token and position embeddings, summed.

// Encoder is out[r] = wte[ids[r]] + wpe[pos[r]] for rows r: each row's
// token embedding plus its position's. A job over rows.
type Encoder struct {
	Out      []float64 // (N, C)
	WTE      []float64 // (V, C) token embeddings
	WPE      []float64 // (T, C) position embeddings
	IDs, Pos []int     // (N) each row's token id and position
	C        int
}

// RowCost is a row's additions.
func (j *Encoder) RowCost() int { return j.C }

// Run encodes rows [lo, hi).
func (j *Encoder) Run(lo, hi int) {
	C := j.C
	for r := lo; r < hi; r++ {
		o := j.Out[r*C : r*C+C]
		e := j.WTE[j.IDs[r]*C : j.IDs[r]*C+C]
		p := j.WPE[j.Pos[r]*C : j.Pos[r]*C+C]
		for i := range o {
			o[i] = e[i] + p[i]
		}
	}
}

// EncoderBackward undoes out[r] = wte[ids[r]] + wpe[pos[r]]:
//
//	dwte[ids[r]] += dout[r];  dwpe[pos[r]] += dout[r]
//
// for rows r in ascending order, so every embedding's chain has one
// order. A sum over rows (par.Sum) whose items are columns: each column
// is a chain over the rows of its own. The gradients start from +0 in
// every row of the tables, but with AddWTE dwte continues what it holds
// (the tied head's part of it).
type EncoderBackward struct {
	DWTE, DWPE []float64 // (V, C), (T, C)
	DOut       []float64 // (N, C)
	IDs, Pos   []int     // (N)
	N, C       int
	AddWTE     bool
}

// Size is the items, grain and an item's additions.
func (j *EncoderBackward) Size() (items, grain, cost int) { return j.C, 8, 2 * j.N }

// SumRows is the rows, the values they hold and the outputs a part of
// them adds to (a row of sums a column).
func (j *EncoderBackward) SumRows() (rows, rowValues, outValues int) { return j.N, j.N * j.C, j.C }

// Run adds every row's gradient to columns [lo, hi) of the tables.
func (j *EncoderBackward) Run(lo, hi int) { j.RunRows(lo, hi, 0, j.N, true) }

// RunRows adds rows [r0, r1) to columns [lo, hi), setting the tables
// first when first.
func (j *EncoderBackward) RunRows(lo, hi, r0, r1 int, first bool) {
	C := j.C
	if first && !j.AddWTE {
		for r := 0; r < len(j.DWTE)/C; r++ {
			clear(j.DWTE[r*C+lo : r*C+hi])
		}
	}
	if first {
		for r := 0; r < len(j.DWPE)/C; r++ {
			clear(j.DWPE[r*C+lo : r*C+hi])
		}
	}
	for n := r0; n < r1; n++ {
		d := j.DOut[n*C+lo : n*C+hi]
		de := j.DWTE[j.IDs[n]*C+lo : j.IDs[n]*C+hi]
		dp := j.DWPE[j.Pos[n]*C+lo : j.Pos[n]*C+hi]
		for i, v := range d {
			de[i] += v
			dp[i] += v
		}
	}
}
