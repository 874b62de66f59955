package api

// Integer fields read at the edges of int64, where a float64 rounds.

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestIntegerAtTheEdgesOfInt64(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int  // when ok
		ok   bool // accepted
		msg  string
	}{
		{"9223372036854775807", math.MaxInt64, true, ""},
		{"-9223372036854775808", math.MinInt64, true, ""},
		{"9007199254740993", 9007199254740993, true, ""}, // 2^53+1: a float64 would read 2^53
		{"1e3", 1000, true, ""},
		{"2.0", 2, true, ""},
		{"9223372036854775808", 0, false, "out of range"},
		{"9.3e18", 0, false, "out of range"},
		{"-9.3e18", 0, false, "out of range"},
		{"1e400", 0, false, "out of range"},
		{"1.5", 0, false, "must be an integer"},
	} {
		var got int
		err := Fields{"n": json.RawMessage(c.raw)}.Integer("n", &got, math.MinInt64, math.MaxInt64)
		switch {
		case c.ok && (err != nil || got != c.want):
			t.Errorf("%s: got %d, %v; want %d", c.raw, got, err, c.want)
		case !c.ok && (err == nil || !strings.Contains(err.Message, c.msg)):
			t.Errorf("%s: got %d, %v; want an error saying %q", c.raw, got, err, c.msg)
		}
	}
}
