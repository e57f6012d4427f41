package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/upstream"
	"gw/edge/gateway/vars"
)

// WebSocket proxying (enable_websocket) is a raw upgrade relay: the
// client's upgrade request goes to a node chosen by the route's balancer
// (health verdicts, retries on connection errors as for any request), the
// node's 101 answer goes back to the client verbatim, and from then on the
// bytes of both directions are copied as they come, without decoding
// frames, so extensions (permessage-deflate) and subprotocols are the two
// ends' business. The session ends when either side closes or fails, or
// when no byte moved in either direction for the upstream's read timeout
// (timeout.read, 60 s by default, as nginx's proxy_read_timeout).

const (
	// maxUpgradeHead bounds the node's answer to the upgrade request.
	maxUpgradeHead = 16 << 10
	// wsRelayBuf is the copy buffer of one direction.
	wsRelayBuf = 16 << 10
	// wsHijackGrace bounds the wait for fasthttp to hand over the client
	// connection; past it the upstream connection is closed.
	wsHijackGrace = 10 * time.Second
)

var (
	errUpgradeHead = errors.New("cannot read upgrade response: malformed status line or header")
	errUpgradeBig  = errors.New("cannot read upgrade response: header larger than 16 KiB")
)

var wsBufs = sync.Pool{New: func() any { b := make([]byte, wsRelayBuf); return &b }}

// wsUpgrade reports whether the request asks for a WebSocket upgrade.
func wsUpgrade(h *fasthttp.RequestHeader) bool {
	return hasToken(h.Peek("Upgrade"), "websocket")
}

// hasToken reports whether the comma-separated header value v lists tok
// (ASCII case-insensitive).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			t, v = v, nil
		}
		t = bytes.TrimSpace(t)
		if len(t) == len(tok) && bytes.EqualFold(t, []byte(tok)) {
			return true
		}
	}
	return false
}

// wsSkip are the request headers not copied to the upgrade request: the
// hop-by-hop ones (Connection and Upgrade are set again) and those the
// gateway sets itself.
var wsSkip = [][]byte{[]byte("Host"), []byte("Connection"), []byte("Upgrade"), []byte("Keep-Alive"), []byte("Proxy-Connection"),
	[]byte("Te"), []byte("Trailer"), []byte("Transfer-Encoding"), []byte("Proxy-Authorization"), []byte("Content-Length"),
	[]byte("X-Forwarded-For"), []byte("X-Forwarded-Proto"), []byte("X-Forwarded-Host")}

// appendUpgradeRequest serialises the upgrade request sent to a node.
func appendUpgradeRequest(dst []byte, ctx *fasthttp.RequestCtx, host, xff []byte) []byte {
	h := &ctx.Request.Header
	dst = append(dst, h.Method()...)
	dst = append(dst, ' ')
	dst = append(dst, ctx.Request.URI().RequestURI()...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nConnection: Upgrade\r\nUpgrade: "...)
	dst = append(dst, h.Peek("Upgrade")...)
	for k, v := range h.All() {
		skip := false
		for _, s := range wsSkip {
			if bytes.EqualFold(k, s) {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		dst = append(dst, "\r\n"...)
		dst = append(dst, k...)
		dst = append(dst, ": "...)
		dst = append(dst, v...)
	}
	dst = append(dst, "\r\nX-Forwarded-For: "...)
	dst = append(dst, xff...)
	if ctx.IsTLS() {
		dst = append(dst, "\r\nX-Forwarded-Proto: https"...)
	} else {
		dst = append(dst, "\r\nX-Forwarded-Proto: http"...)
	}
	dst = append(dst, "\r\nX-Forwarded-Host: "...)
	dst = append(dst, h.Host()...)
	return append(dst, "\r\n\r\n"...)
}

// ReadUpgradeResponse reads an HTTP/1.x response head (status line and
// headers, up to the blank line, at most max bytes) from br and returns
// it verbatim with its status code; the body, if any, stays in br.
func ReadUpgradeResponse(br *bufio.Reader, max int) (head []byte, status int, err error) {
	start := 0 // of the line being read, in head
	for {
		chunk, err := br.ReadSlice('\n')
		if len(head)+len(chunk) > max {
			return nil, 0, errUpgradeBig
		}
		head = append(head, chunk...)
		if err == bufio.ErrBufferFull {
			continue // the rest of a long line
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
		line := head[start:]
		if start == 0 {
			if status = statusOf(line); status == 0 {
				return nil, 0, errUpgradeHead
			}
		} else if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			return head, status, nil
		}
		start = len(head)
	}
}

// statusOf parses "HTTP/1.x NNN ..." (0 when malformed).
func statusOf(line []byte) int {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0
	}
	s := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0
		}
		s = s*10 + int(c-'0')
	}
	if s < 100 || (len(line) > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n') {
		return 0
	}
	return s
}

