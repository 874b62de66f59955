package bpe

// This file holds Train's tests: hand-computed merges, refusals, the
// GOMAXPROCS check, and a recounting twin the fuzz test holds it to.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Training equals these merges, computed by hand.
func TestTrainHandExample(t *testing.T) {
	const a, b, c, x, y, z, sp = 'a', 'b', 'c', 'x', 'y', 'z', ' '
	for _, tc := range []struct {
		text  string
		vocab int
		want  []Pair
	}{{
		// Pieces: "aaaa" once, " ab" twice. Counts: (a,a) 3 (overlapping,
		// in "aaaa"), (' ',a) 2, (a,b) 2.
		//  merge 0: (a,a), count 3 -> 256 "aa"; "aaaa" is [256 256]:
		//           (256,256) 1.
		//  merge 1: (' ',a) and (a,b) tie at 2; the smaller left id, ' '
		//           (32) < 'a' (97), wins -> 257 " a"; " ab" is [257 b]:
		//           (257,b) 2, (a,b) 0.
		//  merge 2: (257,b), 2 -> 258 " ab".
		//  merge 3: (256,256), 1 -> 259 "aaaa".
		// Every piece is one token: training stops at 260 of the 300 asked.
		text: "aaaa ab ab", vocab: 300,
		want: []Pair{{a, a}, {sp, a}, {257, b}, {256, 256}},
	}, {
		// One piece "abac": (a,b), (b,a), (a,c), 1 each.
		//  merge 0: left ids tie at 'a' between (a,b) and (a,c): the
		//           smaller right id, 'b', wins -> 256 "ab"; [256 a c]:
		//           (256,a) 1, (a,c) 1.
		//  merge 1: (a,c), left 97 < 256 -> 257 "ac"; [256 257].
		//  merge 2: (256,257) -> 258 "abac".
		text: "abac", vocab: 259,
		want: []Pair{{a, b}, {a, c}, {256, 257}},
	}, {
		// Pieces "xy" and " xz", counts 1 each: (x,y), (' ',x), (x,z).
		// Asked for one merge only: (' ',x), the smallest left id.
		text: "xy xz", vocab: 257,
		want: []Pair{{sp, x}},
	}, {
		// Pieces "ab", ",", " ab": a piece of one byte holds no pair;
		// (a,b) 2 and (' ',a) 1 -> (a,b) first, then (' ',256).
		text: "ab, ab", vocab: 1000,
		want: []Pair{{a, b}, {sp, 256}},
	}, {
		// "zz\xffzz": the invalid byte is a piece of its own between two
		// letter runs: "zz" (twice) and "\xff". (z,z) 2 -> 256; then
		// nothing is left.
		text: "zz\xffzz", vocab: 1000,
		want: []Pair{{z, z}},
	}, {
		text: "", vocab: 512, want: nil,
	}, {
		text: "y", vocab: 512, want: nil, // one byte, no pair
	}} {
		tok, err := Train(context.Background(), tc.text, tc.vocab)
		if err != nil {
			t.Fatalf("Train(%q): %v", tc.text, err)
		}
		if got := tok.Merges(); !slices.Equal(got, tc.want) {
			t.Errorf("Train(%q, %d) merges %v, want %v", tc.text, tc.vocab, got, tc.want)
		}
		if tok.VocabSize() != NumBytes+len(tc.want) {
			t.Errorf("Train(%q): vocabulary %d, want %d", tc.text, tok.VocabSize(), NumBytes+len(tc.want))
		}
	}
}

// The tokens of the first hand example, and how new texts encode, by
// hand: in "aaaaa" merge 0 joins (a,a) from the left, [256 256 a], then
// merge 3 joins (256,256), [259 a]; " ab" is 258. "ba  aaa" splits into
// "ba", " " and " aaa"; in " aaa" merge 0, (a,a), comes before merge 1,
// (' ',a): [' ' 256 a], and no merge joins (' ',256) or (256,a).
func TestEncodeHandExample(t *testing.T) {
	tok, err := Train(context.Background(), "aaaa ab ab", 300)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]string{'a': "a", 256: "aa", 257: " a", 258: " ab", 259: "aaaa"} {
		if got := tok.Token(id); got != want {
			t.Errorf("token %d is %q, want %q", id, got, want)
		}
	}
	if got, want := tok.Encode("aaaaa ab"), []int{259, 'a', 258}; !slices.Equal(got, want) {
		t.Errorf("Encode(\"aaaaa ab\") = %v, want %v", got, want)
	}
	if got, want := tok.Encode("ba  aaa"), []int{'b', 'a', ' ', ' ', 256, 'a'}; !slices.Equal(got, want) {
		t.Errorf("Encode(\"ba  aaa\") = %v, want %v", got, want)
	}
}

