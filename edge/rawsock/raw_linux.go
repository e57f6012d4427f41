//go:build linux && !race

// Not under the race detector: the net package's reads and writes carry
// race annotations (a release on every write, an acquire after every read)
// that raw system calls would skip, and tests that rely on a round trip for
// ordering would be flagged. Race builds use plain connections; the raw
// path is tested without -race (make test runs these packages both ways).

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
