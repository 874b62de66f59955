package minigpt

// This file holds the safetensors format, the weights exchange format of
// Hugging Face and PyTorch users: WriteSafetensors and the layout both it
// and the reader follow, a model's weights with its config and vocabulary
// in __metadata__ (docs/interop.md).

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
)

// stBad is an ErrBadCheckpoint error about a safetensors file, saying what
// is wrong.
func stBad(format string, a ...any) error {
	return fmt.Errorf("%w: safetensors: "+format, append([]any{ErrBadCheckpoint}, a...)...)
}

// stTensorBad is stBad about the tensor name.
func stTensorBad(name, format string, a ...any) error {
	return stBad("tensor %q: "+format, append([]any{name}, a...)...)
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
	stKeyTokenizer = "minigpt.tokenizer" // instead, in format 2: a BPE tokenizer's JSON form
	stKeyStep      = "minigpt.step"

	stFormatVersion   = "1" // a character vocabulary (minigpt.vocab)
	stFormatTokenizer = "2" // a BPE one (minigpt.tokenizer)

	// stMaxHeader bounds the JSON header, as the reference implementation
	// does (100 MB); minigpt's largest config needs about 15 MB.
	stMaxHeader = 100_000_000

	// stChunk is how many bytes the reader and writer handle at a time;
	// the reader allocates only as bytes arrive.
	stChunk = 64 << 10
)

// stLayered are the tensors of Model.tensors() that stack one tensor per
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
// given tensors (Model.tensors, or only their names and shapes), in the
// order the writer stores them: those before the layers, each layer's in
// Tensors order, then the rest (token_embedding, position_embedding,
// blocks.0.ln1_gain, …, blocks.0.fc_proj_bias, blocks.1.ln1_gain, …,
// lnf_gain, lnf_bias, head_weight, head_bias).
func stTensors(ts []tensor, L int) ([]stTensor, error) {
	var head, tail []stTensor
	blocks := make([][]stTensor, L)
	for _, t := range ts {
		n := 1
		for _, d := range t.shape {
			n *= d
		}
		if t.data != nil && len(t.data) != n {
			return nil, fmt.Errorf("tensor %s has shape %v but %d values", t.name, t.shape, len(t.data))
		}
		if !stLayered[t.name] {
			if len(blocks[0]) == 0 {
				head = append(head, stTensor{t.name, t.shape, n, t.data})
			} else {
				tail = append(tail, stTensor{t.name, t.shape, n, t.data})
			}
			continue
		}
		if len(t.shape) < 2 || t.shape[0] != L {
			return nil, fmt.Errorf("tensor %s has shape %v, not one tensor per layer", t.name, t.shape)
		}
		n /= L
		for l := range L {
			var data []float64
			if t.data != nil {
				data = t.data[l*n : (l+1)*n : (l+1)*n]
			}
			blocks[l] = append(blocks[l], stTensor{fmt.Sprintf("blocks.%d.%s", l, t.name), t.shape[1:], n, data})
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
func stShapes(cfg Config) []tensor {
	var ts []tensor
	for _, t := range cfg.layout() {
		ts = append(ts, tensor{name: t.name, shape: t.shape})
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

// WriteSafetensors writes c's model to w as a safetensors file (tensors
// named as in docs/interop.md) of dtype "F64" (or "") or "F32", with the
// config, vocabulary and step in __metadata__. A value that is not finite,
// or past float32's range in F32, is an ErrBadCheckpoint before any byte.
func WriteSafetensors(w io.Writer, c *Checkpoint, dtype string) error {
	if err := writeSafetensors(w, c, dtype); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	return nil
}

func writeSafetensors(w io.Writer, c *Checkpoint, dtype string) error {
	if dtype == "" {
		dtype = "F64"
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
	tensors, err := stTensors(c.Model.tensors(), cfg.Layers)
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
	if t := c.Vocab.tok; t != nil {
		js, err := t.MarshalJSON()
		if err != nil {
			return fmt.Errorf("write safetensors: tokenizer: %w", err)
		}
		meta[1][1] = stFormatTokenizer
		meta[8] = [2]string{stKeyTokenizer, string(js)}
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
