package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"example.org/minigpt"
)

// Scoring in pieces is Score, bit for bit: every Step (position,
// log-probabilities, context, top candidates) at every stride, for texts
// that end inside a piece, at its end and just after.
func TestScoreInPiecesIsScore(t *testing.T) {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	T := m.Config().BlockSize // 32
	text := strings.Repeat(minigpt.LanternBay[:1000], 3)
	ids, err := vocab.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, stride := range []int{0, 1, 5, T - 1, T} {
		s := stride
		if s == 0 {
			s = T
		}
		// The length at which the text ends just as the first piece does,
		// and lengths around it.
		edge := (pieceWindows-1)*s + T + 1
		for _, n := range []int{2, T, T + 1, T + 2, edge - 1, edge, edge + 1, edge + s, min(len(ids), 3*edge+7)} {
			if n > len(ids) {
				continue
			}
			want, err := m.Score(context.Background(), ids[:n], stride, 3)
			if err != nil {
				t.Fatal(err)
			}
			got, err := scoreInPieces(context.Background(), m, ids[:n], stride, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				i := 0
				for i < min(len(got), len(want)) && reflect.DeepEqual(got[i], want[i]) {
					i++
				}
				t.Fatalf("stride %d, %d tokens: %d steps, want %d; the first difference is at step %d", stride, n, len(got), len(want), i)
			}
		}
	}
}

// A cancelled context stops between pieces with what was scored so far.
func TestScoreInPiecesCancelled(t *testing.T) {
	m, vocab, _ := minigpt.DefaultModel()
	ids, _ := vocab.Encode(minigpt.LanternBay)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := scoreInPieces(ctx, m, ids, 0, 0, nil)
	if err == nil || len(got) != 0 {
		t.Errorf("cancelled: %d steps, %v", len(got), err)
	}
}
