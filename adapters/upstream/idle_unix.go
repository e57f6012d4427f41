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
	err := c.raw(c.rawFn)
	n, rerr := c.rn, c.rerr
	c.rp, c.rerr = nil, nil
	switch {
	case err != nil: // deadline, or the connection was closed
		return 0, err
	case rerr == ErrCallerGone:
		return 0, rerr
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.addr.Addr, Err: os.NewSyscallError("read", rerr)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
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
