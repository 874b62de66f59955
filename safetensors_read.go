package minigpt

// This file holds the safetensors reader and the checks of every name,
// shape, dtype, offset and value it reads.

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"example.org/minigpt/internal/bpe"
)

// stEntry is one tensor as the header describes it.
type stEntry struct {
	name       string
	dtype      string
	shape      []uint64
	begin, end uint64
	want       int // the index in stTensors of the model's tensor of that name
}

// readSafetensors reads a safetensors file written by WriteSafetensors
// (or by python/minigpt.py, or by any writer that uses the same tensor
// names and metadata: docs/interop.md) to its end, and returns it as a
// weights-only Checkpoint: the model, its vocabulary and the step.
//
// It checks, stopping at the first problem with an error wrapping
// ErrBadCheckpoint that says what is wrong and where: the header length
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
	dst, err := stTensors(m.tensors(), cfg.Layers)
	if err != nil {
		return nil, stBad("%w", err)
	}
	for i, e := range entries {
		copy(dst[e.want].data, values[i])
	}
	return &Checkpoint{Model: m, Vocab: vocab, Step: step}, nil
}

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

// parseSafetensorsMetadata reads the model config, vocabulary and step.
// Keys outside minigpt's ("format", say) are other tools' and ignored.
func parseSafetensorsMetadata(meta map[string]json.RawMessage) (Config, *Vocab, int, error) {
	known := []string{stKeyFormat, stKeyVocabSize, stKeyBlockSize, stKeyEmbedDim, stKeyHeads, stKeyLayers, stKeyTiedHead, stKeyVocab, stKeyStep}
	if f, ok := meta[stKeyFormat]; ok && string(f) == `"`+stFormatTokenizer+`"` {
		known[7] = stKeyTokenizer
	}
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
			return Config{}, nil, 0, stBad("metadata %q: unknown minigpt key (this format version knows %v)", k, known)
		}
		vals[k] = s
	}
	for _, k := range known {
		if _, ok := vals[k]; !ok {
			return Config{}, nil, 0, stBad("metadata: no %q (a minigpt file has %v)", k, known)
		}
	}
	if v := vals[stKeyFormat]; v != stFormatVersion && v != stFormatTokenizer {
		return Config{}, nil, 0, stBad("metadata %q is %q: this reader knows versions %s and %s", stKeyFormat, v, stFormatVersion, stFormatTokenizer)
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
	var vocab *Vocab
	if js, ok := vals[stKeyTokenizer]; ok {
		tok, err := bpe.ReadJSON([]byte(js))
		if err != nil {
			return Config{}, nil, 0, stBad("metadata %q: %w", stKeyTokenizer, err)
		}
		if tok.VocabSize() != cfg.VocabSize {
			return Config{}, nil, 0, stBad("metadata %q has %d tokens, %q says %d", stKeyTokenizer, tok.VocabSize(), stKeyVocabSize, cfg.VocabSize)
		}
		vocab = &Vocab{tok: tok}
	} else {
		chars := []rune(vals[stKeyVocab])
		if len(chars) != cfg.VocabSize {
			return Config{}, nil, 0, stBad("metadata %q has %d characters, %q says %d", stKeyVocab, len(chars), stKeyVocabSize, cfg.VocabSize)
		}
		var err error
		if vocab, err = vocabFromChars(chars); err != nil {
			return Config{}, nil, 0, stBad("metadata %q: %w", stKeyVocab, err)
		}
	}
	step, err := num(stKeyStep)
	if err != nil {
		return Config{}, nil, 0, err
	}
	return cfg, vocab, step, nil
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
