// Package rawsock reads and writes TCP sockets with raw system calls.
//
// Go's net package makes every read(2) and write(2) a scheduler-visible
// system call (entersyscall/exitsyscall), because a system call may block.
// Socket I/O never does: the runtime sets its sockets non-blocking and waits
// for readiness in the netpoller. But a loopback write carries the peer's
// whole TCP receive path and its wake-up, and on a VM that takes tens of
// microseconds; when such a call spans a tick of the runtime's monitor
// thread (sysmon), sysmon hands the P to another thread (futex wake-ups,
// context switches), resets its own back-off and polls again 20 µs later.
// Under a gateway's load that monitor loop alone was 18 % of gw's CPU
// (profiled: runtime.sysmon → usleep → nanosleep → context switch, on every
// tick). A raw system call is invisible to that machinery: the goroutine
// keeps its P for the few microseconds the kernel works, sysmon finds
// nothing to retake and backs off to its 10 ms sleep.
//
// Readiness waits, deadlines and close still go through the netpoller by
// syscall.RawConn, so a Conn behaves exactly like the net.Conn it wraps.
package rawsock

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Conn is a net.Conn whose Read and Write use raw system calls. Other
// methods (deadlines, Close, addresses) are the wrapped connection's.
type Conn struct {
	net.Conn
	raw syscall.RawConn

	// The callbacks are bound once, so that an I/O call does not allocate;
	// their arguments and results travel in these fields, under the mutex
	// of their direction (net.Conn allows concurrent calls).
	rmu, wmu sync.Mutex
	rfn, wfn func(fd uintptr) bool
	rp, wp   []byte
	rn, wn   int
	rerr     syscall.Errno
	werr     syscall.Errno

	// cork: the next Write is held in held and leaves with the one after
	// it (or before the next Read, or at Close); see Cork.
	cork   bool
	noWait bool // Close's last write: never wait for the socket to drain
	held   []byte
	isHeld atomic.Bool
	onRead bool // held is a WriteOnRead message (under wmu)

	// A Read's callback sends a WriteOnRead message first (sendFirst);
	// sendRest: the socket took only part of it; sendFailed: rerr is the
	// write's error. Under rmu.
	sendFirst, sendRest, sendFailed bool

	dl deadlines // see deadline.go
}

