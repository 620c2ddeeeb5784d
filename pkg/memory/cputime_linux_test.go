package memory_test

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling thread (lock the goroutine
// to it): what a benchmark's own work costs, however busy the machine.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
