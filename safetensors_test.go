package minigpt

// Tests of safetensors.go: round trips, the file layout read with plain
// encoding/json, a file built by hand, and every malformed file refused
// with its reason.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// stModel returns a model of cfg whose every parameter is drawn from
// N(0, 0.3²) (gains around 1), set through Tensors, with a few values
// that a careless encoding loses: -0, a subnormal, the largest float64.
func stModel(t testing.TB, cfg Config, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, ts := range m.tensors() {
		for i := range ts.data {
			ts.data[i] = 0.3 * rng.NormFloat64()
			if strings.HasSuffix(ts.name, "_gain") {
				ts.data[i] += 1
			}
		}
	}
	ts := m.tensors()
	ts[0].data[0] = math.Copysign(0, -1)
	ts[0].data[1] = 5e-324
	ts[1].data[0] = math.MaxFloat64
	ts[len(ts)-1].data[0] = -1e-300
	return m
}

// stVocab is a vocabulary of n characters that JSON must escape or that
// encoders treat specially: quote, backslash, control characters, the
// line separator U+2028, U+FFFD, a character outside the BMP.
func stVocab(t testing.TB, n int) *Vocab {
	t.Helper()
	chars := []rune{0, '\n', '"', '&', '<', '\\', 'a', 'é', '\u2028', '€', '\uFFFD', '😀'}
	for r := rune('b'); len(chars) < n; r++ {
		if r != 'é' && r != '€' {
			chars = append(chars, r)
		}
	}
	chars = chars[:n]
	sortRunes(chars)
	v, err := vocabFromChars(chars)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sortRunes(r []rune) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j] < r[j-1]; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// allValues is every parameter of m, in Tensors order.
func allValues(m *Model) []float64 {
	var out []float64
	for _, t := range m.tensors() {
		out = append(out, t.data...)
	}
	return out
}

