package load

import (
	"io"
	"net"

	"github.com/valyala/fasthttp"
)

// eofConn remembers that its peer closed the connection. fasthttp reports a chunked
// body cut off between two chunks (a crashed or killed upstream) as a clean io.EOF;
// peerClosed tells that from the body's real end, which is read up to its terminating
// chunk without the peer closing.
type eofConn struct {
	net.Conn
	addr eofAddr
	eof  bool // set by Read; the HostClient's pool orders the owners' accesses
}

// eofAddr is the remote address of an eofConn; it is how a Response leads back to its
// connection.
type eofAddr struct {
	net.Addr
	conn *eofConn
}

func (c *eofConn) RemoteAddr() net.Addr { return &c.addr }

func (c *eofConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// eofDial wraps dial (nil: TCP with no limit on concurrent dials, since thousands of
// streams may open at once) so that its connections are eofConns.
func eofDial(dial fasthttp.DialFunc) fasthttp.DialFunc {
	if dial == nil {
		dial = (&fasthttp.TCPDialer{}).Dial
	}
	return func(addr string) (net.Conn, error) {
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		ec := &eofConn{Conn: c}
		ec.addr = eofAddr{Addr: c.RemoteAddr(), conn: ec}
		return ec, nil
	}
}

// peerClosed reports whether the server closed the connection behind resp while its
// chunked body was being streamed: the body was cut, although reading it ended in
// io.EOF. Valid only while the body stream is open.
func peerClosed(resp *fasthttp.Response) bool {
	a, ok := resp.RemoteAddr().(*eofAddr)
	return ok && resp.Header.ContentLength() == -1 && a.conn.eof
}
