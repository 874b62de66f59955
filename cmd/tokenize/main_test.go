package main

// This file holds tokenize's tests: training, encoding, decoding and the
// merges, with outputs worked out by hand, and what is refused.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.org/minigpt/internal/bpe"
	"example.org/minigpt/internal/testutil"
)

type result struct {
	stdout, stderr string
	code           int
}

func tokenizeCLI(t *testing.T, args ...string) result {
	t.Helper()
	return tokenizeCtx(t, context.Background(), args...)
}

func tokenizeCtx(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := exitCode(run(ctx, args, &out, &errOut), &errOut)
	return result{out.String(), errOut.String(), code}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The hand example of internal/bpe's TestTrainHandExample: "aaaa ab ab"
// learns (a,a) -> 256, (' ',a) -> 257, (257,b) -> 258, (256,256) -> 259,
// and then no pair is left. "aaaaa ab" encodes as 259 "aaaa", 97 "a",
// 258 " ab": 8 bytes in 3 tokens, 2.67 bytes per token.
func TestTrainEncodeDecodeMerges(t *testing.T) {
	dir := t.TempDir()
	corpus := writeFile(t, dir, "corpus.txt", "aaaa ab ab")
	tokFile := filepath.Join(dir, "t.bpe")
	r := tokenizeCLI(t, "-corpus", corpus, "-vocab-size", "300", "-out", tokFile)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("train: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"10 bytes, 4 merges to 260 tokens", "no pair was left to merge", "compression on the corpus: 3 tokens, 3.33 bytes per token", "wrote " + tokFile} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("train: stderr %q lacks %q", r.stderr, want)
		}
	}
	data, err := os.ReadFile(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bpe.ReadBinary(data)
	if err != nil || tok.NumMerges() != 4 {
		t.Fatalf("the file: %v, %v", tok, err)
	}

	r = tokenizeCLI(t, "-tokenizer", tokFile, "-text", "aaaaa ab")
	want := "0  259  \"aaaa\"\n1   97  \"a\"\n2  258  \" ab\"\n8 bytes, 3 tokens: 2.67 bytes per token\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("-text: exit %d, stdout\n%s\nwant\n%s", r.code, r.stdout, want)
	}
	r = tokenizeCLI(t, "-tokenizer", tokFile, "-text", "aaaaa ab", "-ids")
	if r.code != 0 || r.stdout != "259 97 258\n" || r.stderr != "8 bytes, 3 tokens: 2.67 bytes per token\n" {
		t.Errorf("-ids: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = tokenizeCLI(t, "-tokenizer", tokFile, "-decode", "259,97, 258 98 255")
	if r.code != 0 || r.stdout != "aaaaa abb\xff" {
		t.Errorf("-decode: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = tokenizeCLI(t, "-tokenizer", tokFile, "-merges")
	want = "byte-level BPE, 260 tokens (4 merges)\nrank  token = left + right  bytes\n" +
		"0  256 = 97 + 97  \"a\" + \"a\" = \"aa\"\n" +
		"1  257 = 32 + 97  \" \" + \"a\" = \" a\"\n" +
		"2  258 = 257 + 98  \" a\" + \"b\" = \" ab\"\n" +
		"3  259 = 256 + 256  \"aa\" + \"aa\" = \"aaaa\"\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("-merges: exit %d, stdout\n%s\nwant\n%s", r.code, r.stdout, want)
	}
	// The same from the corpus, without a file.
	r = tokenizeCLI(t, "-corpus", corpus, "-vocab-size", "300", "-text", "aaaaa ab", "-ids")
	if r.code != 0 || r.stdout != "259 97 258\n" {
		t.Errorf("-corpus -text: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Any bytes encode and decode back exactly, through the command: the
// ids it prints, given to -decode, give the file's bytes again.
func TestRoundTripThroughTheCommand(t *testing.T) {
	dir := t.TempDir()
	text := "the lamp keeper's lamp \xff\xfe 😀 \r\n\t12345  "
	textFile := writeFile(t, dir, "text.bin", text)
	shakespeare := filepath.Join("..", "..", "data", "tinyshakespeare.txt")
	enc := tokenizeCLI(t, "-corpus", shakespeare, "-vocab-size", "600", "-text-file", textFile, "-ids")
	if enc.code != 0 {
		t.Fatalf("encode: exit %d, %s", enc.code, enc.stderr)
	}
	dec := tokenizeCLI(t, "-corpus", shakespeare, "-vocab-size", "600", "-decode", enc.stdout)
	if dec.code != 0 || dec.stdout != text {
		t.Fatalf("decode: exit %d, %q, want %q", dec.code, dec.stdout, text)
	}
}

// gpt2Dir writes GPT-2-format files for one merge, "Ġ t" (token 256, " t"),
// and <|endoftext|> (257), with GPT-2's byte order worked out by hand
// (internal/bpe's gpt2ByteID): 't' is 83 and ' ' is 220.
func gpt2Dir(t *testing.T) string {
	dir := t.TempDir()
	enc := map[string]int{}
	n := 0
	for b := range 256 {
		printable := b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae
		if !printable {
			enc[string(rune(256+n))] = 188 + n
			n++
		}
	}
	id := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			enc[string(rune(b))] = id
			id++
		}
	}
	enc["Ġt"], enc[bpe.EndOfText] = 256, 257
	j, err := json.Marshal(enc)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "encoder.json", string(j))
	writeFile(t, dir, "vocab.bpe", "#version: 0.2\nĠ t\n")
	return dir
}

func TestGPT2Files(t *testing.T) {
	dir := gpt2Dir(t)
	r := tokenizeCLI(t, "-gpt2", dir, "-text", " t<|endoftext|>", "-ids")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "256 27 91 ") { // '<' is 27, '|' 91: the text, not token 257
		t.Errorf("-gpt2 -text: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = tokenizeCLI(t, "-gpt2", dir, "-decode", "256 257 220")
	if r.code != 0 || r.stdout != " t<|endoftext|> " {
		t.Errorf("-gpt2 -decode: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = tokenizeCLI(t, "-gpt2", dir, "-merges")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "0  256 = 220 + 83  \" \" + \"t\" = \" t\"\nspecial  257  \"<|endoftext|>\"\n") {
		t.Errorf("-gpt2 -merges: exit %d, stdout %q", r.code, r.stdout)
	}
	// GPT-2's own files, when the npm test has installed them.
	if real := os.Getenv("MINIGPT_GPT2_FILES"); real != "" {
		r = tokenizeCLI(t, "-gpt2", real, "-text", "The keeper's lamp", "-ids")
		if r.code != 0 || r.stdout != "464 28356 338 20450\n" {
			t.Errorf("GPT-2's files: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	}
}

// Standard input as -text-file -, its byte-order mark dropped.
func TestTextFromStandardInput(t *testing.T) {
	defer func(r io.Reader) { stdin = r }(stdin)
	stdin = strings.NewReader("\uFEFFab")
	r := tokenizeCLI(t, "-corpus", writeFile(t, t.TempDir(), "c.txt", "ab ab"), "-text-file", "-", "-ids")
	if r.code != 0 || r.stdout != "256\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Flags that do not go together, values out of range and inputs that
// cannot be used are refused before any work, with status 2, naming
// what is wrong; nothing is written.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	corpus := writeFile(t, dir, "corpus.txt", "aaaa ab ab")
	tokFile := filepath.Join(dir, "t.bpe")
	if r := tokenizeCLI(t, "-corpus", corpus, "-vocab-size", "300", "-out", tokFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	bad := writeFile(t, dir, "bad.bpe", "minibpe\n\x01\x00\x00\x00\x00\x00\x00\x00")
	existing := writeFile(t, dir, "existing.bpe", "keep me")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give -corpus to train a tokenizer, or -tokenizer or -gpt2"},
		{[]string{"-corpus", corpus, "-tokenizer", tokFile}, "give one"},
		{[]string{"-tokenizer", tokFile}, "nothing to do"},
		{[]string{"-tokenizer", tokFile, "-vocab-size", "300", "-merges"}, "-vocab-size and -out are for training"},
		{[]string{"-corpus", corpus, "-vocab-size", "255"}, `invalid value "255" for flag -vocab-size: want 256`},
		{[]string{"-corpus", corpus, "-vocab-size", "131073"}, "to 131072"},
		{[]string{"-corpus", corpus, "-force"}, "-force replaces the -out file"},
		{[]string{"-corpus", corpus, "-text", "x", "-merges"}, "give one"},
		{[]string{"-tokenizer", tokFile, "-merges", "-ids"}, "-ids lists the ids of -text"},
		{[]string{"-tokenizer", tokFile, "-decode", "1 x"}, `flag -decode: id 2, "x", is not a number`},
		{[]string{"-tokenizer", tokFile, "-decode", "-1"}, "is not a number from 0"},
		{[]string{"-tokenizer", tokFile, "-decode", ""}, "no ids"},
		{[]string{"-tokenizer", tokFile, "-decode", "1 260"}, "id 2, 260, is outside the vocabulary (0 to 259)"},
		{[]string{"-corpus", corpus, "-vocab-size", "300", "-decode", "260"}, "outside the vocabulary"},
		{[]string{"-corpus", filepath.Join(dir, "missing.txt")}, "-corpus " + filepath.Join(dir, "missing.txt") + ": no such file"},
		{[]string{"-corpus", dir}, "is a directory, not a regular file"},
		{[]string{"-tokenizer", bad, "-merges"}, "-tokenizer " + bad + ": bpe: not a valid tokenizer: checksum"},
		{[]string{"-tokenizer", corpus, "-merges"}, "does not start with"},
		{[]string{"-gpt2", dir, "-merges"}, "encoder.json: no such file"},
		{[]string{"-text-file", filepath.Join(dir, "nope"), "-tokenizer", tokFile}, "-text-file " + filepath.Join(dir, "nope")},
		{[]string{"-tokenizer", tokFile, "-text-file", ""}, "-text-file is empty"},
		{[]string{"-corpus", corpus, "-out", existing}, "-out " + existing + ": the file exists; pass -force"},
		{[]string{"-corpus", corpus, "-out", corpus, "-force"}, "training would overwrite its corpus"},
		{[]string{"-corpus", corpus, "extra"}, `unexpected argument "extra"`},
	} {
		r := tokenizeCLI(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "tokenize -h") {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing -out file holds %q", b)
	}
	if got := testutil.DirNames(t, dir); len(got) != 4 {
		t.Errorf("the directory holds %q: something was written", got)
	}
}

// -force replaces an existing -out file; a special file is never
// replaced, not even with -force, and never read as an input (a FIFO
// would block).
func TestOutFiles(t *testing.T) {
	dir := t.TempDir()
	corpus := writeFile(t, dir, "corpus.txt", "aaaa ab ab")
	existing := writeFile(t, dir, "t.bpe", "old")
	if r := tokenizeCLI(t, "-corpus", corpus, "-vocab-size", "300", "-out", existing, "-force"); r.code != 0 {
		t.Fatalf("-force: exit %d, %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(existing); !strings.HasPrefix(string(b), "minibpe\n") {
		t.Errorf("-force did not replace the file: %q", b)
	}
	_, paths, linked := testutil.SpecialFiles(t)
	for kind, p := range paths {
		kind = strings.TrimSpace(kind)
		r := tokenizeCLI(t, "-corpus", corpus, "-out", p, "-force")
		if r.code != 2 || !strings.Contains(r.stderr, kind) || !strings.Contains(r.stderr, "never replaced") {
			t.Errorf("-out %s: exit %d, %q", kind, r.code, r.stderr)
		}
		if kind == "symbolic link" {
			continue // an input may be a link to a regular file
		}
		for _, args := range [][]string{{"-corpus", p}, {"-tokenizer", p, "-merges"}, {"-corpus", corpus, "-text-file", p}} {
			if r := tokenizeCLI(t, args...); r.code != 2 || !strings.Contains(r.stderr, p+": ") {
				t.Errorf("%q: exit %d, %q", args, r.code, r.stderr)
			}
		}
	}
	if b, _ := os.ReadFile(linked); string(b) != "linked" {
		t.Errorf("the symbolic link's target holds %q", b)
	}
}

// An interrupt before the writing writes nothing and exits 130.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	corpus := writeFile(t, dir, "corpus.txt", strings.Repeat("the lamp keeper ", 1000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := tokenizeCtx(t, ctx, "-corpus", corpus, "-out", filepath.Join(dir, "t.bpe"))
	if r.code != 130 || !strings.Contains(r.stderr, "interrupted while training; nothing written") {
		t.Fatalf("exit %d, %q; want 130", r.code, r.stderr)
	}
	if got := testutil.DirNames(t, dir); len(got) != 1 {
		t.Fatalf("the directory holds %q", got)
	}
}

// Output that does not arrive fails the command (status 1).
func TestWriteErrorExits1(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer f.Close()
	var errOut bytes.Buffer
	corpus := writeFile(t, t.TempDir(), "corpus.txt", "aaaa ab ab")
	err = run(context.Background(), []string{"-corpus", corpus, "-merges"}, f, &errOut)
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "writing the output") {
		t.Fatalf("exit %d, %q", code, errOut.String())
	}
}
