//go:build unix

package minigpt

import (
	"syscall"
	"time"
)

// processCPUTime returns the CPU time (user + system) this process has
// used so far, for benchmarks to report how many cores a run really got
// on a shared machine.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
