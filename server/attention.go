package server

// This file owns the trace's attention weights (trace_attention): the
// library's flat per-step weights as nested JSON arrays.

import "example.org/minigpt"

// nestAttention returns st's attention weights as [layer][head][s], or nil
// when the step carries none. The rows alias one array: a step's weights
// are copied once.
func nestAttention(st *minigpt.Step, c minigpt.Config) [][][]float64 {
	n := st.Context
	if n == 0 || len(st.Attention) != c.Layers*c.Heads*n {
		return nil
	}
	flat := append([]float64(nil), st.Attention...) // the Step's buffer is reused
	out := make([][][]float64, c.Layers)
	for l := range out {
		out[l] = make([][]float64, c.Heads)
		for h := range out[l] {
			i := (l*c.Heads + h) * n
			out[l][h] = flat[i : i+n : i+n]
		}
	}
	return out
}
