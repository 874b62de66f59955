package minigpt_test

// The Example of WriteSafetensors and ReadSafetensors.

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
	if err := minigpt.WriteSafetensors(&file, &minigpt.Checkpoint{Model: m, Vocab: vocab, Step: 1200}, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes for %d parameters\n", file.Len(), m.NumParams())

	c, err := minigpt.ReadSafetensors(&file)
	if err != nil {
		log.Fatal(err)
	}
	same, want := true, m.Tensors()
	for i, t := range c.Model.Tensors() {
		for j, x := range t.Data {
			same = same && x == want[i].Data[j]
		}
	}
	fmt.Printf("%+v, step %d, %d characters, the same weights: %v\n", c.Model.Config(), c.Step, c.Vocab.Size(), same)
	// Output:
	// 840216 bytes for 104728 parameters
	// {VocabSize:24 BlockSize:32 EmbedDim:64 Heads:4 Layers:2 TiedHead:false}, step 1200, 24 characters, the same weights: true
}
