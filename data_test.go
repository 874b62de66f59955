package minigpt

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// shakespeareSHA256 is the hash of char-rnn's tinyshakespeare input.txt,
// the file nanoGPT's shakespeare_char downloads (data/README.md).
const shakespeareSHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"

// TestShippedShakespeare checks that data/tinyshakespeare.txt, which the
// README's Shakespeare example trains on, is the exact published text,
// and that data/README.md states the same hash.
func TestShippedShakespeare(t *testing.T) {
	b, err := os.ReadFile("data/tinyshakespeare.txt")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != shakespeareSHA256 || len(b) != 1115394 {
		t.Fatalf("data/tinyshakespeare.txt: %d bytes, SHA-256 %s; want 1115394 bytes, %s (was it re-encoded, e.g. by a line-ending filter?)", len(b), got, shakespeareSHA256)
	}
	v, err := NewVocab(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 65 {
		t.Fatalf("vocabulary of %d characters, want 65", v.Size())
	}
	doc, err := os.ReadFile("data/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), shakespeareSHA256) {
		t.Fatal("data/README.md does not state the file's SHA-256")
	}
}
