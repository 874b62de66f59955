package minigpt

// The safetensors format, the weights exchange format of Hugging Face and
// PyTorch users: WriteSafetensors and ReadSafetensors, a model's weights
// with its config and vocabulary in __metadata__ (docs/interop.md).

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrBadSafetensors is returned (wrapped) by ReadSafetensors for bytes
// that are not a minigpt safetensors file, and by WriteSafetensors for a
// checkpoint it cannot write. The message names the tensor or metadata
// key at fault and what is wrong with it. Such errors also match
// ErrBadCheckpoint (errors.Is), so that one test covers a bad model file
// of either format.
var ErrBadSafetensors error = badSafetensorsError{}

type badSafetensorsError struct{}

func (badSafetensorsError) Error() string        { return "bad safetensors file" }
func (badSafetensorsError) Is(target error) bool { return target == ErrBadCheckpoint }

// stBad is an ErrBadSafetensors error saying what is wrong.
func stBad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadSafetensors}, a...)...)
}

// stTensorBad is stBad about the tensor name.
func stTensorBad(name, format string, a ...any) error {
	return stBad("tensor %q: "+format, append([]any{name}, a...)...)
}

// SafetensorsOptions are the choices of WriteSafetensors; the zero value
// (or nil) writes float64.
type SafetensorsOptions struct {
	// DType is the type every tensor is stored as: "F64" (the default,
	// when empty), which keeps every bit, or "F32", half the size, each
	// value rounded to the nearest float32.
	DType string
}

// The metadata keys (docs/interop.md): every value is a string, as the
// format requires.
const (
	stKeyFormat    = "minigpt.format" // the version of this mapping
	stKeyVocabSize = "minigpt.vocab_size"
	stKeyBlockSize = "minigpt.block_size"
	stKeyEmbedDim  = "minigpt.embed_dim"
	stKeyHeads     = "minigpt.heads"
	stKeyLayers    = "minigpt.layers"
	stKeyTiedHead  = "minigpt.tied_head" // "true" or "false"
	stKeyVocab     = "minigpt.vocab"     // the characters in token-id order, as one string
	stKeyStep      = "minigpt.step"

	stFormatVersion = "1"

	// stMaxHeader bounds the JSON header, as the reference implementation
	// does (100 MB); minigpt's largest config needs about 15 MB.
	stMaxHeader = 100_000_000

	// stChunk is how many bytes the reader and writer handle at a time;
	// the reader allocates only as bytes arrive.
	stChunk = 64 << 10
)

// stLayered are the tensors of Model.Tensors() that stack one tensor per
// layer (their first dimension is the layer): in the file each layer's is
// a tensor of its own, blocks.<layer>.<name>, as in a PyTorch state dict.
var stLayered = map[string]bool{
	"ln1_gain": true, "ln1_bias": true, "qkv_weight": true, "attn_proj_weight": true,
	"ln2_gain": true, "ln2_bias": true, "fc_weight": true, "fc_bias": true,
	"fc_proj_weight": true, "fc_proj_bias": true,
}

// stTensor is one tensor of the file: its name, shape, element count,
// and (when written or filled) the part of the model's parameters it is.
type stTensor struct {
	name  string
	shape []int
	size  int
	data  []float64
}

// stTensors lists the file's tensors of a model with L layers and the
// given tensors (Model.Tensors, or only their names and shapes), in the
// order the writer stores them: those before the layers, each layer's in
// Tensors order, then the rest (token_embedding, position_embedding,
// blocks.0.ln1_gain, …, blocks.0.fc_proj_bias, blocks.1.ln1_gain, …,
// lnf_gain, lnf_bias, head_weight, head_bias).
func stTensors(ts []Tensor, L int) ([]stTensor, error) {
	var head, tail []stTensor
	blocks := make([][]stTensor, L)
	for _, t := range ts {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if t.Data != nil && len(t.Data) != n {
			return nil, fmt.Errorf("tensor %s has shape %v but %d values", t.Name, t.Shape, len(t.Data))
		}
		if !stLayered[t.Name] {
			if len(blocks[0]) == 0 {
				head = append(head, stTensor{t.Name, t.Shape, n, t.Data})
			} else {
				tail = append(tail, stTensor{t.Name, t.Shape, n, t.Data})
			}
			continue
		}
		if len(t.Shape) < 2 || t.Shape[0] != L {
			return nil, fmt.Errorf("tensor %s has shape %v, not one tensor per layer", t.Name, t.Shape)
		}
		n /= L
		for l := range L {
			var data []float64
			if t.Data != nil {
				data = t.Data[l*n : (l+1)*n : (l+1)*n]
			}
			blocks[l] = append(blocks[l], stTensor{fmt.Sprintf("blocks.%d.%s", l, t.Name), t.Shape[1:], n, data})
		}
	}
	out := head
	for _, b := range blocks {
		out = append(out, b...)
	}
	return append(out, tail...), nil
}

