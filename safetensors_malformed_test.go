package minigpt

// Tests of the safetensors reader on damaged and lying files: each way a
// valid file can be broken, reader errors, and headers that promise more
// than the input holds.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// stDoc is a header to damage: metadata and entries, in order, written
// out as JSON by text so that a test can also repeat a name.
type stDoc struct {
	meta    [][2]string
	entries []stDocEntry
	data    []byte
}

type stDocEntry struct {
	name, body string // body: the entry's JSON object
}

func (d *stDoc) setMeta(k, v string) {
	for i := range d.meta {
		if d.meta[i][0] == k {
			d.meta[i][1] = v
			return
		}
	}
	d.meta = append(d.meta, [2]string{k, v})
}

func (d *stDoc) dropMeta(k string) {
	for i := range d.meta {
		if d.meta[i][0] == k {
			d.meta = append(d.meta[:i], d.meta[i+1:]...)
			return
		}
	}
}

func (d *stDoc) entry(name string) *stDocEntry {
	for i := range d.entries {
		if d.entries[i].name == name {
			return &d.entries[i]
		}
	}
	panic("no entry " + name)
}

func (d *stDoc) header() string {
	var b strings.Builder
	b.WriteString(`{"__metadata__":{`)
	for i, kv := range d.meta {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", kv[0], kv[1]) // values are raw JSON
	}
	b.WriteByte('}')
	for _, e := range d.entries {
		fmt.Fprintf(&b, ",%q:%s", e.name, e.body)
	}
	b.WriteByte('}')
	return b.String()
}

func (d *stDoc) file() []byte { return stFile(d.header(), d.data) }

// stBaseDoc is a valid file of the tiny untied config (vocabulary "abc",
// width 2, one layer) as an stDoc.
func stBaseDoc(t *testing.T) *stDoc {
	t.Helper()
	cfg := Config{VocabSize: 3, BlockSize: 2, EmbedDim: 2, Heads: 1, Layers: 1}
	vocab, _ := vocabFromChars([]rune("abc"))
	file := writeST(t, &Checkpoint{Model: stModel(t, cfg, 6), Vocab: vocab}, "")
	n := binary.LittleEndian.Uint64(file)
	d := &stDoc{data: file[8+n:]}
	dec := json.NewDecoder(bytes.NewReader(file[8 : 8+n]))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if k == "__metadata__" {
			var m map[string]string
			json.Unmarshal(v, &m)
			for _, key := range []string{"format", "minigpt.format", "minigpt.vocab_size", "minigpt.block_size", "minigpt.embed_dim",
				"minigpt.heads", "minigpt.layers", "minigpt.tied_head", "minigpt.vocab", "minigpt.step"} {
				d.meta = append(d.meta, [2]string{key, fmt.Sprintf("%q", m[key])})
			}
			continue
		}
		d.entries = append(d.entries, stDocEntry{k.(string), string(v)})
	}
	if _, err := readST(bytes.NewReader(d.file())); err != nil {
		t.Fatalf("the base file is refused: %v", err)
	}
	return d
}

