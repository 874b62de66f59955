package minigpt

// This file holds the text side: Vocab (characters or BPE tokens and their
// ids), Dataset (a text encoded and split 90/10) and the built-in
// LanternBay.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"example.org/minigpt/internal/bpe"
	"example.org/minigpt/internal/textpos"
)

// LanternBay is the built-in training corpus, the one the lessons train
// on: ten sentences about a lamp keeper, repeated 20 times (10,020
// characters over a 24-character vocabulary). It is a constant, so no
// program can change what "the built-in text" means.
const LanternBay = lanternBay16 + lanternBay4

// The ten sentences once, then repeated: 2, 4 and 16 times.
const (
	lanternBay1 = "the lamp keeper walks the shore at dusk. " +
		"the lamp keeper lights the lantern when the fog rolls in. " +
		"the boats come home when the lantern glows. " +
		"the boats wait outside the bay when the fog is thick. " +
		"a small boat drifts near the rocks at dawn. " +
		"the keeper rings the bell when a boat drifts near the rocks. " +
		"the tide rises at dusk and falls at dawn. " +
		"the gulls call over the bay when the tide is low. " +
		"the keeper counts the boats and writes the count in a book. " +
		"the lantern burns all night and rests at dawn. "
	lanternBay2  = lanternBay1 + lanternBay1
	lanternBay4  = lanternBay2 + lanternBay2
	lanternBay16 = lanternBay4 + lanternBay4 + lanternBay4 + lanternBay4
)

var (
	// ErrBadText is returned (wrapped) for text the vocabulary cannot
	// encode (naming the character and its position), text that cannot be
	// a corpus, and token ids outside the vocabulary.
	ErrBadText = errors.New("unusable text")
)

// maxVocabSize bounds the vocabulary: every Unicode code point could occur.
const maxVocabSize = utf8.MaxRune + 1

// Vocab maps text to token ids 0..Size()-1 and back. It is one of two
// kinds: the lessons' characters (NewVocab: the text's distinct runes in
// sorted order, like sorted(set(text))), or a byte-level BPE tokenizer
// (NewBPEVocab), whose tokens are byte strings that may hold several
// characters or part of one.
type Vocab struct {
	chars []rune         // characters: id -> character, ascending
	index map[rune]int   // characters: character -> id
	tok   *bpe.Tokenizer // BPE: the tokenizer (chars and index are nil)
}

// NewVocab builds the vocabulary of text: its distinct runes, sorted. It
// refuses empty text and invalid UTF-8 (naming where).
func NewVocab(text string) (*Vocab, error) {
	if text == "" {
		return nil, fmt.Errorf("%w: empty text", ErrBadText)
	}
	if off := invalidUTF8Offset(text); off >= 0 {
		return nil, badUTF8(text, off)
	}
	// A table for ASCII, a map for the rest: most corpora are nearly all
	// ASCII, and a map lookup per byte would take seconds a gigabyte.
	var ascii [utf8.RuneSelf]bool
	other := make(map[rune]bool)
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			ascii[c] = true
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		other[r] = true
		i += n
	}
	chars := make([]rune, 0, len(other)+utf8.RuneSelf)
	for c, ok := range ascii {
		if ok {
			chars = append(chars, rune(c))
		}
	}
	for r := range other {
		chars = append(chars, r)
	}
	slices.Sort(chars)
	return vocabFromChars(chars)
}

// vocabFromChars builds a vocabulary from its characters in id order; they
// must be valid, distinct and ascending (as a checkpoint stores them).
func vocabFromChars(chars []rune) (*Vocab, error) {
	if len(chars) == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrBadText)
	}
	index := make(map[rune]int, len(chars))
	for i, r := range chars {
		if !utf8.ValidRune(r) {
			return nil, fmt.Errorf("%w: vocabulary entry %d is not a valid character (%#x)", ErrBadText, i, r)
		}
		if i > 0 && r <= chars[i-1] {
			return nil, fmt.Errorf("%w: vocabulary entry %d (%q) is not above entry %d (%q)", ErrBadText, i, r, i-1, chars[i-1])
		}
		index[r] = i
	}
	return &Vocab{chars: slices.Clone(chars), index: index}, nil
}

// badUTF8 is the error of text whose bytes from off are not UTF-8.
func badUTF8(text string, off int) error {
	return fmt.Errorf("%w: not valid UTF-8 (byte offset %d) %s", ErrBadText, off, textpos.At(text, utf8.RuneCountInString(text[:off])))
}

