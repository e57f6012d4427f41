package load

// This file encapsulates the use of unsafe in package load; sleep_other.go is its safe
// twin.

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fineSleeper sleeps on a timerfd read through the Go netpoller. The Go runtime rounds a
// timer shorter than 1 ms up to 1 ms when the process is idle (its epoll_wait timeout is
// in ms), which would delay every open-loop send at rates above 1,000 req/s by up to a
// millisecond. A timerfd wakes epoll as soon as it expires, and the goroutine parks
// meanwhile, so its thread and P keep running workers (nanosleep(2) would hold the
// thread and make sysmon spin).
type fineSleeper struct {
	fd  uintptr
	f   *os.File // nil if timerfd_create failed: sleep falls back to time.Sleep
	buf [8]byte
}

// Linux clock id and flag values for timerfd_create(2).
const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

type itimerspec struct {
	interval, value syscall.Timespec
}

func newFineSleeper() *fineSleeper {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return &fineSleeper{}
	}
	// A non-blocking fd makes os.NewFile register it with the netpoller.
	return &fineSleeper{fd: fd, f: os.NewFile(fd, "gwload-timerfd")}
}

// sleep pauses for d > 0. Only one goroutine may call it.
func (s *fineSleeper) sleep(d time.Duration) {
	if d <= 0 {
		return // a zero it_value would disarm the timer and the read would never end
	}
	if s.f == nil {
		time.Sleep(d)
		return
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, s.fd, 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		time.Sleep(d)
		return
	}
	if _, err := s.f.Read(s.buf[:]); err != nil {
		time.Sleep(d)
	}
}

func (s *fineSleeper) close() {
	if s.f != nil {
		_ = s.f.Close()
	}
}
