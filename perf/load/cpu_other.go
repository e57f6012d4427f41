//go:build !unix

package load

// readCPU is not implemented off unix: the Result then reports zero CPU time.
func readCPU() cpuTime { return cpuTime{} }
