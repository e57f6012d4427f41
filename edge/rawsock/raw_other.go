//go:build unix && (!linux || race)

package rawsock

import "syscall"

// Supported reports whether Read and Write are raw system calls here.
const Supported = false

// Read is syscall.Read where raw system calls are not used.
func Read(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Read(int(fd), p)) }

// Write is syscall.Write where raw system calls are not used.
func Write(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Write(int(fd), p)) }

func errno(n int, err error) (int, syscall.Errno) {
	if err == nil {
		return n, 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return 0, e
	}
	return 0, syscall.EIO
}
