package upstream

import (
	"bytes"
	"net"

	"gw/edge/rawsock"
)

// RequestWriter sends the write that completes an HTTP/1.1 request with
// rawsock's WriteOnRead, so the request leaves from inside the read of its
// answer and that read skips the attempt that would find the socket empty.
// Only a request known complete (RequestLeft) is held: a body still
// streaming in leaves as it comes. A connection's owner calls Write for
// every write and Read before every read; the zero value (or one for a
// connection that is not a raw socket) writes straight through.
type RequestWriter struct {
	onRead  func([]byte) (int, error) // rawsock's WriteOnRead, nil if none
	writing bool                      // a request is being written (no read since its first write)
	left    int                       // its bytes still to come, -1 unknown
}

// NewRequestWriter returns the RequestWriter of c.
func NewRequestWriter(c net.Conn) RequestWriter {
	if rc, ok := c.(*rawsock.Conn); ok {
		return RequestWriter{onRead: rc.WriteOnRead}
	}
	return RequestWriter{}
}

// Write writes p to c, holding it for the next read when it completes a
// request.
func (w *RequestWriter) Write(c net.Conn, p []byte) (int, error) {
	if w.onRead != nil {
		if !w.writing {
			w.writing, w.left = true, RequestLeft(p)
		} else if w.left > 0 {
			if w.left -= len(p); w.left < 0 {
				w.left = -1
			}
		}
		if w.left == 0 {
			w.left = -1
			if len(p) <= maxOnRead {
				return w.onRead(p)
			}
		}
	}
	return c.Write(p)
}

// Read records that a read starts: the next write begins a request.
func (w *RequestWriter) Read() { w.writing = false }

// maxOnRead bounds a request sent by rawsock's WriteOnRead: the bytes are
// copied and the copy's buffer stays with the connection.
const maxOnRead = 16 << 10

// RequestLeft returns how many bytes of the HTTP/1.1 request that p starts
// are still to be written after p: 0 when p holds all of it, -1 when that
// cannot be told (no complete header block in p, a chunked or malformed
// request). It reads only what fasthttp's client writes: canonical header
// names, Content-Length for every body it does not chunk.
func RequestLeft(p []byte) int {
	if len(p) == 0 || p[0] < 'A' || p[0] > 'Z' {
		return -1
	}
	end := bytes.Index(p, crlf2)
	if end < 0 {
		return -1
	}
	h := p[:end+2] // every header line ends in CRLF
	if bytes.Contains(h, teCanon) || bytes.Contains(h, teLower) {
		return -1
	}
	body := len(p) - end - 4
	i := bytes.Index(h, clCanon)
	if i < 0 {
		if i = bytes.Index(h, clLower); i < 0 {
			if body != 0 {
				return -1
			}
			return 0 // no body
		}
	}
	v := h[i+len(clCanon):]
	for len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	n, digits := 0, 0
	for ; digits < len(v) && v[digits] >= '0' && v[digits] <= '9'; digits++ {
		if n > (1<<31)/10 {
			return -1
		}
		n = n*10 + int(v[digits]-'0')
	}
	if digits == 0 || digits == len(v) || (v[digits] != '\r' && v[digits] != ' ') || body > n {
		return -1
	}
	return n - body
}

var (
	crlf2   = []byte("\r\n\r\n")
	teCanon = []byte("\r\nTransfer-Encoding:")
	teLower = []byte("\r\ntransfer-encoding:")
	clCanon = []byte("\r\nContent-Length:")
	clLower = []byte("\r\ncontent-length:")
)
