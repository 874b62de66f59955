//go:build !unix

package nn

import "time"

// processCPUTime is not available here; benchmarks then omit the
// metrics built on it.
func processCPUTime() (time.Duration, bool) { return 0, false }