// Wrap returns c reading and writing with raw system calls when c is a TCP
// connection on a platform that supports them, and c itself otherwise.
func Wrap(c net.Conn) net.Conn {
	if !Supported {
		return c
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	w := &Conn{Conn: c, raw: raw}
	w.rfn, w.wfn = w.read, w.write
	return w
}

// Unwrap returns the wrapped connection.
func (c *Conn) Unwrap() net.Conn { return c.Conn }

// Listener wraps the connections a net.Listener accepts.
type Listener struct{ net.Listener }

// Accept waits for the next connection and wraps it.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

func (c *Conn) Read(p []byte) (int, error) {
	first := false
	if c.isHeld.Load() {
		if first = c.takeOnRead(); !first {
			if err := c.sendHeld(); err != nil {
				return 0, err
			}
		}
	}
	if len(p) == 0 {
		if first {
			return 0, c.sendHeld()
		}
		return 0, nil
	}
	c.rmu.Lock()
	if err := c.begin(false); err != nil {
		c.rmu.Unlock()
		return 0, err
	}
	c.rp, c.rn, c.rerr = p, 0, 0
	c.sendFirst, c.sendRest, c.sendFailed = first, false, false
	err := c.raw.Read(c.rfn)
	n, rerr, rest, failed := c.rn, c.rerr, c.sendRest, c.sendFailed
	c.rp = nil
	c.end(false)
	c.rmu.Unlock()
	if rest {
		// The socket took part of the held message: the rest goes out
		// with a write that may wait, then the read starts over.
		if err := c.sendHeld(); err != nil {
			return 0, err
		}
		return c.Read(p)
	}
	if err != nil { // deadline passed, or the connection was closed
		return 0, err
	}
	if rerr != 0 {
		op := "read"
		if failed {
			op = "write"
		}
		return 0, c.opError(op, rerr)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// RawRead runs fn as a syscall.RawConn read callback on c's socket (fn
// reads with Read itself; false means "wait until readable, then call
// again"), with c's held bytes sent and its read deadline armed first, as
// for c.Read. It lets a caller act between finding the socket empty and
// waiting (adapters/upstream's idle hook) without a second RawConn that
// would not see the deadline c holds back.
func (c *Conn) RawRead(fn func(fd uintptr) bool) error {
	if c.isHeld.Load() {
		if err := c.sendHeld(); err != nil {
			return err
		}
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if err := c.begin(false); err != nil {
		return err
	}
	err := c.raw.Read(fn)
	c.end(false)
	return err
}

// read is the syscall.RawConn read callback: false means "wait until the
// socket is readable, then call again".
func (c *Conn) read(fd uintptr) bool {
	if c.sendFirst {
		c.sendFirst = false
		return c.sendOnRead(fd)
	}
	n, e := Read(fd, c.rp)
	switch e {
	case 0:
		c.rn = n
	case syscall.EAGAIN:
		return false
	default:
		c.rerr = e
	}
	return true
}

// write is the syscall.RawConn write callback: it writes all of c.wp,
// waiting for the socket to drain (false) when its buffer is full.
func (c *Conn) write(fd uintptr) bool {
	for c.wn < len(c.wp) {
		n, e := Write(fd, c.wp[c.wn:])
		switch e {
		case 0:
			c.wn += n
		case syscall.EAGAIN:
			return c.noWait
		default:
			c.werr = e
			return true
		}
	}
	return true
}

func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.cork {
		c.cork = false
		c.held = append(c.held, p...)
		c.onRead = false
		c.isHeld.Store(true)
		return len(p), nil
	}
	if h := len(c.held); h > 0 {
		// One write(2) for the held bytes and these.
		c.held = append(c.held, p...)
		n, err := c.sendHeldLocked()
		return max(n-h, 0), err
	}
	return c.writeLocked(p)
}

// sendHeldLocked writes the held bytes and forgets them (c.wmu held).
func (c *Conn) sendHeldLocked() (int, error) {
	n, err := c.writeLocked(c.held)
	c.forgetHeldLocked()
	return n, err
}

func (c *Conn) forgetHeldLocked() {
	c.held = c.held[:0]
	c.onRead = false
	c.isHeld.Store(false)
}

func (c *Conn) writeLocked(p []byte) (int, error) {
	if err := c.begin(true); err != nil {
		return 0, err
	}
	c.wp, c.wn, c.werr = p, 0, 0
	err := c.raw.Write(c.wfn)
	n, werr := c.wn, c.werr
	c.wp = nil
	c.end(true)
	if err != nil {
		return n, err
	}
	if werr != 0 {
		return n, c.opError("write", werr)
	}
	return n, nil
}

// WriteOnRead holds p, a whole message after which the caller's next call
// is a Read of the answer, and sends it from inside that Read: the read
// then waits for the socket to become readable without trying it first.
// The answer cannot be there before the message leaves, so the read that
// would find the socket empty (a system call per request) is saved, and
// nothing is lost: the runtime's readiness flag is reset when a read
// starts, before the message is written, so the answer's arrival always
// wakes the wait. A Write (or Close) before that Read sends the held bytes
// as with Cork. Not for a message the peer may answer before it is all
// sent in later writes: those would wait for the next Read.
func (c *Conn) WriteOnRead(p []byte) (int, error) {
	c.wmu.Lock()
	c.held = append(c.held, p...)
	c.onRead = true
	c.isHeld.Store(true)
	c.wmu.Unlock()
	return len(p), nil
}

// takeOnRead reports whether the held bytes are a WriteOnRead message.
func (c *Conn) takeOnRead() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.onRead && len(c.held) > 0
}

// sendOnRead writes the held message from inside Read's callback. All of
// it written: wait for the answer (false). The socket took only part:
// Read sends the rest with a write that may wait. A write error ends the
// Read with it.
func (c *Conn) sendOnRead(fd uintptr) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for len(c.held) > 0 {
		n, e := Write(fd, c.held)
		switch e {
		case 0:
			c.held = c.held[:copy(c.held, c.held[n:])]
		case syscall.EAGAIN:
			c.sendRest = true
			return true
		default:
			c.rerr, c.sendFailed = e, true
			c.forgetHeldLocked()
			return true
		}
	}
	c.forgetHeldLocked()
	return false
}

// Cork holds the next Write back until the Write after it, so that both
// leave in one write(2): a streamed response's last batch and the chunked
// terminator fasthttp writes right after it. The held bytes also leave
// before the next Read and at Close, so nothing waits for a Write that
// does not come.
func (c *Conn) Cork() {
	c.wmu.Lock()
	c.cork = true
	c.wmu.Unlock()
}

// sendHeld writes held bytes now.
func (c *Conn) sendHeld() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.cork = false
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.sendHeldLocked()
	return err
}

// Close sends held bytes if the socket takes them at once (it never
// waits), then closes the connection.
func (c *Conn) Close() error {
	if c.isHeld.Load() {
		c.wmu.Lock()
		c.noWait = true
		_, _ = c.sendHeldLocked()
		c.noWait = false
		c.wmu.Unlock()
	}
	return c.Conn.Close()
}

func (c *Conn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
