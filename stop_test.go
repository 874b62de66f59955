package minigpt

import (
	"errors"
	"strings"
	"testing"
)

// refStop is the stop-string rule written directly on the whole text:
// the text ends before the first stop string to complete (the longest of
// those completing at the same character); held is, after each
// character, how many trailing characters may still begin a stop string.
func refStop(text string, stops []string) (out string, finish string, held []int) {
	rs := []rune(text)
	for i := 1; i <= len(rs); i++ {
		prefix := string(rs[:i])
		best := ""
		for _, s := range stops {
			if strings.HasSuffix(prefix, s) && len(s) > len(best) {
				best = s
			}
		}
		if best != "" {
			return strings.TrimSuffix(prefix, best), finishStop, held
		}
		h := 0
		for _, s := range stops {
			sr := []rune(s)
			for k := min(len(sr)-1, i); k > h; k-- {
				if string(rs[i-k:i]) == string(sr[:k]) {
					h = k
					break
				}
			}
		}
		held = append(held, h)
	}
	return text, finishLength, held
}

// checkStopper feeds text to the stopper one character at a time and
// compares the output, the finish reason and the hold-back after every
// character with refStop.
func checkStopper(t *testing.T, text string, stops []string) {
	chars := []rune(".abc")
	index := map[rune]int{'.': 0, 'a': 1, 'b': 2, 'c': 3}
	v, err := vocabFromChars(chars)
	if err != nil {
		t.Fatal(err)
	}
	st := newStopper(stops, v, 1, false, false)
	var streamed strings.Builder
	finish := string("")
	stream := func(c *Completion) error {
		streamed.WriteString(c.Text)
		if c.Finish != "" {
			finish = c.Finish
		}
		return nil
	}
	wantOut, wantFinish, held := refStop(text, stops)
	for i, r := range []rune(text) {
		err := st.add(0, index[r], nil, stream)
		if errors.Is(err, errFinished) {
			break
		}
		if got := i + 1 - streamed.Len(); got != held[i] {
			t.Fatalf("text %q stops %q: after %d characters %d are held back, want %d", text, stops, i+1, got, held[i])
		}
	}
	st.finish(stream)
	if streamed.String() != wantOut || finish != wantFinish {
		t.Fatalf("text %q stops %q: streamed %q (%s), want %q (%s)", text, stops, streamed.String(), finish, wantOut, wantFinish)
	}
}

func TestStopperAgainstReference(t *testing.T) {
	rng := seeded(11)
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc."[rng.IntN(4)]
		}
		return string(b)
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		stops := make([]string, 1+rng.IntN(maxStopStrings))
		for i := range stops {
			stops[i] = word(1 + rng.IntN(4))
		}
		checkStopper(t, word(rng.IntN(25)), stops)
	}
	// The longest of two stop strings ending together wins, in either order.
	checkStopper(t, "cab", []string{"b", "ab"})
	checkStopper(t, "cab", []string{"ab", "b"})
}

func FuzzStopper(f *testing.F) {
	f.Add("abcab.ca", "ab", "c.")
	f.Add("aaab", "aab", "b")
	f.Fuzz(func(t *testing.T, text, s1, s2 string) {
		for _, s := range []string{text, s1, s2} {
			if strings.Trim(s, "abc.") != "" {
				return
			}
		}
		if s1 == "" || s2 == "" || len(text) > 200 {
			return
		}
		checkStopper(t, text, []string{s1, s2})
	})
}
