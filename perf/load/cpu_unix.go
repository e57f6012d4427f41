//go:build unix

package load

import (
	"syscall"
	"time"
)

// readCPU returns the process's CPU time so far (getrusage RUSAGE_SELF: every thread, so
// an in-process target such as a test's mock is included). It returns zero if the call
// fails.
func readCPU() cpuTime {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTime{}
	}
	return cpuTime{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}
