package bpe

// This file holds the two stored forms of a Tokenizer: a compact binary
// one for checkpoints and files, and a JSON one for the metadata of a
// safetensors file and for other languages.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

// FormatVersion is the version of the binary and JSON forms this package
// writes and reads. Version 1 means: GPT-2's split (Pattern), byte-level
// merges applied in rank order, ids laid out as Tokenizer says.
const FormatVersion = 1

// binaryMagic starts the binary form (8 bytes, counted in MaxBinarySize).
const binaryMagic = "minibpe\n"

// flagByteOrder says that the binary form lists the byte of each of the
// first 256 tokens (GPT-2's order); without it they are in byte order.
const flagByteOrder = 1

// MaxBinarySize bounds the binary form: the largest vocabulary with ids
// of three bytes each.
const MaxBinarySize = 8 + 2*binary.MaxVarintLen32 + NumBytes + 2*3*MaxVocabSize + MaxSpecials*(2+MaxSpecialBytes) + 4

// MarshalBinary returns the tokenizer's binary form, the same bytes for
// the same tokenizer on every machine. All integers are unsigned
// varints (encoding/binary's, in their shortest form):
//
//	"minibpe\n"            8 bytes
//	version                1
//	flags                  bit 0: a byte order follows; no other bit is set
//	byte order             if bit 0: 256 bytes, the byte of tokens 0 to 255
//	merges M               then M pairs: left id, right id (< 256 + rank)
//	specials S             then S times: length (1 to 64), UTF-8 text
//	CRC-32                 IEEE, of everything before it, 4 bytes little-endian
func (t *Tokenizer) MarshalBinary() ([]byte, error) {
	b := []byte(binaryMagic)
	b = binary.AppendUvarint(b, FormatVersion)
	flags := uint64(0)
	if !t.byteOrderIsIdentity() {
		flags |= flagByteOrder
	}
	b = binary.AppendUvarint(b, flags)
	if flags&flagByteOrder != 0 {
		b = append(b, t.byteOf[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(t.merges)))
	for _, m := range t.merges {
		b = binary.AppendUvarint(b, uint64(m.Left))
		b = binary.AppendUvarint(b, uint64(m.Right))
	}
	b = binary.AppendUvarint(b, uint64(len(t.specials)))
	for _, s := range t.specials {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

func (t *Tokenizer) byteOrderIsIdentity() bool {
	for id, b := range t.byteOf {
		if int(b) != id {
			return false
		}
	}
	return true
}

// UnmarshalBinary sets t to the tokenizer whose binary form (see
// MarshalBinary) is data. It checks everything, allocates in proportion
// to len(data) at most, and refuses anything but the exact form
// MarshalBinary writes (a varint that is not the shortest, bytes after
// the checksum) with an error wrapping ErrBadTokenizer; t is then
// unchanged.
func (t *Tokenizer) UnmarshalBinary(data []byte) error {
	u, err := readBinary(data)
	if err != nil {
		return err
	}
	*t = *u
	return nil
}

// ReadBinary returns the tokenizer whose binary form is data (see
// UnmarshalBinary).
func ReadBinary(data []byte) (*Tokenizer, error) { return readBinary(data) }

func readBinary(data []byte) (*Tokenizer, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadTokenizer, fmt.Sprintf(format, a...))
	}
	switch {
	case len(data) > MaxBinarySize:
		return nil, bad("%d bytes, more than the %d of the largest tokenizer", len(data), MaxBinarySize)
	case len(data) < len(binaryMagic)+4 || string(data[:len(binaryMagic)]) != binaryMagic:
		return nil, bad("does not start with %q", binaryMagic)
	}
	body := data[:len(data)-4]
	if got, want := binary.LittleEndian.Uint32(data[len(body):]), crc32.ChecksumIEEE(body); got != want {
		return nil, bad("checksum %08x, want %08x: the data is damaged", got, want)
	}
	r := reader{b: body, off: len(binaryMagic)}
	version, err := r.uvarint("the version", 1<<20)
	if err != nil {
		return nil, err
	}
	if version != FormatVersion {
		return nil, bad("format version %d; this build reads version %d", version, FormatVersion)
	}
	flags, err := r.uvarint("the flags", flagByteOrder)
	if err != nil {
		return nil, err
	}
	var byteOrder *[NumBytes]byte
	if flags&flagByteOrder != 0 {
		order, err := r.take(NumBytes, "the byte order")
		if err != nil {
			return nil, err
		}
		byteOrder = (*[NumBytes]byte)(order)
	}
	nMerges, err := r.uvarint("the number of merges", MaxVocabSize-NumBytes)
	if err != nil {
		return nil, err
	}
	if rest := len(r.b) - r.off; nMerges > rest/2 { // each merge takes 2 bytes or more
		return nil, bad("%d merges in %d bytes", nMerges, rest)
	}
	merges := make([]Pair, nMerges)
	for i := range merges {
		limit := NumBytes + i - 1
		left, err := r.uvarint(fmt.Sprintf("merge %d's left token", i), limit)
		if err != nil {
			return nil, err
		}
		right, err := r.uvarint(fmt.Sprintf("merge %d's right token", i), limit)
		if err != nil {
			return nil, err
		}
		merges[i] = Pair{left, right}
	}
	nSpecials, err := r.uvarint("the number of special tokens", MaxSpecials)
	if err != nil {
		return nil, err
	}
	specials := make([]string, nSpecials)
	for i := range specials {
		n, err := r.uvarint(fmt.Sprintf("special token %d's length", i), MaxSpecialBytes)
		if err != nil {
			return nil, err
		}
		s, err := r.take(n, fmt.Sprintf("special token %d", i))
		if err != nil {
			return nil, err
		}
		specials[i] = string(s)
	}
	if r.off != len(r.b) {
		return nil, bad("%d bytes after the special tokens, before the checksum", len(r.b)-r.off)
	}
	return newTokenizer(byteOrder, merges, specials)
}

// reader reads the binary form's fields.
type reader struct {
	b   []byte
	off int
}

// uvarint reads a varint in its shortest form, at most max, naming what
// for an error.
func (r *reader) uvarint(what string, max int) (int, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		return 0, fmt.Errorf("%w: the data ends in %s (byte %d)", ErrBadTokenizer, what, r.off)
	case n < 0 || n != len(binary.AppendUvarint(nil, v)):
		return 0, fmt.Errorf("%w: %s is not a shortest varint (byte %d)", ErrBadTokenizer, what, r.off)
	case v > uint64(max):
		return 0, fmt.Errorf("%w: %s is %d, more than %d (byte %d)", ErrBadTokenizer, what, v, max, r.off)
	}
	r.off += n
	return int(v), nil
}

