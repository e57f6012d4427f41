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
// request). It reads only what fasthttp's client writes: CRLF line ends,
// canonical (or lower-case) header names, Content-Length for every body it
// does not chunk. One pass over the header lines, each found with a
// vectorised IndexByte: it runs on every upstream request.
func RequestLeft(p []byte) int {
	if len(p) == 0 || p[0] < 'A' || p[0] > 'Z' {
		return -1
	}
	i := bytes.IndexByte(p, '\n') + 1 // past the request line
	if i == 0 {
		return -1
	}
	length := -1
	for {
		n := bytes.IndexByte(p[i:], '\n')
		if n < 1 || p[i+n-1] != '\r' {
			return -1
		}
		line := p[i : i+n-1]
		i += n + 1
		if len(line) == 0 {
			break // the blank line ending the header block
		}
		switch {
		case hasName(line, teCanon, teLower):
			return -1
		case hasName(line, clCanon, clLower):
			v := contentLength(line[len(clCanon):])
			if v < 0 || (length >= 0 && v != length) {
				return -1
			}
			length = v
		}
	}
	body := len(p) - i
	switch {
	case length < 0 && body == 0:
		return 0 // no body
	case length < 0 || body > length:
		return -1
	}
	return length - body
}

// hasName reports whether the header line starts with one of the two
// spellings of a name (with its colon).
func hasName(line, canon, lower []byte) bool {
	return len(line) >= len(canon) && (line[0] == canon[0] || line[0] == lower[0]) &&
		(bytes.Equal(line[:len(canon)], canon) || bytes.Equal(line[:len(lower)], lower))
}

// contentLength parses a Content-Length value (spaces around it allowed);
// -1 when it is not a number below 2^31.
func contentLength(v []byte) int {
	for len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	for len(v) > 0 && v[len(v)-1] == ' ' {
		v = v[:len(v)-1]
	}
	if len(v) == 0 {
		return -1
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' || n > (1<<31)/10 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

var (
	teCanon = []byte("Transfer-Encoding:")
	teLower = []byte("transfer-encoding:")
	clCanon = []byte("Content-Length:")
	clLower = []byte("content-length:")
)
