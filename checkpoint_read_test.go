package minigpt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"example.org/minigpt/internal/testutil"
)

// ckptFuzzConfig is the smallest config the fuzz seeds use.
func ckptFuzzConfig(tied bool) Config {
	return Config{VocabSize: 24, BlockSize: 4, EmbedDim: 4, Heads: 2, Layers: 1, TiedHead: tied}
}

func encodeCheckpoint(t testing.TB, c *Checkpoint) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCheckpoint(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resealCheckpoint recomputes the header CRC and the trailing SHA-256 of a
// checkpoint's bytes, so that a deliberate edit reaches the checks behind
// them.
func resealCheckpoint(b []byte) []byte {
	b = slices.Clone(b)
	crcAt := headerSize - 4
	if len(b) >= 12 && binary.LittleEndian.Uint32(b[8:]) == 1 {
		crcAt = headerSizeV1 - 4
	}
	if len(b) >= crcAt+4 {
		binary.LittleEndian.PutUint32(b[crcAt:], crc32.ChecksumIEEE(b[:crcAt]))
	}
	if len(b) >= headerSize+checksumSize {
		sum := sha256.Sum256(b[:len(b)-checksumSize])
		copy(b[len(b)-checksumSize:], sum[:])
	}
	return b
}

// downgradeToV1 turns the version-2 bytes of a checkpoint without corpus
// fingerprint and loss history into the version-1 bytes of the same
// checkpoint: the layouts differ only in the version field and the two
// loss-point counts (zero here) before the header CRC.
func downgradeToV1(b []byte) []byte {
	v1 := slices.Concat(b[:52], make([]byte, 4), b[headerSize:]) // the CRC, resealed below
	binary.LittleEndian.PutUint32(v1[8:], 1)
	return resealCheckpoint(v1)
}

func TestCheckpointRoundTrip(t *testing.T) {
	tr := ckptTrainer(t, ckptResumeConfig(), 3, nil)
	tr.Model().Params()[5] = math.Copysign(0, -1) // the sign of zero survives too
	for _, tc := range []struct {
		name string
		full bool
	}{{"full", true}, {"weights-only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkpointOf(tr, !tc.full)
			data := encodeCheckpoint(t, c)
			got, err := ReadCheckpoint(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if got.Model.Config() != c.Model.Config() || got.Step != 3 || !slices.Equal(got.Vocab.chars, c.Vocab.chars) {
				t.Fatalf("config %+v step %d vocab %q, want %+v 3 %q", got.Model.Config(), got.Step, string(got.Vocab.chars), c.Model.Config(), string(c.Vocab.chars))
			}
			if !testutil.BitsEqual(got.Model.Params(), tr.Model().Params()) {
				t.Fatal("parameters differ after the round trip")
			}
			if got.Train != nil != tc.full {
				t.Fatalf("Full() = %v, want %v", got.Train != nil, tc.full)
			}
			if tc.full {
				if *got.Train != tr.Config() {
					t.Fatalf("training config %+v, want %+v", *got.Train, tr.Config())
				}
				o := got.state
				if o.adam != tr.opt.config || o.adamStep != tr.opt.step || !testutil.BitsEqual(o.m, tr.opt.m) || !testutil.BitsEqual(o.v, tr.opt.v) {
					t.Fatal("optimizer state differs after the round trip")
				}
				state, _ := tr.batchSource.MarshalBinary()
				if !bytes.Equal(got.state.sampler, state) {
					t.Fatalf("sampler state %x, want %x", got.state.sampler, state)
				}
			} else if got.Train != nil || got.state != nil {
				t.Fatal("a weights-only checkpoint came back with training state")
			}
			if again := encodeCheckpoint(t, got); !bytes.Equal(again, data) {
				t.Fatal("re-encoding what was read gives different bytes")
			}
		})
	}
}

// ckptOffsets returns where each section of a full checkpoint of cfg
// (with a 20-byte PCG state and points loss-history points) starts.
func ckptOffsets(cfg Config, points int) map[string]int {
	V, P := cfg.VocabSize, cfg.NumParams()
	off := map[string]int{"header": 0, "vocabulary": headerSize}
	off["training config"] = off["vocabulary"] + 4*V
	off["optimizer config"] = off["training config"] + trainSize
	off["sampler state"] = off["optimizer config"] + optimizerSize
	off["corpus fingerprint"] = off["sampler state"] + 20
	off["parameters"] = off["corpus fingerprint"] + 32
	off["optimizer first moments"] = off["parameters"] + 8*P
	off["optimizer second moments"] = off["optimizer first moments"] + 8*P
	off["loss history"] = off["optimizer second moments"] + 8*P
	off["checksum"] = off["loss history"] + 16*points
	off["end"] = off["checksum"] + checksumSize
	return off
}

func TestReadCheckpointRefusesCorruption(t *testing.T) {
	cfg := ckptResumeConfig()
	tr := ckptTrainer(t, cfg, 2, nil)
	good := encodeCheckpoint(t, tr.Checkpoint())
	off := ckptOffsets(cfg, 0)
	if off["end"] != len(good) {
		t.Fatalf("full checkpoint is %d bytes, the layout says %d", len(good), off["end"])
	}
	// Offsets of single values inside sections.
	posEmb := off["parameters"] + 8*(cfg.VocabSize*cfg.EmbedDim+3*cfg.EmbedDim+5) // position_embedding[3 5]
	firstV := off["optimizer second moments"] + 8*7                               // token_embedding[0 7]
	put64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at:], v); return resealCheckpoint(b) }
	}
	put32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return resealCheckpoint(b) }
	}
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0x10; return b }
	}
	cut := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }

	cases := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"flip step byte", flip(41), "header checksum mismatch"},
		{"flip layers byte", flip(32), "header checksum mismatch"},
		{"flip vocabulary byte", flip(off["vocabulary"] + 9), "checksum mismatch: stored SHA-256"},
		{"flip training config byte", flip(off["training config"] + 17), "checksum mismatch: stored SHA-256"},
		{"flip sampler byte", flip(off["sampler state"] + 10), "checksum mismatch: stored SHA-256"},
		{"flip parameter byte", flip(off["parameters"] + 8*100 + 3), "checksum mismatch: stored SHA-256"},
		{"flip last moment byte", flip(off["loss history"] - 1), "checksum mismatch: stored SHA-256"},
		{"flip fingerprint byte", flip(off["corpus fingerprint"] + 3), "checksum mismatch: stored SHA-256"},
		{"flip checksum byte", flip(len(good) - 1), "checksum mismatch: stored SHA-256"},
		{"empty", cut(0), "truncated in the header section"},
		{"cut in magic", cut(5), "truncated in the header section"},
		{"cut in header", cut(40), "truncated in the header section"},
		{"cut in vocabulary", cut(off["vocabulary"] + 6), "truncated in the vocabulary section"},
		{"cut in training config", cut(off["training config"] + 1), "truncated in the training config section"},
		{"cut in optimizer config", cut(off["optimizer config"] + 39), "truncated in the optimizer config section"},
		{"cut in sampler state", cut(off["sampler state"] + 4), "truncated in the sampler state section"},
		{"cut at parameters", cut(off["parameters"]), "truncated in the parameters section"},
		{"cut in parameters", cut(off["parameters"] + 1001), "truncated in the parameters section"},
		{"cut in first moments", cut(off["optimizer first moments"] + 8), "truncated in the optimizer first moments section"},
		{"cut in second moments", cut(off["loss history"] - 1), "truncated in the optimizer second moments section"},
		{"cut in fingerprint", cut(off["corpus fingerprint"] + 31), "truncated in the corpus fingerprint section"},
		{"cut in checksum", cut(len(good) - 1), "truncated in the checksum section"},
		{"bad magic", func(b []byte) []byte { copy(b, "PK\x03\x04"); return b }, "magic number"},
		{"version 99", put32(8, 99), "unsupported format version 99"},
		{"unknown flag", put32(12, flagTrain|flagOptimizer|flagRNG|1<<7), "unknown section flags 0x80"},
		{"heads not dividing width", put32(28, 3), "embedding width 32 is not divisible by 3 heads"},
		{"zero layers", put32(32, 0), "layers 0 is outside"},
		{"tied field 2", put32(36, 2), "tied-head field is 2"},
		{"sampler length without section", put32(12, flagTrain|flagOptimizer), "sampler state length is 20 but the sampler section is absent"},
		{"sampler length too big", put32(48, 1000), "sampler state length 1000"},
		{"negative step", put64(40, math.MaxUint64), "step -1 is negative"},
		{"vocabulary not ascending", put32(off["vocabulary"]+4, 0), "vocabulary entry 1"},
		{"vocabulary surrogate", put32(off["vocabulary"]+4*23, 0xD800), "vocabulary entry 23 is not a valid character"},
		{"zero batch size", put64(off["training config"]+8, 0), "training config: invalid config: training: batch size 0"},
		{"negative train steps", put64(off["training config"], math.MaxUint64), "steps -1 is negative"},
		{"cosine field 2", put64(off["training config"]+40, 2), "cosine-decay field is 2"},
		{"NaN learning rate", put64(off["training config"]+16, math.Float64bits(math.NaN())), "learning rate NaN"},
		{"beta1 one", put64(off["optimizer config"], math.Float64bits(1)), "beta1 1 is outside"},
		{"negative optimizer step", put64(off["optimizer config"]+32, 1<<63), "optimizer step"},
		{"bad sampler state", put32(off["sampler state"], 0x41414141), "sampler state"},
		{"NaN parameter", put64(posEmb, math.Float64bits(math.NaN())), "parameter position_embedding[3 5] (element 101 of the tensor, 869 of the slab) is NaN"},
		{"Inf parameter", put64(off["optimizer first moments"]-8, math.Float64bits(math.Inf(-1))), "parameter head_bias[23]"},
		{"Inf first moment", put64(off["optimizer first moments"], math.Float64bits(math.Inf(1))), "optimizer first moment token_embedding[0 0]"},
		{"negative second moment", put64(firstV, math.Float64bits(-1e-9)), "optimizer second moment token_embedding[0 7] (element 7 of the tensor, 7 of the slab) is -1e-09"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.edit(slices.Clone(good))
			c, err := ReadCheckpoint(bytes.NewReader(data))
			if err == nil {
				t.Fatalf("ReadCheckpoint accepted it (step %d)", c.Step)
			}
			if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadCheckpoint: %v\nwant ErrBadCheckpoint mentioning %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestCheckpointTestOffsets(t *testing.T) {
	// The NaN case above names fixed indices; make sure they are what the
	// layout says, so that the test cannot pass by coincidence.
	cfg := ckptResumeConfig()
	if got := cfg.VocabSize*cfg.EmbedDim + 3*cfg.EmbedDim + 5; got != 869 {
		t.Fatalf("position_embedding[3 5] is element %d of the slab, the test expects 869", got)
	}
	if got := tensorIndex([]int{16, 32}, 101); !slices.Equal(got, []int{3, 5}) {
		t.Fatalf("tensorIndex = %v, want [3 5]", got)
	}
}

func TestReadCheckpointReaderError(t *testing.T) {
	good := encodeCheckpoint(t, ckptTrainer(t, ckptFuzzConfig(false), 1, nil).Checkpoint())
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(good[:300]), ckptErrReader{boom})
	_, err := ReadCheckpoint(r)
	if !errors.Is(err, boom) || errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("ReadCheckpoint = %v, want the reader's error and not ErrBadCheckpoint", err)
	}
}

