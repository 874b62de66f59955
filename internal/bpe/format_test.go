package bpe

// This file holds the tests of the binary and JSON forms: their bytes,
// round trips, refused damage and bounded memory, fuzzed readers.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seal appends the CRC-32 the binary form ends with.
func seal(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.ChecksumIEEE(body))
}

// The binary form of the first hand example (TestTrainHandExample), byte
// by byte.
func TestMarshalBinaryBytes(t *testing.T) {
	tok, err := Train(context.Background(), "aaaa ab ab", 300)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := seal([]byte("minibpe\n" +
		"\x01" + // version 1
		"\x00" + // flags: the bytes in byte order
		"\x04" + // 4 merges
		"\x61\x61" + // (a, a)
		"\x20\x61" + // (' ', a)
		"\x81\x02\x62" + // (257, b): 257 = 0x01 | 0x80, then 2
		"\x80\x02\x80\x02" + // (256, 256)
		"\x00")) // no special tokens
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalBinary:\n% x\nwant\n% x", got, want)
	}
}

// formsTokenizers are tokenizers of every shape the forms must carry.
func formsTokenizers(tb testing.TB) map[string]*Tokenizer {
	var order [NumBytes]byte
	for id := range NumBytes {
		order[id] = byte(NumBytes - 1 - id)
	}
	reversed, err := newTokenizer(&order, []Pair{{0, 1}, {256, 2}}, []string{EndOfText, "<|pad|>"})
	if err != nil {
		tb.Fatal(err)
	}
	empty, err := newTokenizer(nil, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]*Tokenizer{"mixed": testTokenizer(tb), "reversed bytes and specials": reversed, "bytes only": empty}
}

func TestFormsRoundTrip(t *testing.T) {
	for name, tok := range formsTokenizers(t) {
		b, err := tok.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var fromBinary Tokenizer
		if err := fromBinary.UnmarshalBinary(b); err != nil || !fromBinary.Equal(tok) {
			t.Errorf("%s: binary form: %v", name, err)
		}
		j, err := json.Marshal(tok)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON Tokenizer
		if err := json.Unmarshal(j, &fromJSON); err != nil || !fromJSON.Equal(tok) {
			t.Errorf("%s: JSON form: %v", name, err)
		}
		text := "the keeper's lamp \xff 😀"
		if !slices.Equal(fromBinary.Encode(text), tok.Encode(text)) || !slices.Equal(fromJSON.Encode(text), tok.Encode(text)) {
			t.Errorf("%s: a tokenizer read back encodes differently", name)
		}
		again, _ := fromBinary.MarshalBinary()
		if !bytes.Equal(again, b) {
			t.Errorf("%s: the binary form is not the same bytes twice", name)
		}
	}
}

// The JSON form of a small tokenizer, as Python would read it.
func TestMarshalJSONText(t *testing.T) {
	var order [NumBytes]byte
	for id := range NumBytes {
		order[id] = byte(id)
	}
	order[0], order[1] = 1, 0
	tok, err := newTokenizer(&order, []Pair{{'a', 'b'}}, []string{EndOfText})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(got, &f); err != nil {
		t.Fatal(err)
	}
	orderJSON := "[1,0"
	for id := 2; id < NumBytes; id++ {
		orderJSON += "," + strconv.Itoa(id)
	}
	orderJSON += "]"
	want := `{"format":"minigpt-bpe","version":1,"pattern":` + jsonString(Pattern) + `,"byte_order":` + orderJSON +
		`,"merges":[[97,98]],"special":{"<|endoftext|>":257}}`
	if string(got) != want {
		t.Fatalf("MarshalJSON:\n%s\nwant\n%s", got, want)
	}
}

