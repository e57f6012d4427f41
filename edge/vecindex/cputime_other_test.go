//go:build !linux

package vecindex

// threadCPU is not measured off Linux.
func threadCPU() int64 { return -1 }
