package minigpt

import (
	"testing"

	"example.org/minigpt/internal/testutil"
)

// The shipped weights are provably what `go run ./cmd/train` with its
// defaults produces: retrain (the shared fixture runs exactly that
// configuration) and compare every bit.
func TestEmbeddedModelIsReproducible(t *testing.T) {
	embedded, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	m, v := trainedLanternBay(t)
	if embedded.Config() != m.Config() {
		t.Fatalf("embedded config %+v, training gives %+v", embedded.Config(), m.Config())
	}
	if string(vocab.chars) != string(v.chars) {
		t.Fatalf("embedded vocabulary %q, corpus gives %q", string(vocab.chars), string(v.chars))
	}
	if i, ok := testutil.SameBits(embedded.Params(), m.Params()); !ok {
		t.Fatalf("parameter %d: embedded %v, retrained %v; regenerate with `go run ./cmd/train -weights-only -force -out models/lanternbay.ckpt`", i, embedded.Params()[i], m.Params()[i])
	}
}