// stShapes is the tensors of a model of cfg without their values, so
// that a file can be checked against them before any memory is spent on
// a model.
func stShapes(cfg Config) []Tensor {
	var ts []Tensor
	for _, t := range cfg.layout() {
		ts = append(ts, Tensor{Name: t.name, Shape: t.shape})
	}
	return ts
}

// stDTypeSize is the size in bytes of each dtype the format defines (0:
// one this package does not read or write, named in messages).
var stDTypeSize = map[string]int{
	"F64": 8, "F32": 4,
	"BOOL": 0, "U8": 0, "I8": 0, "F8_E5M2": 0, "F8_E4M3": 0, "F8_E8M0": 0, "I16": 0, "U16": 0,
	"F16": 0, "BF16": 0, "I32": 0, "U32": 0, "I64": 0, "U64": 0, "C64": 0, "F4": 0,
	"F6_E2M3": 0, "F6_E3M2": 0,
}

// WriteSafetensors writes c's model to w as a safetensors file: every
// parameter tensor (named as in docs/interop.md) as opts.DType, and in
// __metadata__ the model config, the vocabulary and the step. Only the
// weights are written: the optimizer and sampler state of a full
// checkpoint are not, nor its training config.
//
// The header is padded with spaces so that the tensor data starts at a
// multiple of 8 bytes, and the tensors follow each other in the order of
// the header with no gaps. Everything is checked before the first byte
// is written: a model value that is not finite, or (with F32) beyond the
// range of float32, is refused with an error wrapping ErrBadSafetensors
// that names the tensor and the element.
func WriteSafetensors(w io.Writer, c *Checkpoint, opts *SafetensorsOptions) error {
	if err := writeSafetensors(w, c, opts); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	return nil
}

func writeSafetensors(w io.Writer, c *Checkpoint, opts *SafetensorsOptions) error {
	dtype := "F64"
	if opts != nil && opts.DType != "" {
		dtype = opts.DType
	}
	if dtype != "F64" && dtype != "F32" {
		return stBad("dtype %q: this writer stores F64 or F32", dtype)
	}
	if c == nil || c.Model == nil {
		return stBad("no model")
	}
	cfg := c.Model.Config()
	if err := cfg.Validate(); err != nil {
		return stBad("model config: %w", err)
	}
	if c.Vocab == nil {
		return stBad("no vocabulary")
	}
	if c.Vocab.Size() != cfg.VocabSize {
		return stBad("the vocabulary has %d characters but the config's vocab size is %d", c.Vocab.Size(), cfg.VocabSize)
	}
	if c.Step < 0 {
		return stBad("step %d is negative", c.Step)
	}
	tensors, err := stTensors(c.Model.Tensors(), cfg.Layers)
	if err != nil {
		return stBad("%w", err)
	}
	for _, t := range tensors {
		for i, x := range t.data {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return stTensorBad(t.name, "element %v is %v", tensorIndex(t.shape, i), x)
			}
			if dtype == "F32" && math.IsInf(float64(float32(x)), 0) {
				return stTensorBad(t.name, "element %v is %v, beyond the range of F32 (use F64)", tensorIndex(t.shape, i), x)
			}
		}
	}

	size := stDTypeSize[dtype]
	hdr := []byte(`{"__metadata__":{`)
	meta := [][2]string{
		{"format", "pt"}, // what PyTorch writers put there; some readers look for it
		{stKeyFormat, stFormatVersion},
		{stKeyVocabSize, strconv.Itoa(cfg.VocabSize)},
		{stKeyBlockSize, strconv.Itoa(cfg.BlockSize)},
		{stKeyEmbedDim, strconv.Itoa(cfg.EmbedDim)},
		{stKeyHeads, strconv.Itoa(cfg.Heads)},
		{stKeyLayers, strconv.Itoa(cfg.Layers)},
		{stKeyTiedHead, strconv.FormatBool(cfg.TiedHead)},
		{stKeyVocab, string(c.Vocab.chars)},
		{stKeyStep, strconv.Itoa(c.Step)},
	}
	for i, kv := range meta {
		if i > 0 {
			hdr = append(hdr, ',')
		}
		hdr = appendJSONString(hdr, kv[0])
		hdr = append(hdr, ':')
		hdr = appendJSONString(hdr, kv[1])
	}
	hdr = append(hdr, '}')
	off := 0
	for _, t := range tensors {
		hdr = append(hdr, ',')
		hdr = appendJSONString(hdr, t.name)
		hdr = append(hdr, `:{"dtype":"`...)
		hdr = append(hdr, dtype...)
		hdr = append(hdr, `","shape":[`...)
		for i, d := range t.shape {
			if i > 0 {
				hdr = append(hdr, ',')
			}
			hdr = strconv.AppendInt(hdr, int64(d), 10)
		}
		end := off + size*len(t.data)
		hdr = fmt.Appendf(hdr, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}

	bw := bufio.NewWriterSize(w, stChunk)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	bw.Write(n[:])
	bw.Write(hdr)
	buf := make([]byte, 0, stChunk)
	for _, t := range tensors {
		for _, x := range t.data {
			if dtype == "F64" {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
			} else {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(x)))
			}
			if len(buf) == cap(buf) {
				bw.Write(buf) // an error sticks in bw: Flush reports it
				buf = buf[:0]
			}
		}
	}
	bw.Write(buf)
	return bw.Flush()
}