// TestReadSafetensorsRefusesMalformed damages a valid file in each way
// the reader must notice, and checks the reason it gives.
func TestReadSafetensorsRefusesMalformed(t *testing.T) {
	// Offsets in the base file (F64): token_embedding [0, 48),
	// position_embedding [48, 80), blocks.0.ln1_gain [80, 96), …
	for _, tc := range []struct {
		name  string
		edit  func(d *stDoc)
		file  func(d *stDoc) []byte // instead of d.file()
		wants []string              // in the message
	}{
		{name: "empty input", file: func(*stDoc) []byte { return nil }, wants: []string{"truncated: 0 bytes"}},
		{name: "short length field", file: func(*stDoc) []byte { return []byte{1, 0, 0} }, wants: []string{"truncated: 3 bytes"}},
		{name: "header length past the end", file: func(d *stDoc) []byte {
			f := d.file()
			binary.LittleEndian.PutUint64(f, uint64(len(f)))
			return f
		}, wants: []string{"truncated in the header", "ends"}},
		{name: "header length 2^63", file: func(d *stDoc) []byte {
			f := d.file()
			binary.LittleEndian.PutUint64(f, 1<<63)
			return f
		}, wants: []string{"header length 9223372036854775808 is above the limit"}},
		{name: "header length 1", file: func(*stDoc) []byte { return stFile("{", nil) }, wants: []string{"too short"}},
		{name: "non-UTF-8 JSON", edit: func(d *stDoc) { d.setMeta("minigpt.vocab", "\"ab\xff\"") }, wants: []string{"invalid UTF-8 at byte"}},
		{name: "not JSON", file: func(*stDoc) []byte { return stFile(`{"a":}`, nil) }, wants: []string{"invalid JSON"}},
		{name: "JSON cut short", file: func(*stDoc) []byte { return stFile(`{"__metadata__":{}`, nil) }, wants: []string{"invalid JSON"}},
		{name: "not an object", file: func(*stDoc) []byte { return stFile(`["x"]`, nil) }, wants: []string{"does not start with '{'"}},
		{name: "leading space", file: func(d *stDoc) []byte { return stFile(" "+d.header(), d.data) }, wants: []string{"does not start with '{'"}},
		{name: "bytes after the object", file: func(d *stDoc) []byte { return stFile(d.header()+"  x", d.data) }, wants: []string{`'x' at byte`, "after the JSON object"}},
		{name: "duplicate tensor name", edit: func(d *stDoc) {
			d.entries = append(d.entries, d.entries[2])
		}, wants: []string{`"blocks.0.ln1_gain" occurs twice`}},
		{name: "duplicate metadata key", edit: func(d *stDoc) { d.meta = append(d.meta, [2]string{"minigpt.layers", `"1"`}) }, wants: []string{`__metadata__: "minigpt.layers" occurs twice`}},
		{name: "duplicate field", edit: func(d *stDoc) {
			e := d.entry("lnf_bias")
			e.body = strings.Replace(e.body, `{`, `{"dtype":"F64",`, 1)
		}, wants: []string{`tensor "lnf_bias": "dtype" occurs twice`}},
		{name: "missing tensor", edit: func(d *stDoc) {
			d.entries = d.entries[:len(d.entries)-1] // head_bias, the last 3 values
			d.data = d.data[:len(d.data)-24]
		}, wants: []string{`tensor "head_bias": missing`}},
		{name: "tensor of a layer the config lacks", edit: func(d *stDoc) {
			d.entries = append(d.entries, stDocEntry{"blocks.1.ln1_gain", fmt.Sprintf(`{"dtype":"F64","shape":[2],"data_offsets":[%d,%d]}`, len(d.data), len(d.data)+16)})
			d.data = append(d.data, make([]byte, 16)...)
		}, wants: []string{`tensor "blocks.1.ln1_gain": not a tensor of a minigpt model of 1 layer`}},
		{name: "head of a tied model", edit: func(d *stDoc) { d.setMeta("minigpt.tied_head", `"true"`) }, wants: []string{`tensor "head_weight": not a tensor`, "tied head"}},
		{name: "unknown dtype", edit: func(d *stDoc) { d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, "F64", "F65", 1) }, wants: []string{`tensor "lnf_gain": unknown dtype "F65"`}},
		{name: "unsupported dtype", edit: func(d *stDoc) {
			d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, "F64", "BF16", 1)
		}, wants: []string{`tensor "lnf_gain": dtype BF16 is not supported`}},
		{name: "dtype not a string", edit: func(d *stDoc) { d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, `"F64"`, `64`, 1) }, wants: []string{`tensor "lnf_gain": dtype 64 is not a string`}},
		{name: "wrong shape", edit: func(d *stDoc) {
			d.entry("blocks.0.qkv_weight").body = strings.Replace(d.entry("blocks.0.qkv_weight").body, "[2,6]", "[6,2]", 1)
		}, wants: []string{`tensor "blocks.0.qkv_weight": shape [6 2], the metadata's config implies [2 6]`}},
		{name: "shape with a layer dimension", edit: func(d *stDoc) {
			d.entry("blocks.0.fc_bias").body = strings.Replace(d.entry("blocks.0.fc_bias").body, "[8]", "[1,8]", 1)
		}, wants: []string{`tensor "blocks.0.fc_bias": shape [1 8]`}},
		{name: "offsets disagree with the shape", edit: func(d *stDoc) {
			e := d.entry("head_bias")
			e.body = e.body[:strings.Index(e.body, "data_offsets")] + fmt.Sprintf(`data_offsets":[%d,%d]}`, len(d.data)-24, len(d.data)-8)
			d.data = d.data[:len(d.data)-8]
		}, wants: []string{`tensor "head_bias": data_offsets`, "span 16 bytes, its shape [3] of F64 needs 24"}},
		{name: "overlapping offsets", edit: func(d *stDoc) {
			d.entry("position_embedding").body = strings.Replace(d.entry("position_embedding").body, "[48,80]", "[40,72]", 1)
		}, wants: []string{`tensor "position_embedding": its data [40, 72) overlaps that of "token_embedding" [0, 48)`}},
		{name: "hole between tensors", edit: func(d *stDoc) {
			d.entry("position_embedding").body = strings.Replace(d.entry("position_embedding").body, "[48,80]", "[56,88]", 1)
		}, wants: []string{`bytes [48, 56) of the data belong to no tensor (between "token_embedding" and "position_embedding")`}},
		{name: "nothing at offset 0", file: func(d *stDoc) []byte {
			for i := range d.entries {
				var e struct {
					DataOffsets [2]int `json:"data_offsets"`
				}
				json.Unmarshal([]byte(d.entries[i].body), &e)
				d.entries[i].body = strings.Replace(d.entries[i].body, fmt.Sprintf("[%d,%d]", e.DataOffsets[0], e.DataOffsets[1]),
					fmt.Sprintf("[%d,%d]", e.DataOffsets[0]+8, e.DataOffsets[1]+8), 1)
			}
			return stFile(d.header(), append(make([]byte, 8), d.data...))
		}, wants: []string{`bytes [0, 8) of the data belong to no tensor (the first, "token_embedding", starts at 8)`}},
		{name: "offsets reversed", edit: func(d *stDoc) {
			d.entry("token_embedding").body = strings.Replace(d.entry("token_embedding").body, "[0,48]", "[48,0]", 1)
		}, wants: []string{`tensor "token_embedding": data_offsets [48, 0] end before they begin`}},
		{name: "three offsets", edit: func(d *stDoc) {
			d.entry("token_embedding").body = strings.Replace(d.entry("token_embedding").body, "[0,48]", "[0,24,48]", 1)
		}, wants: []string{`tensor "token_embedding": data_offsets [0,24,48]: 3 numbers, want 2`}},
		{name: "negative offset", edit: func(d *stDoc) {
			d.entry("token_embedding").body = strings.Replace(d.entry("token_embedding").body, "[0,48]", "[-0,48]", 1)
		}, wants: []string{`entry 0, -0, is not an integer`}},
		{name: "fractional shape", edit: func(d *stDoc) {
			d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, "[2]", "[2.0]", 1)
		}, wants: []string{`tensor "lnf_gain": shape [2.0]: entry 0, 2.0, is not an integer`}},
		{name: "offset as a string", edit: func(d *stDoc) {
			d.entry("token_embedding").body = strings.Replace(d.entry("token_embedding").body, "[0,48]", `["0",48]`, 1)
		}, wants: []string{`entry 0, "0", is not an integer`}},
		{name: "unknown field", edit: func(d *stDoc) {
			d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, `{`, `{"offset":0,`, 1)
		}, wants: []string{`tensor "lnf_gain": unknown field "offset"`}},
		{name: "no dtype", edit: func(d *stDoc) {
			d.entry("lnf_gain").body = strings.Replace(d.entry("lnf_gain").body, `"dtype":"F64",`, ``, 1)
		}, wants: []string{`tensor "lnf_gain": no dtype`}},
		{name: "entry not an object", edit: func(d *stDoc) { d.entry("lnf_gain").body = `[1]` }, wants: []string{`tensor "lnf_gain": not a JSON object`}},
		{name: "data cut short", file: func(d *stDoc) []byte { return stFile(d.header(), d.data[:100]) }, wants: []string{`tensor "blocks.0.ln1_bias": truncated: its data is bytes [96, 112), the input ends at byte 100`}},
		{name: "data after the last tensor", file: func(d *stDoc) []byte { return stFile(d.header(), append(d.data, 0)) }, wants: []string{`data after the last tensor ("head_bias" ends at byte`}},
		{name: "NaN", edit: func(d *stDoc) {
			binary.LittleEndian.PutUint64(d.data[48+8:], math.Float64bits(math.NaN())) // position_embedding[0][1]
		}, wants: []string{`tensor "position_embedding": element [0 1] is NaN`}},
		{name: "infinity in F32", edit: func(d *stDoc) {
			e := d.entry("head_bias") // the last 24 bytes: 12 as F32
			e.body = strings.Replace(strings.Replace(e.body, "F64", "F32", 1), fmt.Sprintf("[%d,%d]", len(d.data)-24, len(d.data)), fmt.Sprintf("[%d,%d]", len(d.data)-24, len(d.data)-12), 1)
			d.data = d.data[:len(d.data)-12]
			binary.LittleEndian.PutUint32(d.data[len(d.data)-4:], math.Float32bits(float32(math.Inf(-1))))
		}, wants: []string{`tensor "head_bias": element [2] is -Inf`}},
		{name: "no metadata", edit: func(d *stDoc) { d.meta = nil }, file: func(d *stDoc) []byte {
			return stFile(strings.Replace(d.header(), `"__metadata__":{},`, "", 1), d.data)
		}, wants: []string{"no __metadata__", "not a minigpt file"}},
		{name: "metadata key missing", edit: func(d *stDoc) { d.dropMeta("minigpt.layers") }, wants: []string{`metadata: no "minigpt.layers"`}},
		{name: "metadata value not a string", edit: func(d *stDoc) { d.setMeta("minigpt.layers", "1") }, wants: []string{`metadata "minigpt.layers": 1 is not a string`}},
		{name: "metadata not canonical", edit: func(d *stDoc) { d.setMeta("minigpt.layers", `"01"`) }, wants: []string{`metadata "minigpt.layers" is "01", not a non-negative decimal integer`}},
		{name: "negative step", edit: func(d *stDoc) { d.setMeta("minigpt.step", `"-1"`) }, wants: []string{`metadata "minigpt.step" is "-1"`}},
		{name: "tied head not a boolean", edit: func(d *stDoc) { d.setMeta("minigpt.tied_head", `"yes"`) }, wants: []string{`"minigpt.tied_head" is "yes", want "true" or "false"`}},
		{name: "invalid config", edit: func(d *stDoc) { d.setMeta("minigpt.heads", `"3"`) }, wants: []string{"model config", "embedding width 2 is not divisible by 3 heads"}},
		{name: "unknown format version", edit: func(d *stDoc) { d.setMeta("minigpt.format", `"3"`) }, wants: []string{`"minigpt.format" is "3": this reader knows versions 1 and 2`}},
		{name: "unknown minigpt key", edit: func(d *stDoc) { d.setMeta("minigpt.dropout", `"0.1"`) }, wants: []string{`metadata "minigpt.dropout": unknown minigpt key`}},
		{name: "vocabulary shorter than its size", edit: func(d *stDoc) { d.setMeta("minigpt.vocab", `"ab"`) }, wants: []string{`"minigpt.vocab" has 2 characters, "minigpt.vocab_size" says 3`}},
		{name: "vocabulary not ascending", edit: func(d *stDoc) { d.setMeta("minigpt.vocab", `"acb"`) }, wants: []string{`metadata "minigpt.vocab"`, `vocabulary entry 2 ('b') is not above entry 1 ('c')`}},
		{name: "vocabulary repeats a character", edit: func(d *stDoc) { d.setMeta("minigpt.vocab", `"aab"`) }, wants: []string{`vocabulary entry 1 ('a') is not above entry 0 ('a')`}},
		{name: "vocabulary with a lone surrogate", edit: func(d *stDoc) { d.setMeta("minigpt.vocab", `"ab\ud800"`) }, wants: []string{`metadata "minigpt.vocab"`, `unpaired surrogate \ud800`}},
		{name: "vocabulary size against the embedding", edit: func(d *stDoc) {
			d.setMeta("minigpt.vocab", `"abcd"`)
			d.setMeta("minigpt.vocab_size", `"4"`)
		}, wants: []string{`tensor "token_embedding": shape [3 2], the metadata's config implies [4 2]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stBaseDoc(t)
			if tc.edit != nil {
				tc.edit(d)
			}
			file := d.file()
			if tc.file != nil {
				file = tc.file(d)
			}
			c, err := readST(bytes.NewReader(file))
			if err == nil {
				t.Fatalf("accepted (%+v)", c.Model.Config())
			}
			t.Log(err)
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Errorf("%v: does not wrap ErrBadCheckpoint", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n does not say %q", err, w)
				}
			}
		})
	}
}

// errReader fails after giving n bytes of b.
type errReader struct {
	b   []byte
	n   int
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b, r.n = r.b[k:], r.n-k
	return k, nil
}

func TestReadSafetensorsPassesReaderErrorsOn(t *testing.T) {
	file := stBaseDoc(t).file()
	disk := errors.New("input/output error")
	for _, n := range []int{0, 4, 20, len(file) - 10, len(file)} {
		_, err := readST(&errReader{b: file, n: n, err: disk})
		if !errors.Is(err, disk) || errors.Is(err, ErrBadCheckpoint) {
			t.Errorf("failing after %d bytes: %v; want the reader's error, not a bad file", n, err)
		}
	}
}

// TestReadSafetensorsLyingHeaderCostsOnlyTheInput gives the header of a
// 200-million-parameter model with none of its 1.6 GB of data: the
// reader must refuse it having allocated about what it read.
func TestReadSafetensorsLyingHeaderCostsOnlyTheInput(t *testing.T) {
	cfg := Config{VocabSize: 2, BlockSize: 1, EmbedDim: 4096, Heads: 1, Layers: 1}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, `{"__metadata__":{"minigpt.format":"1","minigpt.vocab_size":"2","minigpt.block_size":"1","minigpt.embed_dim":"4096",`+
		`"minigpt.heads":"1","minigpt.layers":"1","minigpt.tied_head":"false","minigpt.vocab":"ab","minigpt.step":"0"}`)
	ts, err := stTensors(stShapes(cfg), 1)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, x := range ts {
		fmt.Fprintf(&hdr, `,%q:{"dtype":"F64","shape":%s,"data_offsets":[%d,%d]}`, x.name, strings.ReplaceAll(fmt.Sprint(x.shape), " ", ","), off, off+8*x.size)
		off += 8 * x.size
	}
	hdr.WriteString("}")
	if off < 1<<30 {
		t.Fatalf("the header claims only %d bytes", off)
	}
	file := stFile(hdr.String(), make([]byte, 1<<20)) // 1 MB of the data
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = readST(bytes.NewReader(file))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("%v; want a truncated file", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("reading %d bytes allocated %d MB; the header claims %d MB", len(file), got>>20, off>>20)
	}
}