// invalidUTF8Offset returns the byte offset of s's first invalid UTF-8,
// or -1.
func invalidUTF8Offset(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// Size returns the number of tokens.
func (v *Vocab) Size() int {
	if v.tok != nil {
		return v.tok.VocabSize()
	}
	return len(v.chars)
}

// Token returns the text of token id: one character, or a BPE token's
// bytes (which may be part of a character); "" for an id outside the
// vocabulary.
func (v *Vocab) Token(id int) string {
	switch {
	case v.tok != nil:
		return v.tok.Token(id)
	case id < 0 || id >= len(v.chars):
		return ""
	}
	return string(v.chars[id])
}

// String describes the vocabulary in a few words: "24 characters", or
// "byte-level BPE, 512 tokens (256 merges)".
func (v *Vocab) String() string {
	if v.tok != nil {
		return v.tok.String()
	}
	return fmt.Sprintf("%d characters", len(v.chars))
}

// Encode turns text into token ids. For a character vocabulary, a
// character outside it is an error wrapping ErrBadText that names it and
// its position (in characters, from 0); a BPE vocabulary encodes any
// text.
func (v *Vocab) Encode(text string) ([]int, error) {
	if v.tok != nil {
		return v.tok.Encode(text), nil
	}
	ids := make([]int, 0, len(text))
	pos := 0
	for off, r := range text {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(text[off:]); n == 1 {
				return nil, badUTF8(text, off)
			}
		}
		id, ok := v.index[r]
		if !ok {
			return nil, fmt.Errorf("%w: %q (%U) %s is not in the vocabulary", ErrBadText, r, r, textpos.At(text, pos))
		}
		ids = append(ids, id)
		pos++
	}
	return ids, nil
}

// Decode turns token ids back into text; an id outside [0, Size()) is an
// error wrapping ErrBadText that names it and its position. BPE tokens
// decode to their bytes, which end inside a character when the last
// token holds only part of one.
func (v *Vocab) Decode(ids []int) (string, error) {
	if v.tok != nil {
		s, err := v.tok.Decode(ids)
		if err != nil {
			return "", fmt.Errorf("decode: %w: %w", ErrBadText, err)
		}
		return s, nil
	}
	var b strings.Builder
	for i, id := range ids {
		if id < 0 || id >= len(v.chars) {
			return "", fmt.Errorf("decode: %w: token id %d at index %d (counting from 0) is outside [0, %d)", ErrBadText, id, i, len(v.chars))
		}
		b.WriteRune(v.chars[id])
	}
	return b.String(), nil
}

// text decodes ids, which must be the vocabulary's (the generator's own
// tokens), without checking them.
func (v *Vocab) text(ids []int) string {
	if v.tok != nil {
		b, _ := v.tok.AppendDecode(nil, ids)
		return string(b)
	}
	if len(ids) == 1 && v.chars[ids[0]] < utf8.RuneSelf {
		// The usual streamed part, one ASCII character: a one-byte
		// string is the runtime's own, not allocated.
		b := [1]byte{byte(v.chars[ids[0]])}
		return string(b[:])
	}
	rs := make([]rune, len(ids))
	for i, id := range ids {
		rs[i] = v.chars[id]
	}
	return string(rs)
}

// appendToken appends the bytes of token id (the vocabulary's) to dst.
func (v *Vocab) appendToken(dst []byte, id int) []byte {
	if v.tok != nil {
		return append(dst, v.tok.Token(id)...)
	}
	return utf8.AppendRune(dst, v.chars[id])
}

// tokenBytes returns every token's bytes, in id order: what a
// constraint binds to. A BPE vocabulary's special tokens get none, so no
// format ever allows them.
func (v *Vocab) tokenBytes() [][]byte {
	out := make([][]byte, v.Size())
	for id := range out {
		if v.tok == nil || !v.tok.IsSpecial(id) {
			out[id] = v.appendToken(nil, id)
		}
	}
	return out
}

// equal reports whether v and w give every token the same text under the
// same id.
func (v *Vocab) equal(w *Vocab) bool {
	if (v.tok == nil) != (w.tok == nil) {
		return false
	}
	if v.tok != nil {
		return v.tok.Equal(w.tok)
	}
	return slices.Equal(v.chars, w.chars)
}

// NewBPEVocab learns a byte-level BPE vocabulary of size tokens (256 to
// 131,072: the 256 bytes, then one token a merge) from the part of text a
// Dataset trains on, its first 90% of characters (see NewDataset), so
// that the validation part stays unseen. It splits text as GPT-2 does
// (words with their leading space, runs of digits, punctuation, white
// space) and merges the most frequent adjacent pair until the vocabulary
// is full, ties to the pair of smaller ids, so the same text and size give
// the same tokens on every machine. Cancelling ctx stops it with ctx's
// error. A size out of range wraps ErrBadConfig, unusable text ErrBadText.
func NewBPEVocab(ctx context.Context, text string, size int) (*Vocab, error) {
	if size < bpe.NumBytes || size > bpe.MaxVocabSize {
		return nil, fmt.Errorf("%w: BPE vocabulary size %d is outside [%d, %d]", ErrBadConfig, size, bpe.NumBytes, bpe.MaxVocabSize)
	}
	if text == "" {
		return nil, fmt.Errorf("%w: empty text", ErrBadText)
	}
	if off := invalidUTF8Offset(text); off >= 0 {
		return nil, badUTF8(text, off)
	}
	tok, err := bpe.Train(ctx, text[:trainSplit(text)], size)
	if err != nil {
		return nil, fmt.Errorf("train BPE: %w", err)
	}
	return &Vocab{tok: tok}, nil
}

