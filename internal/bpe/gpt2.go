package bpe

// This file holds LoadGPT2: GPT-2's published tokenizer files
// (encoder.json and vocab.bpe) read into a Tokenizer with GPT-2's ids.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MaxGPT2FileBytes bounds each file LoadGPT2 reads (GPT-2's encoder.json
// has 1.0 MB, its vocab.bpe 0.46 MB).
const MaxGPT2FileBytes = 16 << 20

// byteRune is GPT-2's byte-to-unicode mapping: the character that stands
// for each byte in its files. The printable bytes '!'..'~', '¡'..'¬' and
// '®'..'ÿ' stand for themselves (as code points); the 68 others, in byte
// order, for U+0100, U+0101 and so on, so that no token's text holds a
// space or a control character.
var byteRune = func() (m [NumBytes]rune) {
	n := rune(0)
	for b := range NumBytes {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[b] = rune(b)
		} else {
			m[b] = NumBytes + n
			n++
		}
	}
	return m
}()

// runeByte is byteRune inverted: the byte each character below U+0144
// stands for, or -1.
var runeByte = func() (m [NumBytes + 68]int16) {
	for i := range m {
		m[i] = -1
	}
	for b, r := range byteRune {
		m[r] = int16(b)
	}
	return m
}()

// gpt2Bytes returns the bytes a token's text in GPT-2's files stands for,
// and false if a character of it stands for no byte.
func gpt2Bytes(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
			return nil, false
		}
		out = append(out, byte(runeByte[r]))
	}
	return out, true
}

// LoadGPT2 reads GPT-2's tokenizer from its two published files:
// encoder.json (each token's text, in GPT-2's byte-to-unicode mapping,
// and its id) and vocab.bpe (a "#version" line, then one merge a line,
// the two tokens' texts separated by a space, in rank order). The
// tokenizer encodes with GPT-2's ids: its token NumBytes+r is merge r,
// as in GPT-2's files, and a token in encoder.json that no merge makes
// and that is not a byte, "<|endoftext|>" (id 50256), becomes a special
// token, which text never encodes to (see Encode).
//
// Files that do not describe such a tokenizer (ids not laid out so, a
// merge of tokens not made yet, a token's text that is not the texts of
// its parts joined) are refused with an error wrapping ErrBadTokenizer.
func LoadGPT2(encoderJSON, vocabBPE io.Reader) (*Tokenizer, error) {
	bad := func(file, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadTokenizer, file, fmt.Sprintf(format, a...))
	}
	encData, err := readLimited(encoderJSON, MaxGPT2FileBytes)
	if err != nil {
		return nil, fmt.Errorf("bpe: encoder.json: %w", err)
	}
	mergeData, err := readLimited(vocabBPE, MaxGPT2FileBytes)
	if err != nil {
		return nil, fmt.Errorf("bpe: vocab.bpe: %w", err)
	}
	var encoder map[string]int
	if err := json.Unmarshal(encData, &encoder); err != nil {
		return nil, bad("encoder.json", "%v", err)
	}
	if len(encoder) < NumBytes || len(encoder) > MaxVocabSize {
		return nil, bad("encoder.json", "%d tokens, want %d to %d", len(encoder), NumBytes, MaxVocabSize)
	}
	textOf := make([]string, len(encoder)) // id -> text in encoder.json
	for text, id := range encoder {
		if id < 0 || id >= len(encoder) {
			return nil, bad("encoder.json", "token %q has id %d: the ids must run from 0 to %d", text, id, len(encoder)-1)
		}
		if textOf[id] != "" || text == "" {
			return nil, bad("encoder.json", "id %d is given to %q and %q", id, textOf[id], text)
		}
		textOf[id] = text
	}

	var byteOf [NumBytes]byte
	for b, r := range byteRune {
		id, ok := encoder[string(r)]
		if !ok || id >= NumBytes {
			return nil, bad("encoder.json", "byte %#02x (%q) must be a token with an id below %d", b, r, NumBytes)
		}
		byteOf[id] = byte(b)
	}

	lines := strings.Split(string(mergeData), "\n")
	if !strings.HasPrefix(lines[0], "#version") {
		return nil, bad("vocab.bpe", "line 1 is %q, want a #version line", lines[0])
	}
	lines = lines[1:]
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the newline that ends the last line
	}
	if NumBytes+len(lines) > len(encoder) {
		return nil, bad("vocab.bpe", "%d merges, but encoder.json has only %d tokens", len(lines), len(encoder))
	}
	merges := make([]Pair, len(lines))
	for r, line := range lines {
		left, right, ok := strings.Cut(line, " ")
		if !ok || left == "" || right == "" || strings.Contains(right, " ") {
			return nil, bad("vocab.bpe", "line %d is %q, want two tokens separated by a space", r+2, line)
		}
		l, okL := encoder[left]
		rt, okR := encoder[right]
		id, okID := encoder[left+right]
		switch {
		case !okL || !okR:
			return nil, bad("vocab.bpe", "line %d merges %q and %q, which are not both in encoder.json", r+2, left, right)
		case !okID || id != NumBytes+r:
			return nil, bad("vocab.bpe", "line %d (merge %d) makes %q, which must be token %d in encoder.json", r+2, r, left+right, NumBytes+r)
		}
		merges[r] = Pair{l, rt}
	}
	specials := textOf[NumBytes+len(merges):]
	t, err := newTokenizer(&byteOf, merges, specials)
	if err != nil {
		return nil, fmt.Errorf("%w (from GPT-2's files)", err)
	}
	// Every merged token's text stands for the bytes its tree makes (the
	// check above joined texts; this one checks the mapping).
	for id := NumBytes; id < NumBytes+len(merges); id++ {
		b, ok := gpt2Bytes(textOf[id])
		if !ok || !bytes.Equal(b, t.TokenBytes(id)) {
			return nil, bad("encoder.json", "token %d (%q) does not stand for the bytes of its merges", id, textOf[id])
		}
	}
	return t, nil
}

// readLimited reads r to its end, at most limit bytes (more is an
// error).
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
