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
// for rows r in [R0, R1) in ascending order, so every embedding's chain
// has one order. A job over columns [0, C): each column is a chain over
// the rows of its own. With SetWTE (SetWPE) the gradient's columns start
// from +0 in every row of the table; without, they continue what is there
// (the second half of the rows, or the tied head's part of dwte).
type EncoderBackward struct {
	DWTE, DWPE     []float64 // (V, C), (T, C)
	DOut           []float64 // (N, C)
	IDs, Pos       []int     // (N)
	R0, R1         int       // the rows to add
	SetWTE, SetWPE bool
	C              int
}

// Run adds the rows' gradients to columns [lo, hi) of the tables.
func (j *EncoderBackward) Run(lo, hi int) {
	C := j.C
	if j.SetWTE {
		for r := 0; r < len(j.DWTE)/C; r++ {
			clear(j.DWTE[r*C+lo : r*C+hi])
		}
	}
	if j.SetWPE {
		for r := 0; r < len(j.DWPE)/C; r++ {
			clear(j.DWPE[r*C+lo : r*C+hi])
		}
	}
	for n := j.R0; n < j.R1; n++ {
		d := j.DOut[n*C+lo : n*C+hi]
		de := j.DWTE[j.IDs[n]*C+lo : j.IDs[n]*C+hi]
		dp := j.DWPE[j.Pos[n]*C+lo : j.Pos[n]*C+hi]
		for i, v := range d {
			de[i] += v
			dp[i] += v
		}
	}
}