// trainSplit returns the byte offset of text's training part's end: its
// first 90% of characters.
func trainSplit(text string) int {
	n := utf8.RuneCountInString(text)
	k := n * 9 / 10
	if n == len(text) {
		return k // ASCII
	}
	for off := range text {
		if k == 0 {
			return off
		}
		k--
	}
	return len(text)
}

// Dataset is an encoded corpus split into a training part (the first 90%
// of its characters) and a held-out validation part (the rest). Token ids
// are stored as int32, four bytes a token, and batches are cut from them
// in place.
type Dataset struct {
	Vocab *Vocab
	Train []int32 // the first 90% of the text's characters
	Val   []int32 // the last 10%

	sum *[32]byte // the SHA-256 of NewDataset's text
}

// hashText returns the SHA-256 of text, through a small buffer rather
// than a copy of the whole text.
func hashText(text string) [32]byte {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for len(text) > 0 {
		n := copy(buf, text)
		h.Write(buf[:n])
		text = text[n:]
	}
	return [32]byte(h.Sum(nil))
}

// textSHA256 returns the SHA-256 of the text d was made from: its tokens
// decoded to UTF-8, the training part then the validation part, which is
// the text given to NewDataset. Full checkpoints record it so that a run
// is resumed on the text it was trained on. NewDataset hashes the text
// as it is given (a gigabyte in under a second), so that saving a
// checkpoint on a signal does not wait for the tokens to be decoded and
// hashed; a Dataset made another way is hashed from its tokens.
func (d *Dataset) textSHA256() [32]byte {
	if d.sum != nil {
		return *d.sum
	}
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	for _, part := range [][]int32{d.Train, d.Val} {
		for _, id := range part {
			buf = d.Vocab.appendToken(buf, int(id))
			if len(buf) > cap(buf)-utf8.UTFMax {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return [32]byte(h.Sum(nil))
}

// NewDataset encodes text with vocab (nil: text's own characters) and
// splits it at its 90% character, each part encoded apart and holding at
// least blockSize+2 tokens (a window and its target).
//
// Tokens take 4 bytes each beside the text (12 while BPE encodes them):
// N bytes of ASCII need 5N bytes, and 4N once the caller drops the text.
func NewDataset(text string, vocab *Vocab, blockSize int) (*Dataset, error) {
	if vocab == nil {
		v, err := NewVocab(text)
		if err != nil {
			return nil, err
		}
		vocab = v
	}
	if blockSize < 1 {
		return nil, fmt.Errorf("%w: block size %d must be positive", ErrBadText, blockSize)
	}
	if vocab.Size() < 2 {
		return nil, fmt.Errorf("%w: the text has only %d distinct character; a model needs at least 2", ErrBadText, vocab.Size())
	}
	if off := invalidUTF8Offset(text); off >= 0 {
		return nil, badUTF8(text, off)
	}
	var d *Dataset
	if vocab.tok != nil {
		// The parts are encoded apart, so that no token spans the split
		// and the validation part is the text NewBPEVocab did not see.
		split := trainSplit(text)
		d = &Dataset{Vocab: vocab, Train: encode32(vocab.tok, text[:split]), Val: encode32(vocab.tok, text[split:])}
	} else {
		var err error
		if d, err = encodeChars(text, vocab); err != nil {
			return nil, err
		}
	}
	sum := hashText(text)
	d.sum = &sum
	need := blockSize + 2
	if len(d.Train) < need || len(d.Val) < need {
		n := utf8.RuneCountInString(text)
		hint := fmt.Sprintf(" (a corpus of at least %d characters)", 10*need)
		if vocab.tok != nil {
			hint = ""
		}
		return nil, fmt.Errorf("%w: %d characters give %d training and %d validation tokens; block size %d needs at least %d in each%s",
			ErrBadText, n, len(d.Train), len(d.Val), blockSize, need, hint)
	}
	return d, nil
}

// encode32 is tok.Encode into int32s, a dataset's storage.
func encode32(tok *bpe.Tokenizer, text string) []int32 {
	ids := tok.Encode(text)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// encodeChars encodes text with a character vocabulary and splits it.
func encodeChars(text string, vocab *Vocab) (*Dataset, error) {
	n := utf8.RuneCountInString(text)
	ids := make([]int32, n)
	// ASCII through a table, the rest through the map (as NewVocab).
	var ascii [utf8.RuneSelf]int32
	for c := range ascii {
		ascii[c] = -1
		if id, ok := vocab.index[rune(c)]; ok {
			ascii[c] = int32(id)
		}
	}
	for pos, off := 0, 0; off < len(text); pos++ {
		r, size, id := rune(text[off]), 1, int32(-1)
		if r < utf8.RuneSelf {
			id = ascii[r]
		} else {
			r, size = utf8.DecodeRuneInString(text[off:])
			if i, ok := vocab.index[r]; ok {
				id = int32(i)
			}
		}
		if id < 0 {
			return nil, fmt.Errorf("%w: %q (%U) %s is not one of the vocabulary's %d characters",
				ErrBadText, r, r, textpos.At(text, pos), vocab.Size())
		}
		ids[pos] = id
		off += size
	}
	split := n * 9 / 10
	return &Dataset{Vocab: vocab, Train: ids[:split:split], Val: ids[split:]}, nil
}