func writeST(t testing.TB, c *Checkpoint, dtype string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSafetensors(&b, c, dtype); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSafetensorsF64RoundTripsBitForBit(t *testing.T) {
	for _, tied := range []bool{false, true} {
		cfg := tinyConfig(tied)
		cfg.VocabSize = 12
		m := stModel(t, cfg, 3)
		in := &Checkpoint{Model: m, Vocab: stVocab(t, cfg.VocabSize), Step: 77}
		c, err := readST(bytes.NewReader(writeST(t, in, "")))
		if err != nil {
			t.Fatalf("tied %v: %v", tied, err)
		}
		if c.Model.Config() != cfg || c.Step != 77 || string(c.Vocab.chars) != string(in.Vocab.chars) || c.Train != nil {
			t.Errorf("tied %v: read config %+v step %d vocab %q full %v; wrote %+v, 77, %q, weights only",
				tied, c.Model.Config(), c.Step, string(c.Vocab.chars), c.Train != nil, cfg, string(in.Vocab.chars))
		}
		if got, want := allValues(c.Model), allValues(m); !testutil.BitsEqual(got, want) {
			i, _ := testutil.SameBits(got, want)
			t.Errorf("tied %v: parameter %d is %v (bits %#x), wrote %v (bits %#x)", tied, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
		}
		// What was read is a valid weights-only checkpoint.
		if err := WriteCheckpoint(io.Discard, c); err != nil {
			t.Errorf("tied %v: the model read does not make a checkpoint: %v", tied, err)
		}
	}
	// The embedded model too, the one docs/interop.md starts from.
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	c, err := readST(bytes.NewReader(writeST(t, &Checkpoint{Model: m, Vocab: vocab, Step: 1200}, "F64")))
	if err != nil || !testutil.BitsEqual(allValues(c.Model), allValues(m)) {
		t.Fatalf("embedded model: %v, or the weights differ", err)
	}
}

func TestSafetensorsF32WithinFloat32Rounding(t *testing.T) {
	cfg := tinyConfig(false)
	m := stModel(t, cfg, 4)
	m.tensors()[1].data[0] = 1 // replace MaxFloat64, beyond F32's range
	in := &Checkpoint{Model: m, Vocab: stVocab(t, cfg.VocabSize)}
	f32, f64 := writeST(t, in, "F32"), writeST(t, in, "")
	if data32, data64 := 4*len(m.Params()), 8*len(m.Params()); len(f32)-data32 > 4096 || len(f64)-data64 > 4096 {
		t.Errorf("F32 file %d bytes, F64 %d, for %d parameters: want 4 and 8 bytes a parameter and a small header", len(f32), len(f64), len(m.Params()))
	}
	c, err := readST(bytes.NewReader(f32))
	if err != nil {
		t.Fatal(err)
	}
	got, want := allValues(c.Model), allValues(m)
	for i := range want {
		// Rounding to nearest: a float32, within half a float32 ulp
		// (2^-24 relative; subnormals flush to within 2^-150).
		if float64(float32(got[i])) != got[i] || math.Abs(got[i]-want[i]) > max(math.Abs(want[i])*0x1p-24, 0x1p-150) {
			t.Fatalf("parameter %d: read %v from F32, wrote %v", i, got[i], want[i])
		}
	}
	if math.Float64bits(got[0]) != math.Float64bits(math.Copysign(0, -1)) {
		t.Errorf("-0 came back as %v", got[0])
	}
}

// stHeader decodes a file's header with plain encoding/json.
func stHeader(t *testing.T, file []byte) (map[string]json.RawMessage, int) {
	t.Helper()
	n := binary.LittleEndian.Uint64(file)
	var h map[string]json.RawMessage
	if err := json.Unmarshal(file[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	return h, 8 + int(n)
}

// TestSafetensorsLayout reads a written file as the format's spec says,
// with encoding/json and encoding/binary, and finds each layer's tensor
// of Model.tensors() under the names of docs/interop.md.
func TestSafetensorsLayout(t *testing.T) {
	cfg := tinyConfig(false)
	m := stModel(t, cfg, 5)
	file := writeST(t, &Checkpoint{Model: m, Vocab: stVocab(t, cfg.VocabSize), Step: 9}, "")
	h, start := stHeader(t, file)
	if start%8 != 0 {
		t.Errorf("the data starts at byte %d, not a multiple of 8", start)
	}
	var meta map[string]string
	if err := json.Unmarshal(h["__metadata__"], &meta); err != nil {
		t.Fatal(err)
	}
	wantMeta := map[string]string{
		"minigpt.format": "1", "minigpt.vocab_size": "7", "minigpt.block_size": "5", "minigpt.embed_dim": "8",
		"minigpt.heads": "2", "minigpt.layers": "2", "minigpt.tied_head": "false", "minigpt.step": "9",
		"minigpt.vocab": "\x00\n\"&<\\a",
	}
	for k, v := range wantMeta {
		if meta[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, meta[k], v)
		}
	}
	covered := 0
	for _, ts := range m.tensors() {
		names, per := []string{ts.name}, len(ts.data)
		if stLayered[ts.name] {
			names, per = nil, len(ts.data)/cfg.Layers
			for l := range cfg.Layers {
				names = append(names, fmt.Sprintf("blocks.%d.%s", l, ts.name))
			}
		}
		for l, name := range names {
			var e struct {
				DType       string   `json:"dtype"`
				Shape       []int    `json:"shape"`
				DataOffsets []uint64 `json:"data_offsets"`
			}
			if err := json.Unmarshal(h[name], &e); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wantShape := ts.shape
			if stLayered[ts.name] {
				wantShape = ts.shape[1:]
			}
			if e.DType != "F64" || fmt.Sprint(e.Shape) != fmt.Sprint(wantShape) || e.DataOffsets[1]-e.DataOffsets[0] != uint64(8*per) {
				t.Fatalf("%s: %+v, want F64 of shape %v, %d bytes", name, e, wantShape, 8*per)
			}
			for i, x := range ts.data[l*per : (l+1)*per] {
				got := binary.LittleEndian.Uint64(file[start+int(e.DataOffsets[0])+8*i:])
				if got != math.Float64bits(x) {
					t.Fatalf("%s element %d: bits %#x, the model's %#x", name, i, got, math.Float64bits(x))
				}
			}
			covered += 8 * per
		}
	}
	if covered != len(file)-start || len(h) != 2+10*cfg.Layers+4+1 {
		t.Errorf("the tensors cover %d of %d data bytes; the header has %d entries", covered, len(file)-start, len(h))
	}
}

// stFile assembles a safetensors file from a header and data.
func stFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// TestReadSafetensorsHandMadeFile reads a file built here from the spec
// (not by the writer): tensors in alphabetical order as safetensors.torch
// stores them, some F32 and some F64, no padding, other tools' metadata.
func TestReadSafetensorsHandMadeFile(t *testing.T) {
	// V 2, T 1, C 1, one head, one layer, tied: 14 tensors of 1 or 2
	// values (4C = 4 for the MLP).
	shapes := map[string][]int{
		"token_embedding": {2, 1}, "position_embedding": {1, 1},
		"blocks.0.ln1_gain": {1}, "blocks.0.ln1_bias": {1}, "blocks.0.qkv_weight": {1, 3},
		"blocks.0.attn_proj_weight": {1, 1}, "blocks.0.ln2_gain": {1}, "blocks.0.ln2_bias": {1},
		"blocks.0.fc_weight": {1, 4}, "blocks.0.fc_bias": {4}, "blocks.0.fc_proj_weight": {4, 1},
		"blocks.0.fc_proj_bias": {1}, "lnf_gain": {1}, "lnf_bias": {1},
	}
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	for i := 1; i < len(names); i++ { // sorted
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	var hdr strings.Builder
	hdr.WriteString(`{"__metadata__":{"minigpt.step":"3","format":"pt","minigpt.vocab":"xy","minigpt.tied_head":"true",` +
		`"minigpt.layers":"1","minigpt.heads":"1","minigpt.embed_dim":"1","minigpt.block_size":"1","minigpt.vocab_size":"2",` +
		`"minigpt.format":"1","producer":"hand"}`)
	var data []byte
	want := map[string][]float64{}
	for k, n := range names {
		count := 1
		for _, d := range shapes[n] {
			count *= d
		}
		dtype, begin := "F64", len(data)
		if k%2 == 1 {
			dtype = "F32"
		}
		for i := range count {
			x := float64(k) + float64(i)/4 // exact in float32 too
			want[n] = append(want[n], x)
			if dtype == "F64" {
				data = binary.LittleEndian.AppendUint64(data, math.Float64bits(x))
			} else {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(x)))
			}
		}
		fmt.Fprintf(&hdr, `, "%s": {"shape": %s, "data_offsets": [%d, %d], "dtype": "%s"}`,
			n, strings.ReplaceAll(fmt.Sprint(shapes[n]), " ", ","), begin, len(data), dtype)
	}
	hdr.WriteString("}\n  ")
	c, err := readST(bytes.NewReader(stFile(hdr.String(), data)))
	if err != nil {
		t.Fatal(err)
	}
	wantCfg := Config{VocabSize: 2, BlockSize: 1, EmbedDim: 1, Heads: 1, Layers: 1, TiedHead: true}
	if c.Model.Config() != wantCfg || c.Step != 3 || string(c.Vocab.chars) != "xy" {
		t.Fatalf("read %+v, step %d, vocab %q", c.Model.Config(), c.Step, string(c.Vocab.chars))
	}
	for _, ts := range c.Model.tensors() {
		name := ts.name
		if stLayered[name] {
			name = "blocks.0." + name
		}
		if fmt.Sprint(ts.data) != fmt.Sprint(want[name]) {
			t.Errorf("%s = %v, the file holds %v", ts.name, ts.data, want[name])
		}
	}
}

func TestWriteSafetensorsRefuses(t *testing.T) {
	cfg := tinyConfig(false)
	vocab := stVocab(t, cfg.VocabSize)
	nan := stModel(t, cfg, 8)
	nan.tensors()[4].data[cfg.EmbedDim*3*cfg.EmbedDim+5] = math.NaN() // qkv_weight, layer 1, row 0, column 5
	big := stModel(t, cfg, 8)
	big.tensors()[1].data[0] = 1 // keep only one out-of-range value
	big.tensors()[len(big.tensors())-1].data[2] = 4e38
	for _, tc := range []struct {
		name  string
		c     *Checkpoint
		dtype string
		want  string
	}{
		{"nil checkpoint", nil, "", "no model"},
		{"no vocabulary", &Checkpoint{Model: stModel(t, cfg, 8)}, "", "no vocabulary"},
		{"vocabulary of another size", &Checkpoint{Model: stModel(t, cfg, 8), Vocab: stVocab(t, 8)}, "", "the vocabulary has 8 characters but the config's vocab size is 7"},
		{"negative step", &Checkpoint{Model: stModel(t, cfg, 8), Vocab: vocab, Step: -1}, "", "step -1 is negative"},
		{"unknown dtype", &Checkpoint{Model: stModel(t, cfg, 8), Vocab: vocab}, "F16", `dtype "F16": this writer stores F64 or F32`},
		{"NaN", &Checkpoint{Model: nan, Vocab: vocab}, "", `tensor "blocks.1.qkv_weight": element [0 5] is NaN`},
		{"beyond float32", &Checkpoint{Model: big, Vocab: vocab}, "F32", `tensor "head_bias": element [2] is 4e+38, beyond the range of F32`},
	} {
		var b bytes.Buffer
		err := WriteSafetensors(&b, tc.c, tc.dtype)
		if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
			t.Errorf("%s: %v (%d bytes written); want an error saying %q and nothing written", tc.name, err, b.Len(), tc.want)
		}
	}
	// Beyond float32 is fine in F64.
	if err := WriteSafetensors(io.Discard, &Checkpoint{Model: big, Vocab: vocab}, ""); err != nil {
		t.Errorf("F64 of a value beyond float32: %v", err)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errDiskFull = errors.New("no space left on device")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWriteSafetensorsReportsWriteErrors(t *testing.T) {
	m, vocab, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSafetensors(failWriter{}, &Checkpoint{Model: m, Vocab: vocab}, ""); !errors.Is(err, errDiskFull) {
		t.Fatalf("%v; want the writer's error", err)
	}
}

func FuzzReadSafetensors(f *testing.F) {
	cfg := Config{VocabSize: 3, BlockSize: 2, EmbedDim: 2, Heads: 1, Layers: 1}
	vocab, _ := vocabFromChars([]rune("\"aé"))
	for _, tied := range []bool{false, true} {
		cfg.TiedHead = tied
		c := &Checkpoint{Model: stModel(f, cfg, 9), Vocab: vocab, Step: 5}
		f.Add(writeST(f, c, ""))
		c.Model.tensors()[1].data[0] = 1 // MaxFloat64 is beyond F32
		f.Add(writeST(f, c, "F32"))
	}
	f.Add(stFile(`{"__metadata__":{"minigpt.vocab":"\ud83d\ude00"}}`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := readST(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("an in-memory input failed without ErrBadCheckpoint: %v", err)
			}
			return
		}
		// Whatever is accepted is a valid model, and writes back as a
		// file that reads to the same bits.
		if err := WriteCheckpoint(io.Discard, c); err != nil {
			t.Fatalf("accepted a file that is not a valid checkpoint: %v", err)
		}
		var b bytes.Buffer
		if err := WriteSafetensors(&b, c, ""); err != nil {
			t.Fatalf("accepted a file that does not write back: %v", err)
		}
		c2, err := readST(&b)
		if err != nil || c2.Model.Config() != c.Model.Config() || c2.Step != c.Step ||
			string(c2.Vocab.chars) != string(c.Vocab.chars) || !testutil.BitsEqual(allValues(c2.Model), allValues(c.Model)) {
			t.Fatalf("the file written back reads differently: %v", err)
		}
	})
}

// readST reads a safetensors file as ReadCheckpoint does once it has
// told the format, whatever the first bytes say.
func readST(r io.Reader) (*Checkpoint, error) {
	c, err := readSafetensors(r)
	if err != nil {
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	return c, nil
}
