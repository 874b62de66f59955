package minigpt_test

// The Example of WriteSafetensors, read back by ReadCheckpoint.

import (
	"bytes"
	"fmt"
	"log"

	"example.org/minigpt"
)

// Export the embedded model as safetensors, for PyTorch
// (python/minigpt.py), and read it back as it would come home.
func ExampleWriteSafetensors() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer // or a file: see cmd/export
	if err := minigpt.WriteSafetensors(&file, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 1200}, "F64"); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes for %d parameters\n", file.Len(), len(m.Params()))

	c, err := minigpt.ReadCheckpoint(&file) // the format is told by its first bytes
	if err != nil {
		log.Fatal(err)
	}
	same, want := true, m.Params()
	for i, x := range c.Model.Params() {
		same = same && x == want[i]
	}
	fmt.Printf("%+v, step %d, %d characters, the same weights: %v\n", c.Model.Config(), c.Step, c.Vocab.Size(), same)
	// Output:
	// 840216 bytes for 104728 parameters
	// {VocabSize:24 BlockSize:32 EmbedDim:64 Heads:4 Layers:2 TiedHead:false}, step 1200, 24 characters, the same weights: true
}
