package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"sync"
	"time"

	"gw/admin/resources"
)

// gw's own small HTTP/1.1 client of one MCP server (the lean path of
// tools/call, lean.go): keep-alive connections (net.Conn + bufio), one
// request at a time per connection, requests written whole in one write.

// Bounds of a lean client's pool.
const (
	leanMaxIdle     = 16               // idle connections kept per server
	leanIdleTimeout = 90 * time.Second // as http.DefaultTransport's IdleConnTimeout
	leanDrainWait   = 100 * time.Millisecond
	leanReadBuf     = 8 << 10
)

// errLeanUnavailable: the lean path cannot reach the server (dial or TLS
// failure); the call takes the SDK path.
var errLeanUnavailable = errors.New("mcp: the lean path cannot reach the server")

// leanClients holds a Handler's lean clients by server name; a reloaded
// server entry gets a new client and the old one's connections close.
type leanClients struct {
	mu sync.Mutex
	by map[string]*leanClient
}

// get returns the lean client of srv, nil when srv's calls take the SDK
// path (see newLeanClient).
func (l *leanClients) get(srv *resources.MCPServer, rt http.RoundTripper) *leanClient {
	l.mu.Lock()
	lc := l.by[srv.Name]
	if lc == nil || lc.srv != srv {
		old := lc
		lc = newLeanClient(srv, rt)
		if l.by == nil {
			l.by = make(map[string]*leanClient)
		}
		l.by[srv.Name] = lc
		if old != nil {
			defer old.close()
		}
	}
	l.mu.Unlock()
	if !lc.ok {
		return nil
	}
	return lc
}

func (l *leanClients) close() {
	l.mu.Lock()
	by := l.by
	l.by = nil
	l.mu.Unlock()
	for _, lc := range by {
		lc.close()
	}
}

// leanClient is the HTTP/1.1 client of one server entry.
type leanClient struct {
	srv  *resources.MCPServer
	ok   bool // false: every call takes the SDK path
	addr string
	tls  *tls.Config // nil: plain TCP
	// head is the request line and the static headers: Host, the MCP
	// content types, the server's headers and credential.
	head             []byte
	session, version bool // gw sends Mcp-Session-Id / MCP-Protocol-Version (no configured header replaces it)

	mu     sync.Mutex
	idle   []*leanConn
	closed bool
}

type leanConn struct {
	nc     net.Conn
	br     *bufio.Reader
	idleAt time.Time
}