// appendJSONString appends s as a JSON string, with characters outside
// ASCII as they are (UTF-8) rather than escaped.
func appendJSONString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// stEntry is one tensor as the header describes it.
type stEntry struct {
	name       string
	dtype      string
	shape      []uint64
	begin, end uint64
	want       int // the index in stTensors of the model's tensor of that name
}

// ReadSafetensors reads a safetensors file written by WriteSafetensors
// (or by python/minigpt.py, or by any writer that uses the same tensor
// names and metadata: docs/interop.md) to its end, and returns it as a
// weights-only Checkpoint: the model, its vocabulary and the step.
//
// It checks, stopping at the first problem with an error wrapping
// ErrBadSafetensors that says what is wrong and where: the header length
// and the header (valid UTF-8, one JSON object, no name twice), the
// metadata (the config keys, which Config.Validate must accept; the
// vocabulary: as many distinct characters as the vocab size, in
// ascending order; the step), every tensor's entry (a name the config
// implies, a dtype of F64 or F32 — tensors may differ in it —, the shape
// the config implies, offsets that agree with the shape and dtype), that
// no tensor is missing, that the tensors cover the data exactly (no
// holes, no overlaps, nothing after the last), and every value finite.
// Memory grows only as bytes arrive, so a header that lies about sizes
// costs only what the input really holds. Failures of r itself are
// returned wrapped as they are.
func ReadSafetensors(r io.Reader) (*Checkpoint, error) {
	c, err := readSafetensors(r)
	if err != nil {
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	return c, nil
}

func readSafetensors(r io.Reader) (*Checkpoint, error) {
	var n [8]byte
	if k, err := io.ReadFull(r, n[:]); err != nil {
		if isEOF(err) {
			return nil, stBad("truncated: %d bytes, the header length alone is 8", k)
		}
		return nil, err
	}
	hlen := binary.LittleEndian.Uint64(n[:])
	switch {
	case hlen < 2:
		return nil, stBad("header length %d is too short for a JSON object", hlen)
	case hlen > stMaxHeader:
		return nil, stBad("header length %d is above the limit of %d bytes (is this a safetensors file?)", hlen, stMaxHeader)
	}
	hdr, err := readGrowing(r, int(hlen), nil)
	if err != nil {
		if isEOF(err) {
			return nil, stBad("truncated in the header: its length field says %d bytes, the input ends %d bytes into it", hlen, len(hdr))
		}
		return nil, err
	}
	meta, entries, err := parseSafetensorsHeader(hdr)
	if err != nil {
		return nil, err
	}
	cfg, vocab, step, err := parseSafetensorsMetadata(meta)
	if err != nil {
		return nil, err
	}
	want, err := stTensors(stShapes(cfg), cfg.Layers)
	if err != nil {
		return nil, stBad("%w", err)
	}
	if err := matchSafetensorsEntries(entries, want, cfg); err != nil {
		return nil, err
	}

	// The data, in the order of the offsets; values are kept apart from
	// the model until every byte is there and checked.
	slices.SortStableFunc(entries, func(a, b *stEntry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
	})
	var pos uint64
	for i, e := range entries {
		switch {
		case e.begin > pos && i == 0:
			return nil, stBad("bytes [0, %d) of the data belong to no tensor (the first, %q, starts at %d)", e.begin, e.name, e.begin)
		case e.begin > pos:
			return nil, stBad("bytes [%d, %d) of the data belong to no tensor (between %q and %q)", pos, e.begin, entries[i-1].name, e.name)
		case e.begin < pos:
			p := entries[i-1]
			return nil, stTensorBad(e.name, "its data [%d, %d) overlaps that of %q [%d, %d)", e.begin, e.end, p.name, p.begin, p.end)
		}
		pos = e.end
	}
	values := make([][]float64, len(entries))
	var raw []byte
	for i, e := range entries {
		size := stDTypeSize[e.dtype]
		count := int(e.end-e.begin) / size
		vals := make([]float64, 0, min(count, stChunk/8))
		for done := 0; done < count; {
			k := min(count-done, stChunk/size)
			raw, err = readGrowing(r, k*size, raw[:0])
			if err != nil {
				if isEOF(err) {
					return nil, stTensorBad(e.name, "truncated: its data is bytes [%d, %d), the input ends at byte %d of the data", e.begin, e.end, e.begin+uint64(done*size+len(raw)))
				}
				return nil, err
			}
			for j := range k {
				var x float64
				if size == 8 {
					x = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*j:]))
				} else {
					x = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
				}
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, stTensorBad(e.name, "element %v is %v", tensorIndex(want[e.want].shape, done+j), x)
				}
				vals = append(vals, x)
			}
			done += k
		}
		values[i] = vals
	}
	var one [1]byte
	switch k, err := io.ReadFull(r, one[:]); {
	case k > 0:
		return nil, stBad("data after the last tensor (%q ends at byte %d of the data): its tensors must cover the data exactly", entries[len(entries)-1].name, pos)
	case !isEOF(err):
		return nil, err
	}
	// Only now, with every value in hand, is the model's memory spent.
	m, err := NewModel(cfg, 0)
	if err != nil {
		return nil, stBad("metadata: model config: %w", err) // Validate passed already
	}
	dst, err := stTensors(m.Tensors(), cfg.Layers)
	if err != nil {
		return nil, stBad("%w", err)
	}
	for i, e := range entries {
		copy(dst[e.want].data, values[i])
	}
	return &Checkpoint{Model: m, Vocab: vocab, Step: step}, nil
}

