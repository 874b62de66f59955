package main

// This file holds scoring in pieces: Model.Score reports nothing until it
// ends, and a large text takes minutes, so eval scores a few dozen
// windows at a time and reports progress between them.

import (
	"context"

	"example.org/minigpt"
	"example.org/minigpt/cmd/internal/cli"
)

// pieceWindows is the number of context windows scored per Score call:
// a multiple of the library's 8 windows a pass, and small enough that a
// piece of the largest model's takes well under a second.
const pieceWindows = 64

// scoreInPieces returns m.Score(ctx, ids, stride, topN), the same Steps
// bit for bit, computed pieceWindows windows at a time with progress (in
// characters scored) reported to p between pieces.
//
// Score reads windows of the block size starting at every multiple of
// the stride, each scoring the tokens after the last one an earlier
// window scored. A piece is the windows from one such start b on: Score
// over ids[b:] up to the end of its last window, whose windows are the
// same ones, shifted by b. Its first window also scores tokens an earlier
// piece scored (when the stride is below the block size), with less
// context than they had there; those are dropped.
func scoreInPieces(ctx context.Context, m *minigpt.Model, ids []int, stride, topN int, p *cli.Progress) ([]minigpt.Step, error) {
	T := m.Config().BlockSize
	if stride == 0 {
		stride = T
	}
	out := make([]minigpt.Step, 0, max(len(ids)-1, 0))
	next := 1 // the first token no piece has scored
	for b := 0; next < len(ids); b += pieceWindows * stride {
		end := min(b+(pieceWindows-1)*stride+T+1, len(ids))
		steps, err := m.Score(ctx, ids[b:end], stride, topN)
		for _, s := range steps {
			if s.Pos += b; s.Pos >= next {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			next = out[len(out)-1].Pos + 1
		}
		p.Set(int64(len(out)))
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
