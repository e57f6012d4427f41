//go:build !unix

package rawsock

import "syscall"

// Supported reports whether Read and Write are raw system calls here.
const Supported = false

// Read is not used where sockets are not file descriptors.
func Read(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }

// Write is not used where sockets are not file descriptors.
func Write(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
