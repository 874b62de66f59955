package cli

import (
	"strings"
	"testing"
)

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		s           string
		pos, radius int
		want        string
	}{
		{"the lamp keeper", 4, 3, `…"he lamp"…`},
		{"the lamp keeper", 0, 3, `"the "…`},
		{"the lamp keeper", 14, 3, `…"eper"`},
		{"short", 2, 10, `"short"`},
		{"naïve\nZ", 6, 2, `…"e\nZ"`},
	} {
		if got := Excerpt(tc.s, tc.pos, tc.radius); got != tc.want {
			t.Errorf("Excerpt(%q, %d, %d) = %s, want %s", tc.s, tc.pos, tc.radius, got, tc.want)
		}
	}
	// 110 KB of prompt give a line of a bounded length.
	big := strings.Repeat("a", 110_000) + "Z" + strings.Repeat("a", 1000)
	if got := Excerpt(big, 110_000, 30); len(got) > 80 || !strings.Contains(got, "Z") {
		t.Fatalf("excerpt of a 110 KB prompt: %d bytes: %s", len(got), got)
	}
}