// newLeanClient prepares srv's lean client. It is not usable (ok false)
// when the SDK path must carry the calls: a transport other than
// net/http's (a custom RoundTripper, a custom dialer) or a proxy for the
// URL from the environment, a URL with user info or another scheme than
// http and https, header values that cannot be sent as they are.
// https uses the transport's TLS settings (http.DefaultTransport: the
// system roots), offering HTTP/1.1 only.
func newLeanClient(srv *resources.MCPServer, rt http.RoundTripper) *leanClient {
	lc := &leanClient{srv: srv, session: true, version: true}
	t, isT := rt.(*http.Transport)
	if !isT || t.Dial != nil || t.DialTLS != nil || t.DialTLSContext != nil || t.DialContext != nil && rt != http.DefaultTransport {
		return lc
	}
	u, err := url.Parse(srv.URL)
	if err != nil || u.Host == "" || u.User != nil || u.Scheme != "http" && u.Scheme != "https" {
		return lc
	}
	if t.Proxy != nil {
		if pu, err := t.Proxy(&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}); err != nil || pu != nil {
			return lc
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	lc.addr = net.JoinHostPort(u.Hostname(), port)
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		if cfg.ClientSessionCache == nil {
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(leanMaxIdle)
		}
		lc.tls = cfg
	}
	// The headers as the SDK path sends them: its own, then the server's
	// (headerTransport: Set, so a configured header replaces one of the
	// SDK's), then the credential.
	hdrs := [][2]string{
		{"Content-Type", "application/json"},
		{"Accept", "application/json, text/event-stream"},
		{"Accept-Encoding", "identity"},
		{"User-Agent", "Go-http-client/1.1"},
	}
	set := func(name, value string) {
		for i := range hdrs {
			if hdrs[i][0] == name {
				hdrs[i][1] = value
				return
			}
		}
		hdrs = append(hdrs, [2]string{name, value})
	}
	for _, h := range srv.Headers {
		name := textproto.CanonicalMIMEHeaderKey(h.Name)
		switch name {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer", "Proxy-Connection", "Accept-Encoding":
			continue // framing is gw's (net/http ignores or refuses these too)
		case "Mcp-Session-Id":
			lc.session = false
		case "Mcp-Protocol-Version":
			lc.version = false
		}
		set(name, h.Value.Reveal())
	}
	if pk := srv.ProviderKey; pk != nil && pk.APIKey.IsSet() {
		set("Authorization", "Bearer "+pk.APIKey.Reveal())
	}
	b := append([]byte("POST "), u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	b = append(b, "\r\n"...)
	for _, h := range hdrs {
		if !headerSafe(h[0]) || !headerSafe(h[1]) {
			return lc
		}
		b = append(append(append(append(b, h[0]...), ": "...), h[1]...), "\r\n"...)
	}
	lc.head = b
	lc.ok = true
	return lc
}

// headerSafe reports whether s can be written in a header line as it is.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

// appendRequest appends the whole HTTP request carrying body on the
// upstream session sid at protocol version pv ("" for none).
func (lc *leanClient) appendRequest(b []byte, sid, pv string, body []byte) []byte {
	b = append(b, lc.head...)
	if sid != "" && lc.session {
		b = append(append(append(b, "Mcp-Session-Id: "...), sid...), "\r\n"...)
	}
	if pv != "" && lc.version {
		b = append(append(append(b, "Mcp-Protocol-Version: "...), pv...), "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// conn returns an idle connection (reused true) or dials a new one.
func (lc *leanClient) conn(ctx context.Context) (c *leanConn, reused bool, err error) {
	now := time.Now()
	lc.mu.Lock()
	for n := len(lc.idle); n > 0; n-- {
		c = lc.idle[n-1]
		lc.idle[n-1] = nil
		lc.idle = lc.idle[:n-1]
		if now.Sub(c.idleAt) < leanIdleTimeout {
			lc.mu.Unlock()
			return c, true, nil
		}
		c.nc.Close()
	}
	lc.mu.Unlock()
	c, err = lc.dial(ctx)
	return c, false, err
}

func (lc *leanClient) dial(ctx context.Context) (*leanConn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", lc.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errors.Join(errLeanUnavailable, err)
	}
	if lc.tls != nil {
		tc := tls.Client(nc, lc.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errors.Join(errLeanUnavailable, err)
		}
		nc = tc
	}
	return &leanConn{nc: nc, br: bufio.NewReaderSize(nc, leanReadBuf)}, nil
}

// put keeps c for a later request.
func (lc *leanClient) put(c *leanConn) {
	c.idleAt = time.Now()
	lc.mu.Lock()
	if !lc.closed && len(lc.idle) < leanMaxIdle {
		lc.idle = append(lc.idle, c)
		lc.mu.Unlock()
		return
	}
	lc.mu.Unlock()
	c.nc.Close()
}

// close closes the idle connections; those in use close when done.
func (lc *leanClient) close() {
	lc.mu.Lock()
	idle := lc.idle
	lc.idle, lc.closed = nil, true
	lc.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// Media types of an answer.
const (
	mediaOther = iota
	mediaJSON
	mediaSSE
)

// respHead is what gw reads of an answer's head.
type respHead struct {
	status  int
	media   int
	length  int64 // -1: not given
	chunked bool
	close   bool // the connection ends with this answer
}

var errHeaderTooLong = errors.New("an answer header line is longer than 8 KiB")

// readLine reads one line of the head (without its line end); it is valid
// until the next read of br.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errHeaderTooLong
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readHead reads an answer's status line and headers (1xx answers are
// skipped).
func readHead(br *bufio.Reader, h *respHead) error {
	for {
		*h = respHead{length: -1}
		line, err := readLine(br)
		if err != nil {
			return err
		}
		if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' {
			return errors.New("malformed HTTP status line")
		}
		h.close = line[7] == '0'
		st, ok := parseDecimal(line[9:12])
		if !ok || len(line) > 12 && line[12] != ' ' {
			return errors.New("malformed HTTP status line")
		}
		h.status = int(st)
		for {
			line, err := readLine(br)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				break
			}
			c := bytes.IndexByte(line, ':')
			if c <= 0 {
				return errors.New("malformed HTTP header line")
			}
			name, value := line[:c], bytes.TrimSpace(line[c+1:])
			switch {
			case bytes.EqualFold(name, hdrContentType):
				if i := bytes.IndexByte(value, ';'); i >= 0 {
					value = bytes.TrimSpace(value[:i])
				}
				switch {
				case bytes.EqualFold(value, strJSON):
					h.media = mediaJSON
				case bytes.EqualFold(value, strEventStream):
					h.media = mediaSSE
				}
			case bytes.EqualFold(name, hdrContentLength):
				n, ok := parseDecimal(value)
				if !ok || n > 1<<62 || h.length >= 0 && h.length != int64(n) {
					return errors.New("malformed Content-Length")
				}
				h.length = int64(n)
			case bytes.EqualFold(name, hdrTransferEncoding):
				if !bytes.EqualFold(value, strChunked) {
					return errors.New("unsupported Transfer-Encoding " + strconv.Quote(string(value)))
				}
				h.chunked = true
			case bytes.EqualFold(name, hdrContentEncoding):
				if !bytes.EqualFold(value, strIdentity) {
					return errors.New("unsupported Content-Encoding " + strconv.Quote(string(value)))
				}
			case bytes.EqualFold(name, hdrConnection):
				if hasToken(value, strClose) {
					h.close = true
				} else if hasToken(value, strKeepAlive) {
					h.close = false
				}
			}
		}
		if h.status >= 100 && h.status < 200 && h.status != 101 {
			continue // an interim answer: the real one follows
		}
		if h.chunked {
			h.length = -1
		} else if h.length < 0 && h.status != http.StatusNoContent && h.status != http.StatusNotModified {
			h.close = true // the body ends with the connection
		}
		return nil
	}
}

var (
	hdrContentType      = []byte("Content-Type")
	hdrContentLength    = []byte("Content-Length")
	hdrTransferEncoding = []byte("Transfer-Encoding")
	hdrContentEncoding  = []byte("Content-Encoding")
	hdrConnection       = []byte("Connection")
	strJSON             = []byte("application/json")
	strChunked          = []byte("chunked")
	strIdentity         = []byte("identity")
	strClose            = []byte("close")
	strKeepAlive        = []byte("keep-alive")
)

// hasToken reports whether the comma-separated list v holds tok.
func hasToken(v, tok []byte) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		if i < 0 {
			i = len(v)
		}
		if bytes.EqualFold(bytes.TrimSpace(v[:i]), tok) {
			return true
		}
		v = v[min(i+1, len(v)):]
	}
	return false
}

