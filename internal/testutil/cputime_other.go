//go:build !unix

package testutil

import "time"

// ProcessCPUTime is not available here: benchmarks leave out the figures
// that need it.
func ProcessCPUTime() (time.Duration, bool) { return 0, false }
