package minigpt

// What encoding a corpus costs, as NewDataset's doc states it.

import (
	"runtime"
	"strings"
	"testing"
)

// TestNewDatasetTakesFourBytesACharacter: encoding 8 MiB of text (ASCII
// and a few two-byte characters) allocates its tokens, 4 bytes a
// character, and little else: no copy of the text, no second token
// array.
func TestNewDatasetTakesFourBytesACharacter(t *testing.T) {
	text := strings.Repeat(strings.Repeat("the lamp keeper walks the shore at dusk. ", 99)+"café ", 2000)
	chars := len([]rune(text))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := NewDataset(text, nil, 32)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train)+len(d.Val) != chars {
		t.Fatalf("%d tokens of %d characters", len(d.Train)+len(d.Val), chars)
	}
	got, want := after.TotalAlloc-before.TotalAlloc, uint64(4*chars)
	if got > want+want/50+1<<20 {
		t.Errorf("encoding %d characters (%d bytes) allocated %d bytes, want about %d (4 a character)", chars, len(text), got, want)
	}
	t.Logf("%d characters: %d bytes allocated (%.3f a character)", chars, got, float64(got)/float64(chars))
}