func isEOF(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

// readGrowing appends n bytes from r to buf, growing it by at most
// stChunk at a time as the bytes arrive, so that a length read from the
// input is never allocated before the input has shown it holds it. On a
// short input it returns what arrived and io.ErrUnexpectedEOF (or
// io.EOF if nothing did).
func readGrowing(r io.Reader, n int, buf []byte) ([]byte, error) {
	for n > 0 {
		k := min(n, stChunk)
		buf = slices.Grow(buf, k)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+k])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
		n -= k
	}
	return buf, nil
}

// parseSafetensorsHeader splits the JSON header into the metadata (raw
// values by key) and the tensor entries, in file order, refusing a name
// or a field that occurs twice (encoding/json would keep the last).
func parseSafetensorsHeader(hdr []byte) (map[string]json.RawMessage, []*stEntry, error) {
	if off := invalidUTF8Offset(string(hdr)); off >= 0 {
		return nil, nil, stBad("header: invalid UTF-8 at byte %d of the header", off)
	}
	if hdr[0] != '{' {
		return nil, nil, stBad("header: does not start with '{' (it starts with %q)", hdr[0])
	}
	var meta map[string]json.RawMessage
	var entries []*stEntry
	end, err := jsonObject(hdr, func(key string, value json.RawMessage) error {
		if key == "__metadata__" {
			meta = map[string]json.RawMessage{}
			_, err := jsonObject(value, func(k string, v json.RawMessage) error {
				meta[k] = v
				return nil
			})
			if err != nil {
				return fmt.Errorf("__metadata__: %w", err)
			}
			return nil
		}
		e, err := parseSafetensorsEntry(key, value)
		entries = append(entries, e)
		return err
	})
	if err != nil {
		return nil, nil, stBad("header: %w", err)
	}
	for i, b := range hdr[end:] {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return nil, nil, stBad("header: %q at byte %d after the JSON object (only space padding may follow it)", b, end+i)
		}
	}
	if meta == nil {
		return nil, nil, stBad("header: no __metadata__, so no model config or vocabulary: not a minigpt file (docs/interop.md)")
	}
	return meta, entries, nil
}