// bodyReader reads an answer's body: Content-Length, chunked, or to the
// connection's end.
type bodyReader struct {
	br      *bufio.Reader
	chunked bool
	left    int64 // bytes left (of the chunk when chunked); -1: to the end
	crlf    bool  // a chunk's data ended: its CRLF comes next
	done    bool  // the body was read whole
}

func (b *bodyReader) init(br *bufio.Reader, h *respHead) {
	*b = bodyReader{br: br, chunked: h.chunked, left: h.length}
	if h.chunked {
		b.left = 0
	}
	if h.status == http.StatusNoContent || h.status == http.StatusNotModified || !h.chunked && h.length == 0 {
		b.done = true
	}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.chunked && b.left == 0 {
		if b.crlf {
			line, err := readLine(b.br)
			if err != nil {
				return 0, err
			}
			if len(line) != 0 {
				return 0, errors.New("malformed chunked body")
			}
			b.crlf = false
		}
		line, err := readLine(b.br)
		if err != nil {
			return 0, err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 62)
		if err != nil {
			return 0, errors.New("malformed chunk size")
		}
		if n == 0 {
			for { // trailers
				line, err := readLine(b.br)
				if err != nil {
					return 0, err
				}
				if len(line) == 0 {
					break
				}
			}
			b.done = true
			return 0, io.EOF
		}
		b.left = int64(n)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
		if b.left == 0 {
			if b.chunked {
				b.crlf = true
			} else {
				b.done = true
			}
		}
	}
	if err == io.EOF {
		if b.left < 0 {
			b.done = true // the body ended with the connection
			return n, io.EOF
		}
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readAll appends the whole body to dst, at most max bytes.
func (b *bodyReader) readAll(dst []byte, max int) ([]byte, error) {
	if b.left > 0 && !b.chunked {
		if b.left > int64(max) {
			return dst, errAnswerTooLarge
		}
		dst = growTo(dst, len(dst)+int(b.left))
	}
	for {
		if len(dst) == cap(dst) {
			dst = growTo(dst, len(dst)+4<<10)
		}
		n, err := b.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > max {
			return dst, errAnswerTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// growTo returns b with capacity for n bytes.
func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// discard reads the rest of a short body so the connection can be reused;
// a long one (more than 64 KiB) is not read (the connection then closes).
func (b *bodyReader) discard() {
	var buf [2 << 10]byte
	for total := 0; !b.done && total < 64<<10; {
		n, err := b.Read(buf[:])
		total += n
		if err != nil {
			return
		}
	}
}