type ckptErrReader struct{ err error }

func (r ckptErrReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadCheckpointAllocatesOnlyWhatArrives(t *testing.T) {
	// A header that claims about 200 million parameters (1.6 GB) followed
	// by nothing must fail fast without allocating for them.
	cfg := Config{VocabSize: 24, BlockSize: 512, EmbedDim: 2048, Heads: 8, Layers: 4}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, checkpointMagic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, checkpointVersion)
	hdr = binary.LittleEndian.AppendUint32(hdr, flagTrain|flagOptimizer)
	for _, v := range []int{cfg.VocabSize, cfg.BlockSize, cfg.EmbedDim, cfg.Heads, cfg.Layers, 0} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	hdr = binary.LittleEndian.AppendUint64(hdr, 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, 0) // sampler state length
	hdr = binary.LittleEndian.AppendUint32(hdr, 0) // training-loss points
	hdr = binary.LittleEndian.AppendUint32(hdr, 0) // validation-loss points
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.ChecksumIEEE(hdr))
	data := append(hdr, make([]byte, 4*24+trainSize+optimizerSize+1<<20)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadCheckpoint(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), "truncated in the parameters section") {
		t.Fatalf("ReadCheckpoint = %v, want truncation in the parameters", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("reading 1 MB of a claimed 1.6 GB allocated %d bytes", grew)
	}
}