// jsonObject decodes data as a JSON object, calling field for each key
// with its value in the order they come, and returns the offset in data
// just after the object. A key given twice is an error.
func jsonObject(data []byte, field func(key string, value json.RawMessage) error) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return 0, jsonError(err)
	} else if tok != json.Delim('{') {
		return 0, fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, jsonError(err)
		}
		key := tok.(string) // inside an object the decoder yields only string keys
		if seen[key] {
			return 0, fmt.Errorf("%q occurs twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, fmt.Errorf("the value of %q: %w", key, jsonError(err))
		}
		if err := field(key, v); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, jsonError(err)
	}
	return int(dec.InputOffset()), nil
}

// jsonError says that the JSON is invalid, where the decoder knows.
func jsonError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if isEOF(err) {
		return fmt.Errorf("invalid JSON: it ends early")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// parseSafetensorsEntry decodes one tensor's entry: exactly dtype,
// shape and data_offsets.
func parseSafetensorsEntry(name string, value json.RawMessage) (*stEntry, error) {
	e := &stEntry{name: name}
	var has [3]bool
	_, err := jsonObject(value, func(key string, v json.RawMessage) error {
		switch key {
		case "dtype":
			has[0] = true
			if err := json.Unmarshal(v, &e.dtype); err != nil || v[0] != '"' {
				return fmt.Errorf("dtype %s is not a string", v)
			}
		case "shape":
			has[1] = true
			var err error
			if e.shape, err = jsonUints(v); err != nil {
				return fmt.Errorf("shape %s: %w", v, err)
			}
		case "data_offsets":
			has[2] = true
			off, err := jsonUints(v)
			if err == nil && len(off) != 2 {
				err = fmt.Errorf("%d numbers, want 2 (begin, end)", len(off))
			}
			if err != nil {
				return fmt.Errorf("data_offsets %s: %w", v, err)
			}
			e.begin, e.end = off[0], off[1]
		default:
			return fmt.Errorf("unknown field %q (an entry has dtype, shape and data_offsets)", key)
		}
		return nil
	})
	if err != nil {
		return e, fmt.Errorf("tensor %q: %w", name, err)
	}
	for i, f := range []string{"dtype", "shape", "data_offsets"} {
		if !has[i] {
			return e, fmt.Errorf("tensor %q: no %s", name, f)
		}
	}
	return e, nil
}

// jsonUints decodes a JSON array of non-negative integers.
func jsonUints(v json.RawMessage) ([]uint64, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || v[0] != '[' {
		return nil, fmt.Errorf("not a list of numbers")
	}
	out := make([]uint64, len(raw))
	for i, r := range raw {
		n, err := strconv.ParseUint(string(bytes.TrimSpace(r)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("entry %d, %s, is not an integer in [0, 2^64)", i, r)
		}
		out[i] = n
	}
	return out, nil
}

// parseSafetensorsMetadata reads the model config, vocabulary and step.
// Keys outside minigpt's ("format", say) are other tools' and ignored.
func parseSafetensorsMetadata(meta map[string]json.RawMessage) (Config, *Vocab, int, error) {
	known := []string{stKeyFormat, stKeyVocabSize, stKeyBlockSize, stKeyEmbedDim, stKeyHeads, stKeyLayers, stKeyTiedHead, stKeyVocab, stKeyStep}
	vals := map[string]string{}
	for k, raw := range meta {
		if raw[0] != '"' {
			return Config{}, nil, 0, stBad("metadata %q: %s is not a string (the format's metadata values are strings)", k, raw)
		}
		s, err := jsonStringStrict(raw)
		if err != nil {
			return Config{}, nil, 0, stBad("metadata %q: %s: %w", k, raw, err)
		}
		if len(k) > len("minigpt.") && k[:len("minigpt.")] == "minigpt." && !slices.Contains(known, k) {
			return Config{}, nil, 0, stBad("metadata %q: unknown minigpt key (format version %s knows %v)", k, stFormatVersion, known)
		}
		vals[k] = s
	}
	for _, k := range known {
		if _, ok := vals[k]; !ok {
			return Config{}, nil, 0, stBad("metadata: no %q (a minigpt file has %v)", k, known)
		}
	}
	if v := vals[stKeyFormat]; v != stFormatVersion {
		return Config{}, nil, 0, stBad("metadata %q is %q: this reader knows version %s", stKeyFormat, v, stFormatVersion)
	}
	num := func(k string) (int, error) {
		s := vals[k]
		n, err := strconv.Atoi(s)
		if err != nil || strconv.Itoa(n) != s || n < 0 {
			return 0, stBad("metadata %q is %q, not a non-negative decimal integer", k, s)
		}
		return n, nil
	}
	var cfg Config
	for _, f := range []struct {
		key string
		dst *int
	}{
		{stKeyVocabSize, &cfg.VocabSize}, {stKeyBlockSize, &cfg.BlockSize}, {stKeyEmbedDim, &cfg.EmbedDim},
		{stKeyHeads, &cfg.Heads}, {stKeyLayers, &cfg.Layers},
	} {
		n, err := num(f.key)
		if err != nil {
			return Config{}, nil, 0, err
		}
		*f.dst = n
	}
	switch vals[stKeyTiedHead] {
	case "true":
		cfg.TiedHead = true
	case "false":
	default:
		return Config{}, nil, 0, stBad("metadata %q is %q, want \"true\" or \"false\"", stKeyTiedHead, vals[stKeyTiedHead])
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, nil, 0, stBad("metadata: model config: %w", err)
	}
	chars := []rune(vals[stKeyVocab])
	if len(chars) != cfg.VocabSize {
		return Config{}, nil, 0, stBad("metadata %q has %d characters, %q says %d", stKeyVocab, len(chars), stKeyVocabSize, cfg.VocabSize)
	}
	vocab, err := VocabFromChars(chars)
	if err != nil {
		return Config{}, nil, 0, stBad("metadata %q: %w", stKeyVocab, err)
	}
	step, err := num(stKeyStep)
	if err != nil {
		return Config{}, nil, 0, err
	}
	return cfg, vocab, step, nil
}

// jsonStringStrict decodes a JSON string, refusing what encoding/json
// would silently replace by U+FFFD (an unpaired surrogate escape such as
// "\ud800"), so that a vocabulary is never changed on the way in. The
// bytes are valid UTF-8 and valid JSON already.
func jsonStringStrict(raw json.RawMessage) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("not a string")
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(s) {
			return 0, false
		}
		n, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("a lone backslash")
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(i + 2)
			if !ok {
				return "", errors.New("a bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				var r2 rune
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, ok = hex4(i + 2)
				} else {
					ok = false
				}
				dec := utf16.DecodeRune(r, r2)
				if !ok || dec == utf8.RuneError {
					return "", fmt.Errorf("an unpaired surrogate \\u%04x", r)
				}
				r = dec
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", fmt.Errorf("an unknown escape \\%c", c)
		}
		i += 2
	}
	return string(out), nil
}