// take reads n bytes, naming what for an error.
func (r *reader) take(n int, what string) ([]byte, error) {
	if len(r.b)-r.off < n {
		return nil, fmt.Errorf("%w: the data ends in %s (byte %d)", ErrBadTokenizer, what, r.off)
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

// jsonForm is the JSON form's layout. Pattern is there so that a reader
// in another language can split text without knowing GPT-2's pattern:
// it is always Pattern.
type jsonForm struct {
	Format    string         `json:"format"`
	Version   int            `json:"version"`
	Pattern   string         `json:"pattern"`
	ByteOrder []int          `json:"byte_order,omitempty"`
	Merges    [][]int        `json:"merges"`
	Special   map[string]int `json:"special,omitempty"`
}

// jsonFormat names the JSON form.
const jsonFormat = "minigpt-bpe"

// MarshalJSON returns the tokenizer's JSON form, valid UTF-8 fit for a
// safetensors metadata string, the same bytes for the same tokenizer:
//
//	{"format":"minigpt-bpe","version":1,"pattern":"'s|'t|...",
//	 "merges":[[104,101],[32,116],...],"special":{"<|endoftext|>":50256}}
//
// merges[r] are the ids of the two tokens that merge r joins into token
// 256+r; "byte_order", present only when the first 256 tokens are not
// the bytes in order (GPT-2), lists the byte of each; "special" maps
// each special token's text to its id.
func (t *Tokenizer) MarshalJSON() ([]byte, error) {
	f := jsonForm{Format: jsonFormat, Version: FormatVersion, Pattern: Pattern, Merges: make([][]int, len(t.merges))}
	if !t.byteOrderIsIdentity() {
		f.ByteOrder = make([]int, NumBytes)
		for id, b := range t.byteOf {
			f.ByteOrder[id] = int(b)
		}
	}
	for r, m := range t.merges {
		f.Merges[r] = []int{m.Left, m.Right}
	}
	if len(t.specials) > 0 {
		f.Special = map[string]int{}
		for s, name := range t.specials {
			f.Special[name] = NumBytes + len(t.merges) + s
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<|endoftext|>" reads as itself
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON sets t to the tokenizer whose JSON form (see
// MarshalJSON) is data, checking everything as UnmarshalBinary does:
// unknown fields, a pattern other than Pattern, a merge that is not two
// ids and special ids that do not follow the merges are refused with an
// error wrapping ErrBadTokenizer, and t is then unchanged.
func (t *Tokenizer) UnmarshalJSON(data []byte) error {
	u, err := ReadJSON(data)
	if err != nil {
		return err
	}
	*t = *u
	return nil
}

// ReadJSON returns the tokenizer whose JSON form is data (see
// UnmarshalJSON).
func ReadJSON(data []byte) (*Tokenizer, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: JSON form: %s", ErrBadTokenizer, fmt.Sprintf(format, a...))
	}
	if !utf8.Valid(data) {
		return nil, bad("not valid UTF-8")
	}
	var f jsonForm
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, bad("%v", err)
	}
	if dec.More() {
		return nil, bad("more data after the object")
	}
	switch {
	case f.Format != jsonFormat:
		return nil, bad("format %q, want %q", f.Format, jsonFormat)
	case f.Version != FormatVersion:
		return nil, bad("version %d; this build reads version %d", f.Version, FormatVersion)
	case f.Pattern != Pattern:
		return nil, bad("pattern %q, want GPT-2's, %q", f.Pattern, Pattern)
	case len(f.Merges) > MaxVocabSize-NumBytes:
		return nil, bad("%d merges, more than %d", len(f.Merges), MaxVocabSize-NumBytes)
	case len(f.Special) > MaxSpecials:
		return nil, bad("%d special tokens, more than %d", len(f.Special), MaxSpecials)
	}
	var byteOrder *[NumBytes]byte
	if f.ByteOrder != nil {
		if len(f.ByteOrder) != NumBytes {
			return nil, bad("byte_order has %d entries, want %d", len(f.ByteOrder), NumBytes)
		}
		byteOrder = new([NumBytes]byte)
		for id, b := range f.ByteOrder {
			if b < 0 || b > 255 {
				return nil, bad("byte_order[%d] is %d, not a byte", id, b)
			}
			byteOrder[id] = byte(b)
		}
	}
	merges := make([]Pair, len(f.Merges))
	for r, m := range f.Merges {
		if len(m) != 2 {
			return nil, bad("merges[%d] has %d ids, want 2", r, len(m))
		}
		merges[r] = Pair{m[0], m[1]}
	}
	specials := make([]string, len(f.Special))
	first := NumBytes + len(merges)
	for name, id := range f.Special {
		if id < first || id >= first+len(specials) || specials[id-first] != "" {
			return nil, bad("special token %q has id %d: the %d special ids must be %d to %d, one each", name, id, len(specials), first, first+len(specials)-1)
		}
		specials[id-first] = name
	}
	return newTokenizer(byteOrder, merges, specials)
}