// fuzzSeedTrainer is the smallest trainer there is: two characters,
// block 1, width 1, one head, one layer; 30 parameters untied, so a full
// checkpoint is 964 bytes and a weights-only one 336.
//
// Why so small: each input the fuzzer finds interesting is minimised
// before fuzzing goes on (reported as 0 execs/s), and minimising tries
// removing every substring, about n²/2 runs for n bytes. Seeds of the
// 24-character fuzz config (a full checkpoint is 11.5 KB) kept
// `go test -fuzz=FuzzReadCheckpoint` minimising its first find for the
// whole minute; at 2.2 KB it still stalled for 20 s at a time.
func fuzzSeedTrainer(t testing.TB, tied bool) *Trainer {
	t.Helper()
	d, err := NewDataset(strings.Repeat("abba", 8), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrainConfig()
	tc.BatchSize, tc.Steps, tc.EvalBatches = 2, 4, 1
	m, err := NewModel(Config{VocabSize: 2, BlockSize: 1, EmbedDim: 1, Heads: 1, Layers: 1, TiedHead: tied}, tc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, d, tc)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tr.trainStep(); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func FuzzReadCheckpoint(f *testing.F) {
	for _, tied := range []bool{false, true} {
		tr := fuzzSeedTrainer(f, tied)
		for _, weightsOnly := range []bool{false, true} {
			data := encodeCheckpoint(f, checkpointOf(tr, weightsOnly))
			f.Add(data)
			f.Add(data[:len(data)/2])
		}
	}
	f.Add([]byte(checkpointMagic))
	// Version 1: the same model without fingerprint and history.
	v1 := fuzzSeedTrainer(f, false).Checkpoint()
	v1.CorpusSHA256, v1.state.trainLoss, v1.state.valLoss = nil, nil, nil
	f.Add(downgradeToV1(encodeCheckpoint(f, v1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The raw bytes exercise the framing; resealed, an edit reaches
		// the checks behind the checksums.
		for _, in := range [][]byte{data, resealCheckpoint(data)} {
			c, err := ReadCheckpoint(bytes.NewReader(in))
			if err != nil {
				if !errors.Is(err, ErrBadCheckpoint) {
					t.Fatalf("error does not wrap ErrBadCheckpoint: %v", err)
				}
				continue
			}
			if !bytes.HasPrefix(in, []byte(checkpointMagic)) {
				continue // a safetensors file: FuzzReadSafetensors checks those
			}
			// Whatever is accepted is canonical: writing it back gives
			// the bytes that were read.
			var b bytes.Buffer
			if err := WriteCheckpoint(&b, c); err != nil {
				t.Fatalf("accepted checkpoint cannot be written: %v", err)
			}
			// (A version-1 input is written back as version 2.)
			want := b.Bytes()
			if binary.LittleEndian.Uint32(in[8:]) == 1 {
				want = downgradeToV1(want)
			}
			if !bytes.HasPrefix(in, want) {
				t.Fatal("writing an accepted checkpoint back gives different bytes")
			}
		}
	})
}

// Bytes too short for a header are reported as what they are.
func TestShortNonCheckpoint(t *testing.T) {
	for _, in := range []string{"abc", "hello world!", ""} {
		_, err := ReadCheckpoint(strings.NewReader(in))
		want := "not a minigpt checkpoint"
		if in == "" {
			want = "truncated in the header"
		}
		if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadCheckpoint(%q) = %v, want one mentioning %q", in, err, want)
		}
	}
	// A true prefix of a checkpoint is truncated, not foreign.
	_, err := ReadCheckpoint(strings.NewReader(checkpointMagic[:5]))
	if !strings.Contains(fmt.Sprint(err), "truncated") {
		t.Errorf("a cut magic number: %v, want truncated", err)
	}
}

// Issue 15 item 4: every flag bit the format does not define is refused.
// Each edited file is resealed (header CRC and SHA-256), so that the flag
// check is the only thing that can refuse it; the unedited resealed file
// is read as a control. The sections' sizes do not depend on the unknown
// bits, so a reader that ignored one would read the file successfully.
func TestReadCheckpointRefusesEveryUnknownFlag(t *testing.T) {
	tr := ckptTrainer(t, ckptFuzzConfig(false), 1, nil)
	for kind, weightsOnly := range []bool{false, true} {
		good := encodeCheckpoint(t, checkpointOf(tr, weightsOnly))
		flags := binary.LittleEndian.Uint32(good[12:])
		if _, err := ReadCheckpoint(bytes.NewReader(resealCheckpoint(good))); err != nil {
			t.Fatalf("control: the resealed unedited checkpoint: %v", err)
		}
		undefined := 0
		for bit := range 32 {
			if knownFlagsV2&(1<<bit) != 0 { // the file is version 2, where bit 5 is unknown too
				continue
			}
			undefined++
			b := slices.Clone(good)
			binary.LittleEndian.PutUint32(b[12:], flags|1<<bit)
			_, err := ReadCheckpoint(bytes.NewReader(resealCheckpoint(b)))
			if want := fmt.Sprintf("unknown section flags %#x", uint32(1)<<bit); !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), want) {
				t.Errorf("kind %d, flag bit %d: ReadCheckpoint = %v, want %q", kind, bit, err, want)
			}
		}
		if undefined != 27 {
			t.Fatalf("%d undefined flag bits, want 27 (bits 5 to 31): update this test with the format", undefined)
		}
	}
}

