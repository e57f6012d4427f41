//go:build unix

package upstream

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"gw/edge/rawsock"
)

// readIdle reads like net.Conn.Read but calls the idle hook once when the
// socket has nothing to read, before waiting for it.
func (c *Conn) readIdle(p []byte) (int, error) {
	if c.raw == nil || len(p) == 0 {
		return c.idleFallback(p)
	}
	if c.gap > 0 {
		// Only a read that waits needs the gap deadline (rawRead sets it);
		// one that finds data must not fail on an older deadline, so a
		// deadline less than half a gap away is pushed back first.
		if now := time.Now(); c.dl.IsZero() || now.Add(c.gap/2).After(c.dl) {
			if err := c.SetReadDeadline(now.Add(c.gap)); err != nil {
				return 0, err
			}
		}
	}
	c.rp, c.rn, c.rerr, c.idled = p, 0, nil, false
	err := c.raw.Read(c.rawFn)
	n, rerr := c.rn, c.rerr
	c.rp, c.rerr = nil, nil
	switch {
	case err != nil: // deadline, or the connection was closed
		return 0, err
	case rerr == ErrCallerGone:
		return 0, rerr
	case rerr != nil:
		return 0, c.readError(rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) readError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.addr.Addr, Err: os.NewSyscallError("read", err)}
}

// rawRead is the syscall.RawConn read callback: false means "wait until the
// socket is readable, then call again".
func (c *Conn) rawRead(fd uintptr) bool {
	for {
		n, errno := rawsock.Read(fd, c.rp)
		switch errno {
		case 0:
			c.rn = n
			return true
		case syscall.EAGAIN:
			if !c.idled {
				c.idled = true
				if idle := c.onIdle; idle != nil && !idle() {
					c.rerr = ErrCallerGone
					return true
				}
				continue // the hook took time: the upstream may have sent more
			}
			if c.gap > 0 {
				// The wait starts now: nothing for gap from here is a stall.
				if err := c.SetReadDeadline(time.Now().Add(c.gap)); err != nil {
					c.rerr = err
					return true
				}
			}
			return false
		default:
			c.rerr = errno
			return true
		}
	}
}

// deferWrites: requests wait in pend for the read of their answer.
const deferWrites = rawsock.Supported

// sendAndRead sends the deferred request and reads (the start of) its
// answer in one RawRead, whose readiness reset comes before the write, so
// an answer arriving at any time after the write wakes the wait. A socket
// that takes only part of the request gets the rest by a plain blocking
// write, then the read is a plain one.
func (c *Conn) sendAndRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, c.flush()
	}
	c.rp, c.rn, c.rerr, c.sent, c.short, c.idled = p, 0, nil, false, false, true
	err := c.raw.Read(c.sendFn)
	n, rerr, short := c.rn, c.rerr, c.short
	c.rp, c.rerr = nil, nil
	if !c.sent {
		c.pend = c.pend[:0] // failed or cut short: never sent twice from here
	}
	switch {
	case err != nil: // deadline, or the connection was closed
		return 0, err
	case rerr != nil:
		if errno, ok := rerr.(syscall.Errno); ok { // from rawRead
			return 0, c.readError(errno)
		}
		return 0, rerr
	case short:
		return c.Read(p)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// sendRead is the RawRead callback of sendAndRead: the first call writes
// the request and asks to wait; the calls after it read.
func (c *Conn) sendRead(fd uintptr) bool {
	if !c.sent {
		for off := 0; off < len(c.pend); {
			n, errno := rawsock.Write(fd, c.pend[off:])
			switch errno {
			case 0:
				off += n
			case syscall.EAGAIN:
				// Rare (a request near maxPend into a full socket buffer):
				// hand the rest to a blocking write.
				copy(c.pend, c.pend[off:])
				c.pend = c.pend[:len(c.pend)-off]
				c.short = true
				return true
			default:
				c.rerr = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.addr.Addr, Err: os.NewSyscallError("write", errno)}
				return true
			}
		}
		c.pend = c.pend[:0]
		c.sent = true
		return false
	}
	return c.rawRead(fd) // idled is set: no hook, an empty socket waits
}

// idleFallback serves connections without a raw file descriptor: the hook
// runs before every read that reaches the connection.
func (c *Conn) idleFallback(p []byte) (int, error) {
	if idle := c.onIdle; idle != nil && !idle() {
		return 0, ErrCallerGone
	}
	if c.gap > 0 {
		if err := c.SetReadDeadline(time.Now().Add(c.gap)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}