// serveWS proxies an upgrade request on a route with enable_websocket.
func (g *Gateway) serveWS(ctx *fasthttp.RequestCtx, rt *routeRT, p *upstream.Pool, rs *reqState) {
	rs.xff = append(rs.xff[:0], ctx.Request.Header.Peek("X-Forwarded-For")...)
	if len(rs.xff) > 0 {
		rs.xff = append(rs.xff, ", "...)
	}
	if ip := ctx.RemoteIP(); ip != nil {
		rs.xff = vars.AppendIP(rs.xff, ip)
	}
	key := p.HashKey(rs.key[:0], ctx, &rs.pc.Vars)
	if cap(key) > cap(rs.key) {
		rs.key = key[:0]
	}
	tried := &rs.tried
	*tried = upstream.Tried{}
	_, send, read := p.Timeouts()
	start := time.Now()
	var lastErr error
	for a := 0; a < p.Attempts(); a++ {
		i, err := p.Pick(key, tried)
		if err == upstream.ErrNoHealthy && a == 0 {
			fail(ctx, 503, body503)
			return
		}
		if err != nil {
			break
		}
		tried.Add(i)
		host := p.HostHeader(p.Nodes[i])
		if host == nil {
			host = ctx.Request.Header.Host()
		}
		var up net.Conn
		var br *bufio.Reader
		var head []byte
		var status int
		up, lastErr = p.Dial(i)
		if lastErr == nil {
			buf := appendUpgradeRequest(make([]byte, 0, 512), ctx, host, rs.xff)
			_ = up.SetWriteDeadline(time.Now().Add(send))
			if _, lastErr = up.Write(buf); lastErr == nil {
				_ = up.SetReadDeadline(time.Now().Add(read))
				br = bufio.NewReaderSize(up, 4096)
				head, status, lastErr = ReadUpgradeResponse(br, maxUpgradeHead)
			}
			if lastErr != nil {
				up.Close()
			}
		}
		if lastErr != nil {
			p.Report(i, 0, lastErr)
			g.log.Warn("upstream request failed", "route", rt.vc.RouteID, "node", p.Nodes[i].Addr, "attempt", a+1, "websocket", true, "error", lastErr.Error())
			if t := p.RetryTimeout(); t > 0 && time.Since(start) >= t {
				break
			}
			continue
		}
		p.Report(i, status, nil)
		if status != fasthttp.StatusSwitchingProtocols {
			// The node refused the upgrade: its answer is the client's.
			ctx.Response.Reset()
			err := ctx.Response.Read(bufio.NewReader(io.MultiReader(bytes.NewReader(head), br)))
			up.Close()
			if err != nil {
				g.log.Warn("upstream request failed", "route", rt.vc.RouteID, "node", p.Nodes[i].Addr, "websocket", true, "error", err.Error())
				fail(ctx, 502, body502)
			}
			return
		}
		_ = up.SetDeadline(time.Time{})
		p.Begin(i)
		s := &wsSession{up: up, head: head, idle: read, send: send}
		if n := br.Buffered(); n > 0 {
			// Frames the node sent right behind its 101.
			s.early, _ = br.Peek(n)
		}
		s.done = func() { p.End(i) }
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(s.run)
		time.AfterFunc(wsHijackGrace, s.abandon)
		return
	}
	if lastErr == nil {
		fail(ctx, 503, body503)
		return
	}
	if upstream.IsTimeout(lastErr) {
		fail(ctx, 504, body504)
		return
	}
	fail(ctx, 502, body502)
}

// wsSession is one upgraded connection pair.
type wsSession struct {
	up          net.Conn
	head, early []byte
	idle, send  time.Duration
	claimed     atomic.Bool
	last        atomic.Int64 // unix ns of the last byte moved
	done        func()
}

// abandon closes the upstream side if fasthttp never ran the hijack
// handler (the client connection broke first).
func (s *wsSession) abandon() {
	if s.claimed.CompareAndSwap(false, true) {
		s.up.Close()
		s.done()
	}
}

// run is the hijack handler: it forwards the 101 and relays both
// directions until one ends.
func (s *wsSession) run(c net.Conn) {
	if !s.claimed.CompareAndSwap(false, true) {
		return
	}
	defer s.done()
	_ = c.SetDeadline(time.Time{})
	_ = c.SetWriteDeadline(time.Now().Add(s.send))
	if _, err := c.Write(s.head); err != nil {
		s.up.Close()
		return
	}
	if len(s.early) > 0 {
		if _, err := c.Write(s.early); err != nil {
			s.up.Close()
			return
		}
	}
	Relay(c, s.up, s.idle, s.send)
}

// Relay copies bytes both ways between a and b until either side closes
// or fails, or nothing moved in either direction for idle (0: no idle
// bound); each write must finish within send (0: no bound). It closes
// both connections before returning.
func Relay(a, b net.Conn, idle, send time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		pump(b, a, idle, send, &last)
		a.Close()
		b.Close()
		close(done)
	}()
	pump(a, b, idle, send, &last)
	a.Close()
	b.Close()
	<-done
}

// pump copies src to dst until either fails; a read timeout with traffic
// in the other direction since is not idleness.
func pump(src, dst net.Conn, idle, send time.Duration, last *atomic.Int64) {
	bp := wsBufs.Get().(*[]byte)
	defer wsBufs.Put(bp)
	buf := *bp
	for {
		if idle > 0 {
			_ = src.SetReadDeadline(time.Now().Add(idle))
		}
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			last.Store(now.UnixNano())
			if send > 0 {
				_ = dst.SetWriteDeadline(now.Add(send))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			var ne net.Error
			if idle > 0 && errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			return
		}
	}
}