// TestReadCheckpointTellsTheFormat: a minigpt checkpoint and a
// safetensors file are both read, told apart by their first bytes, and
// anything else is refused naming what each format begins with.
func TestReadCheckpointTellsTheFormat(t *testing.T) {
	tr := ckptTrainer(t, ckptResumeConfig(), 3, nil)
	c := tr.Checkpoint().WeightsOnly()
	var st bytes.Buffer
	if err := WriteSafetensors(&st, c, "F64"); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"minigpt": encodeCheckpoint(t, c), "safetensors": st.Bytes()} {
		got, err := ReadCheckpoint(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Step != 3 || !testutil.BitsEqual(got.Model.Params(), c.Model.Params()) {
			t.Fatalf("%s: step %d, or the weights differ", name, got.Step)
		}
	}
	for _, junk := range []string{"PK\x03\x04 a zip file", "", "\x89GP", "12345678 not json"} {
		_, err := ReadCheckpoint(strings.NewReader(junk))
		if !errors.Is(err, ErrBadCheckpoint) {
			t.Fatalf("%q: %v, want ErrBadCheckpoint", junk, err)
		}
		if len(junk) >= 8 && !strings.Contains(err.Error(), "nor a safetensors file (an 8-byte header length, then '{')") {
			t.Errorf("%q: %v, want the formats' beginnings named", junk, err)
		}
	}
}
