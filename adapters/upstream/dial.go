package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"gw/edge/rawsock"
)

// dialer dials one pool's connections. Host, port and TLS server name come
// from the URL; only the IP addresses come from resolve_addresses or DNS.
type dialer struct {
	fixed   []netip.Addr // resolve_addresses, tried in listed order
	dns     *DNSCache
	timeout time.Duration // cap of one dial (all addresses)
	nd      net.Dialer
}

// errNoAddr is returned when there is nothing to dial.
var errNoAddr = errors.New("upstream: no address to dial")

// dial implements fasthttp.DialFuncWithTimeout. addr is the pool's
// "host:port". timeout is the request's remaining time (0: none); the dial
// takes at most the smaller of it and the pool's dial timeout. Several
// addresses are tried in order, each with an equal share of the time left,
// as net.Dialer does.
func (d *dialer) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 || (d.timeout > 0 && d.timeout < timeout) {
		timeout = d.timeout
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, err
	}
	ips := d.fixed
	if len(ips) == 0 {
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = d.dns.Lookup(ctx, host); err != nil {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
		}
	}
	if len(ips) == 0 {
		return nil, errNoAddr
	}
	var firstErr error
	for i, ip := range ips {
		actx := ctx
		if dl, ok := ctx.Deadline(); ok {
			share := time.Until(dl) / time.Duration(len(ips)-i)
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(ctx, share)
			defer cancel()
		}
		c, err := d.nd.DialContext(actx, "tcp", netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
		if err == nil {
			return newConn(c), nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

var _ fasthttp.DialFuncWithTimeout = (*dialer)(nil).dial

// Conn is a dialed upstream connection (the raw TCP connection, under TLS
// when the URL is https). Its RemoteAddr is a *ConnAddr pointing back to it,
// which fasthttp copies into Response.RemoteAddr; SetReadDeadline uses that
// to reach the connection behind a response.
//
// A Conn is used by one request at a time (fasthttp's pool hands it over
// under a lock), so its fields need no atomics; aborted, set by Abort from
// another goroutine, is the exception.
type Conn struct {
	net.Conn
	addr    ConnAddr
	created time.Time
	read    bool // a byte was read since the last write

	req RequestWriter // whole requests leave with the read of their answer
	eof bool          // the peer closed the connection (a read returned io.EOF)
	// aborted: closed by Abort, from another goroutine
	aborted atomic.Bool

	// onIdle is the idle hook of the stream being read (SetIdleHook), gap
	// its read timeout; raw and the fields below serve the reads made while
	// it is set. dl is the read deadline last set on the connection.
	onIdle func() bool
	gap    time.Duration
	dl     time.Time
	raw    func(func(fd uintptr) bool) error // a RawConn read on the socket
	rawFn  func(fd uintptr) bool             // c.rawRead, bound once so a read does not allocate
	rp     []byte
	rn     int
	rerr   error
	idled  bool
}

// ConnAddr is the remote address of a Conn. It embeds the real address, so
// String and Network are unchanged.
type ConnAddr struct {
	net.Addr
	conn *Conn
}

// Conn returns the connection behind the address.
func (a *ConnAddr) Conn() *Conn { return a.conn }

func newConn(c net.Conn) *Conn {
	w := &Conn{Conn: rawsock.Wrap(c), created: time.Now()}
	w.addr = ConnAddr{Addr: c.RemoteAddr(), conn: w}
	// The idle hook's reads go through the raw socket's own RawRead when
	// there is one: it holds deadlines back until a read starts, so a second
	// RawConn on the same socket would wait under a stale one.
	if rc, ok := w.Conn.(*rawsock.Conn); ok {
		w.raw = rc.RawRead
	} else if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw.Read
		}
	}
	if w.raw != nil {
		w.rawFn = w.rawRead
	}
	w.req = NewRequestWriter(w.Conn)
	return w
}

// RemoteAddr returns the *ConnAddr of c.
func (c *Conn) RemoteAddr() net.Addr { return &c.addr }

func (c *Conn) Write(p []byte) (int, error) {
	c.read = false
	c.onIdle, c.gap = nil, 0 // a new request: the hook of an earlier stream never outlives it
	return c.req.Write(c.Conn, p)
}

// SetReadDeadline records t (see readIdle) and sets it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.dl = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline records the read deadline t and sets both.
func (c *Conn) SetDeadline(t time.Time) error {
	c.dl = t
	return c.Conn.SetDeadline(t)
}

func (c *Conn) Read(p []byte) (int, error) {
	c.req.Read() // the next write starts a request
	var n int
	var err error
	if c.onIdle != nil {
		n, err = c.readIdle(p)
	} else {
		n, err = c.Conn.Read(p)
	}
	if n > 0 {
		c.read = true
	}
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// PeerClosed reports whether the upstream closed the connection behind resp
// while its body was being read. fasthttp reports a chunked body cut off
// between chunks as a clean io.EOF; a chunked body that really ended was
// read up to its terminating chunk without the peer closing, so this tells
// the two apart. Valid only while the body stream is open.
func PeerClosed(resp *fasthttp.Response) bool {
	a, ok := resp.RemoteAddr().(*ConnAddr)
	return ok && a.conn.eof
}

// staleIdle reports whether c existed before the request that started at
// start (so it came from the idle pool) and nothing was read since the
// request was written: the server closed an idle keep-alive connection under
// the request, which is then safe to resend.
func (c *Conn) staleIdle(start time.Time) bool {
	return c.created.Before(start) && !c.read && !c.aborted.Load()
}

// SetReadDeadline sets the read deadline of the upstream connection behind
// resp, for the gap timeout of a streamed body: call it before each read of
// resp.BodyStream(); a read past t fails with a timeout error (Classify:
// KindTimeout), and the connection is then discarded when the stream is
// closed. It works under TLS, since the deadline is set on the raw
// connection. t zero clears the deadline.
//
// It reports false when resp did not come from a Client of this package.
// Valid only while the stream is open: after resp.CloseBodyStream the
// connection may already serve another request.
func SetReadDeadline(resp *fasthttp.Response, t time.Time) bool {
	a, ok := resp.RemoteAddr().(*ConnAddr)
	if !ok || a.conn == nil {
		return false
	}
	return a.conn.SetReadDeadline(t) == nil
}

// ErrCallerGone is the read error of a stream whose idle hook reported that
// its caller left: the read is abandoned instead of waiting for the upstream.
var ErrCallerGone = errors.New("upstream: the stream's caller left")

// SetIdleHook makes idle run whenever a read of the stream in resp finds
// nothing more has arrived from the upstream — just before the read would
// wait for the network. A relay uses it to write what it has batched
// exactly when the upstream has nothing more ready: events that arrived
// together leave in one write, and no event waits for a later one. idle
// returns false when the stream's caller is gone; the read then fails with
// ErrCallerGone instead of waiting. The hook costs no extra system call: the
// read that finds the socket empty is the one the runtime makes anyway.
//
// gap (> 0) is the stream's read timeout while the hook is set: a read that
// has to wait fails with a timeout error (IsTimeout) when nothing arrives
// for gap. The deadline is set only when a read is about to wait, not
// before every read as SetReadDeadline would be.
//
// The hook runs on the goroutine that reads the stream. Clear it (nil)
// before the body stream is closed; a new request on the connection clears
// it too. SetIdleHook reports false when resp did not come from a Client of
// this package; the hook is then not installed.
func SetIdleHook(resp *fasthttp.Response, idle func() bool, gap time.Duration) bool {
	a, ok := resp.RemoteAddr().(*ConnAddr)
	if !ok || a.conn == nil {
		return false
	}
	a.conn.onIdle, a.conn.gap = idle, gap
	return true
}

// CloseStream closes the body stream of resp (from DoStream). Its
// connection returns to the keep-alive pool only when the body was read to
// its end (the chunked terminator or Content-Length) and the peer did not
// close it; a stream cut short — timed out, failed, or abandoned by its
// caller — closes its connection, which is also how the upstream learns that
// the call was cancelled.
func CloseStream(resp *fasthttp.Response) {
	if resp.BodyStream() == nil {
		// No body (204, 304) or no exchange: fasthttp gave the connection
		// back or closed it already; it may serve another request now.
		return
	}
	if a, ok := resp.RemoteAddr().(*ConnAddr); ok && a.conn != nil {
		a.conn.onIdle, a.conn.gap = nil, 0
		if a.conn.eof {
			// fasthttp reports a chunked body cut between chunks as its end;
			// the connection must not be pooled.
			resp.SetConnectionClose()
		}
	}
	_ = resp.CloseBodyStream()
}
