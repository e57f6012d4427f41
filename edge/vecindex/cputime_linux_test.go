package vecindex

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used (user and
// system), in ns; the benchmarks lock their goroutine to its thread. On a
// shared machine it leaves out the time the benchmark waited for a core,
// which wall time counts.
func threadCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