func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// Every damaged or hostile binary form is refused, saying why.
func TestReadBinaryRefuses(t *testing.T) {
	head := "minibpe\n\x01\x00"
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "does not start with"},
		{"magic", seal([]byte("minibpf\n\x01\x00\x00\x00")), "does not start with"},
		{"checksum", []byte(head + "\x00\x00\x00\x00\x00\x00"), "checksum"},
		{"version 2", seal([]byte("minibpe\n\x02\x00\x00\x00")), "format version 2; this build reads version 1"},
		{"unknown flag", seal([]byte("minibpe\n\x01\x02\x00\x00")), "the flags is 2, more than 1"},
		{"short byte order", seal([]byte("minibpe\n\x01\x01\x00\x00")), "ends in the byte order"},
		{"byte order not a permutation", seal([]byte("minibpe\n\x01\x01" + strings.Repeat("\x07", 256) + "\x00\x00")), "byte 0x07 is token 0 and token 1"},
		{"no merges count", seal([]byte(head)), "ends in the number of merges"},
		{"merges beyond the data", seal([]byte(head + "\xff\xff\x07")), "the number of merges is 131071, more than 130816"},
		{"more merges than bytes", seal([]byte(head + "\x80\x80\x04\x00\x00")), "65536 merges in 2 bytes"},
		{"future token", seal([]byte(head + "\x01\x61\x80\x02\x00")), "merge 0's right token is 256, more than 255"},
		{"pair twice", seal([]byte(head + "\x02\x61\x61\x61\x61\x00")), "merge 1 joins 97 and 97 again"},
		{"long varint", seal([]byte(head + "\x01\xe1\x00\x61\x00")), "merge 0's left token is not a shortest varint"},
		{"overflowing varint", seal([]byte(head + "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x61\x00")), "not a shortest varint"},
		{"no specials count", seal([]byte(head + "\x00")), "ends in the number of special tokens"},
		{"special too long", seal([]byte(head + "\x00\x01\x41" + strings.Repeat("x", 65))), "special token 0's length is 65"},
		{"special cut", seal([]byte(head + "\x00\x01\x05<|a")), "ends in special token 0"},
		{"special not UTF-8", seal([]byte(head + "\x00\x01\x01\xff")), "not valid UTF-8"},
		{"special empty", seal([]byte(head + "\x00\x01\x00")), "special token 0 has 0 bytes"},
		{"trailing bytes", seal([]byte(head + "\x00\x00\x00")), "1 bytes after the special tokens"},
		{"token too long", seal(binaryMerges(doubling(11))), "makes a token of 2048 bytes"},
		{"too large", make([]byte, MaxBinarySize+1), "more than the"},
	} {
		_, err := ReadBinary(tc.data)
		if !errors.Is(err, ErrBadTokenizer) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
		var tok Tokenizer
		if err := tok.UnmarshalBinary(tc.data); err == nil || tok.VocabSize() != 0 {
			t.Errorf("%s: UnmarshalBinary changed the tokenizer", tc.name)
		}
	}
}

// binaryMerges is the body of a binary form holding merges and nothing
// else, without its checksum.
func binaryMerges(merges []Pair) []byte {
	b := []byte("minibpe\n\x01\x00")
	b = binary.AppendUvarint(b, uint64(len(merges)))
	for _, m := range merges {
		b = binary.AppendUvarint(b, uint64(m.Left))
		b = binary.AppendUvarint(b, uint64(m.Right))
	}
	return append(b, 0)
}

