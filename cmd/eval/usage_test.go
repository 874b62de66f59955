package main

import (
	"flag"
	"testing"

	"example.org/minigpt/cmd/internal/clitest"
)

// -h groups every flag with its example, -version prints the build, and
// docs/training.md's flag table is the flag set's.
func TestUsage(t *testing.T) {
	clitest.CheckUsage(t, &command, func() *flag.FlagSet { var o options; return newFlagSet(&o) }, run, "docs/training.md")
}
