//go:build linux

package rawsock

import (
	"syscall"
	"unsafe"
)

// Supported reports whether Read and Write are raw system calls here.
const Supported = true

// Read is one read(2) of fd into p (len(p) > 0) as a raw system call,
// retried on EINTR. fd must be non-blocking (every socket of the net
// package is): EAGAIN means the caller waits for readiness and calls again.
func Read(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// Write is one write(2) of p (len(p) > 0) to the non-blocking fd as a raw
// system call, retried on EINTR; it may write less than p.
func Write(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}