// Few bytes can ask for many long tokens: 130 KB of merges for 17 MB of
// tokens is refused once the tokens pass MaxTotalBytes, having allocated
// about that much and no more.
func TestReadBinaryBoundsMemory(t *testing.T) {
	merges := doubling(8) // token 263 has 256 bytes
	for b := range NumBytes {
		merges = append(merges, Pair{263, b}) // tokens 264 + b: 257 bytes
	}
	for i := range 128 {
		for j := range NumBytes {
			merges = append(merges, Pair{264 + i, 264 + j}) // 514 bytes each
		}
	}
	data := seal(binaryMerges(merges))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadBinary(data)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBadTokenizer) || !strings.Contains(err.Error(), "hold more than") {
		t.Fatalf("%d merges of 1 KiB tokens: %v", len(merges), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*MaxTotalBytes {
		t.Errorf("reading %d bytes allocated %d", len(data), grew)
	}
}

func TestReadJSONRefuses(t *testing.T) {
	form := func(edit string) string {
		return `{"format":"minigpt-bpe","version":1,"pattern":` + jsonString(Pattern) + edit + `}`
	}
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", "{", "unexpected EOF"},
		{"not UTF-8", "{\"format\":\"\xff\"}", "not valid UTF-8"},
		{"two objects", form(`,"merges":[]`) + "{}", "more data after the object"},
		{"format", `{"format":"other","version":1}`, `format "other"`},
		{"version", `{"format":"minigpt-bpe","version":2}`, "version 2; this build reads version 1"},
		{"pattern", `{"format":"minigpt-bpe","version":1,"pattern":"\\s+"}`, "want GPT-2's"},
		{"unknown field", form(`,"merges":[],"vocab":{}`), `unknown field "vocab"`},
		{"three ids", form(`,"merges":[[97,98,99]]`), "merges[0] has 3 ids, want 2"},
		{"not an int", form(`,"merges":[[97,1.5]]`), "cannot unmarshal"},
		{"future token", form(`,"merges":[[97,300]]`), "joins 97 and 300"},
		{"byte order short", form(`,"byte_order":[0,1],"merges":[]`), "byte_order has 2 entries"},
		{"byte order not a byte", form(`,"byte_order":[` + strings.Repeat("0,", 255) + `256],"merges":[]`), "byte_order[255] is 256"},
		{"special id", form(`,"merges":[],"special":{"<a>":300}`), `special token "<a>" has id 300`},
		{"special ids twice", form(`,"merges":[],"special":{"<a>":256,"<b>":256}`), "has id 256"},
	} {
		_, err := ReadJSON([]byte(tc.data))
		if !errors.Is(err, ErrBadTokenizer) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
	}
}

// The binary reader never panics, and what it accepts is exactly what
// MarshalBinary writes for the tokenizer it read.
func FuzzReadBinary(f *testing.F) {
	for _, tok := range formsTokenizers(f) {
		b, _ := tok.MarshalBinary()
		f.Add(b)
	}
	f.Add(seal([]byte("minibpe\n\x01\x00\x02\x61\x61\x80\x02\x61\x01\x03<a>")))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ReadBinary(data)
		if err != nil {
			if !errors.Is(err, ErrBadTokenizer) {
				t.Fatalf("error without ErrBadTokenizer: %v", err)
			}
			return
		}
		again, err := tok.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("read back and written: %q, %v; was %q", again, err, data)
		}
	})
}

// The same for the body of the binary form without the checksum in the
// way: the fuzzer's mutations are sealed before they are read, so that
// they reach the fields.
func FuzzReadBinaryBody(f *testing.F) {
	for _, tok := range formsTokenizers(f) {
		b, _ := tok.MarshalBinary()
		f.Add(b[:len(b)-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		data := seal(body)
		tok, err := ReadBinary(data)
		if err != nil {
			if !errors.Is(err, ErrBadTokenizer) {
				t.Fatalf("error without ErrBadTokenizer: %v", err)
			}
			return
		}
		if again, _ := tok.MarshalBinary(); !bytes.Equal(again, data) {
			t.Fatalf("read back and written: %q; was %q", again, data)
		}
		checkRoundTrip(t, tok, "the keeper's lamp \xff 😀 1234")
	})
}

// The JSON reader never panics, and what it accepts writes back to a
// form that reads as the same tokenizer.
func FuzzReadJSON(f *testing.F) {
	for _, tok := range formsTokenizers(f) {
		b, _ := tok.MarshalJSON()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ReadJSON(data)
		if err != nil {
			if !errors.Is(err, ErrBadTokenizer) {
				t.Fatalf("error without ErrBadTokenizer: %v", err)
			}
			return
		}
		j, err := tok.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ReadJSON(j)
		if err != nil || !again.Equal(tok) {
			t.Fatalf("written and read back: %v", err)
		}
	})
}