func TestTrainRefusesBadSizes(t *testing.T) {
	for _, v := range []int{-1, 0, 255, MaxVocabSize + 1} {
		if _, err := Train(context.Background(), "abc", v); err == nil || !strings.Contains(err.Error(), "vocabulary size") {
			t.Errorf("Train(vocab %d): %v", v, err)
		}
	}
	if tok, err := Train(context.Background(), "abc", NumBytes); err != nil || tok.NumMerges() != 0 {
		t.Errorf("Train(vocab 256): %v, %v", tok, err)
	}
}

func TestTrainStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(ctx, "the lamp keeper", 300); !errors.Is(err, context.Canceled) {
		t.Fatalf("Train with a cancelled context: %v", err)
	}
}

// A run of 'a' doubles its longest token each merge; past MaxTokenBytes
// the pair is not merged and training stops there.
func TestTrainNeverMakesTooLongTokens(t *testing.T) {
	tok, err := Train(context.Background(), strings.Repeat("a", 3*MaxTokenBytes), 1000)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for id := range tok.VocabSize() {
		longest = max(longest, len(tok.Token(id)))
	}
	if longest != MaxTokenBytes {
		t.Fatalf("the longest token has %d bytes, want %d", longest, MaxTokenBytes)
	}
}

// shakespeare is the repository's tiny Shakespeare, for the tests that
// want a large real text.
func shakespeare(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join("..", "..", "data", "tinyshakespeare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Training gives the same merges at GOMAXPROCS 1, 2 and 8.
func TestTrainSameAtAnyGOMAXPROCS(t *testing.T) {
	text := shakespeare(t)
	if testing.Short() {
		text = text[:200_000]
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first []Pair
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		tok, err := Train(context.Background(), text, 1024)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = tok.Merges()
			continue
		}
		if got := tok.Merges(); !slices.Equal(got, first) {
			t.Fatalf("GOMAXPROCS %d: the merges differ from GOMAXPROCS 1's", procs)
		}
	}
	if len(first) != 1024-NumBytes {
		t.Fatalf("%d merges", len(first))
	}
}

// recountTrain is the slow way to train, a twin of testdata's Python
// trainer in Go: recount every pair before each merge. The fuzz test
// holds Train's incremental counts to it on arbitrary bytes.
func recountTrain(text string, vocab int) []Pair {
	counts := map[string]int{}
	for _, p := range Split(text) {
		counts[p]++
	}
	type word struct {
		ids []int
		n   int
	}
	var words []word
	for p, n := range counts {
		ids := make([]int, len(p))
		for i := range len(p) {
			ids[i] = int(p[i])
		}
		words = append(words, word{ids, n})
	}
	length := make([]int, NumBytes, vocab)
	for i := range length {
		length[i] = 1
	}
	var merges []Pair
	for NumBytes+len(merges) < vocab {
		stats := map[Pair]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.ids); i++ {
				stats[Pair{w.ids[i], w.ids[i+1]}] += w.n
			}
		}
		best, bestN := Pair{}, 0
		for p, n := range stats {
			if length[p.Left]+length[p.Right] > MaxTokenBytes {
				continue
			}
			if n > bestN || n == bestN && (p.Left < best.Left || p.Left == best.Left && p.Right < best.Right) {
				best, bestN = p, n
			}
		}
		if bestN == 0 {
			break
		}
		id := NumBytes + len(merges)
		merges = append(merges, best)
		length = append(length, length[best.Left]+length[best.Right])
		for k, w := range words {
			var out []int
			for i := 0; i < len(w.ids); i++ {
				if i+1 < len(w.ids) && w.ids[i] == best.Left && w.ids[i+1] == best.Right {
					out = append(out, id)
					i++
				} else {
					out = append(out, w.ids[i])
				}
			}
			words[k].ids = out
		}
	}
	return merges
}

func FuzzTrainMatchesRecount(f *testing.F) {
	for _, s := range []string{"aaaa ab ab", "abac", "aaaaaaa aaa aa", "the lamp keeper's lamp", "\xff\xfe\xff\xfe \xff", "ab ab ba ba abab"} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, text string, merges int) {
		if len(text) > 2000 || merges < 0 || merges > 200 {
			t.Skip()
		}
		tok, err := Train(context.Background(), text, NumBytes+merges)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Merges(), recountTrain(text, NumBytes+merges); !slices.Equal(got, want) {
			t.Fatalf("Train: %v\nrecount: %v", got, want)
		}
	})
}
