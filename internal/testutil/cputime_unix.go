//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPUTime returns the CPU time (user + system) this process has
// used so far: on a shared machine, a benchmark's rate per CPU second is
// less disturbed than its rate per second of wall time, and CPU time over
// wall time says how many cores a run really got.
func ProcessCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