// matchSafetensorsEntries checks the entries against the tensors of a
// model of cfg, and links each to its tensor.
func matchSafetensorsEntries(entries []*stEntry, want []stTensor, cfg Config) error {
	byName := make(map[string]int, len(want))
	for i := range want {
		byName[want[i].name] = i
	}
	for _, e := range entries {
		i, ok := byName[e.name]
		t := &want[i]
		if !ok {
			shape := fmt.Sprintf("%d layers", cfg.Layers)
			if cfg.Layers == 1 {
				shape = "1 layer"
			}
			if cfg.TiedHead {
				shape += " and a tied head"
			}
			return stTensorBad(e.name, "not a tensor of a minigpt model of %s (docs/interop.md lists them)", shape)
		}
		size, known := stDTypeSize[e.dtype]
		switch {
		case !known:
			return stTensorBad(e.name, "unknown dtype %q", e.dtype)
		case size == 0:
			return stTensorBad(e.name, "dtype %s is not supported (F64 or F32)", e.dtype)
		}
		same := len(e.shape) == len(t.shape)
		for i := 0; same && i < len(e.shape); i++ {
			same = e.shape[i] == uint64(t.shape[i])
		}
		if !same {
			return stTensorBad(e.name, "shape %v, the metadata's config implies %v", e.shape, t.shape)
		}
		if e.end < e.begin {
			return stTensorBad(e.name, "data_offsets [%d, %d] end before they begin", e.begin, e.end)
		}
		if need := uint64(t.size) * uint64(size); e.end-e.begin != need {
			return stTensorBad(e.name, "data_offsets [%d, %d] span %d bytes, its shape %v of %s needs %d", e.begin, e.end, e.end-e.begin, t.shape, e.dtype, need)
		}
		e.want = i
	}
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.name] = true
	}
	for _, t := range want {
		if !have[t.name] {
			return stTensorBad(t.name, "missing (a model of the metadata's config has %d tensors, the file %d)", len(want), len(entries))
		}
	}
	return nil
}
