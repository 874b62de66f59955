package minigpt

// This file gives the package's fuzz targets their own minimisation
// limit.

import (
	"flag"
	"os"
	"testing"
)

// TestMain caps how long fuzzing spends shrinking each new interesting
// input (by default up to 60 s) unless the command line sets
// -test.fuzzminimizetime: the targets' inputs are kilobytes of checkpoint,
// whose minimisation took the whole of a 45-second run, so that a short
// run fuzzed nothing.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", "3s"); err != nil {
			panic(err) // the flag exists in every test binary
		}
	}
	os.Exit(m.Run())
}
