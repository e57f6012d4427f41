package mcp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/sse"
)

// The lean path's transport (lean.go): its POSTs go out through
// adapters/upstream, the client of gw's providers (fasthttp; keep-alive
// connections per target, shared across reloads; one resend on a stale
// keep-alive connection). This file maps a server entry onto it and ties an
// exchange to its call's context.

// leanDrainWait is how long the end of an SSE answer is awaited after the
// answer, so that its connection can be reused.
const leanDrainWait = 100 * time.Millisecond

// errLeanUnavailable: the lean path cannot reach the server (the request
// did not go out: dial or TLS failure, no free connection); the call takes
// the SDK path.
var errLeanUnavailable = errors.New("mcp: the lean path cannot reach the server")

// leanClients holds a Handler's lean clients by server name; a reloaded
// server entry gets a new client (its connections are the pool's, and stay).
type leanClients struct {
	mu  sync.Mutex
	by  map[string]*leanClient
	own *upstream.Pool // the handler's own pool (see pool)
}

// get returns the lean client of srv, nil when srv's calls take the SDK
// path (see newLeanClient). shared is the process's pool (nil: none).
func (l *leanClients) get(srv *resources.MCPServer, rt http.RoundTripper, shared *upstream.Pool) *leanClient {
	l.mu.Lock()
	lc := l.by[srv.Name]
	if lc == nil || lc.srv != srv {
		lc = newLeanClient(srv, rt, func(ownRoots bool) *upstream.Pool { return l.pool(shared, ownRoots) })
		if l.by == nil {
			l.by = make(map[string]*leanClient)
		}
		l.by[srv.Name] = lc
	}
	l.mu.Unlock()
	if !lc.ok {
		return nil
	}
	return lc
}

// pool is the pool a lean client's connections come from: the process's,
// unless there is none or the transport trusts roots of its own, which a
// pool's clients cannot be told apart by (their key names a CA by its PEM,
// which a *x509.CertPool does not give); the handler's own pool then. l.mu
// held.
func (l *leanClients) pool(shared *upstream.Pool, ownRoots bool) *upstream.Pool {
	if shared != nil && !ownRoots {
		return shared
	}
	if l.own == nil {
		l.own = upstream.NewPool(upstream.Options{})
	}
	return l.own
}

// close forgets the clients and closes the idle connections of the
// handler's own pool (the process's pool is not the handler's to close).
func (l *leanClients) close() {
	l.mu.Lock()
	l.by = nil
	own := l.own
	l.mu.Unlock()
	if own != nil {
		own.CloseIdleConnections()
	}
}

// leanClient is the lean path's client of one server entry.
type leanClient struct {
	srv *resources.MCPServer
	ok  bool // false: every call takes the SDK path
	up  *upstream.Client
	uri *fasthttp.URI // srv.URL, parsed once (read only: shared by the requests)
	// hdrs are the static headers (canonical name, value): the MCP content
	// types, the server's headers and credential.
	hdrs             [][2][]byte
	session, version bool // gw sends Mcp-Session-Id / MCP-Protocol-Version (no configured header replaces it)
}

// newLeanClient prepares srv's lean client. It is not usable (ok false)
// when the SDK path must carry the calls: a transport other than
// net/http's (a custom RoundTripper, a custom dialer) or a proxy for the
// URL from the environment, TLS settings the upstream pool cannot
// reproduce (leanTLS), a URL with user info or another scheme than http and
// https, header values that cannot be sent as they are. pool gives the pool
// to take the connections from.
func newLeanClient(srv *resources.MCPServer, rt http.RoundTripper, pool func(ownRoots bool) *upstream.Pool) *leanClient {
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
	target := upstream.Target{BaseURL: srv.URL}
	if u.Scheme == "https" {
		var ok bool
		if target.TLS, ok = leanTLS(t.TLSClientConfig, u.Hostname()); !ok {
			return lc
		}
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
	for _, h := range hdrs {
		if !headerSafe(h[0]) || !headerSafe(h[1]) {
			return lc
		}
		lc.hdrs = append(lc.hdrs, [2][]byte{[]byte(h[0]), []byte(h[1])})
	}
	lc.uri = new(fasthttp.URI)
	if err := lc.uri.Parse(nil, []byte(srv.URL)); err != nil {
		return lc
	}
	if lc.up, err = pool(target.TLS.CAPool != nil).Client(target); err != nil {
		return lc
	}
	lc.ok = true
	return lc
}

// leanTLS maps the transport's TLS settings (nil: the system roots) onto
// an upstream target's. false: settings the pool's clients do not have
// (client certificates, verification of its own, another server name,
// cipher, curve or version limits, a key log): the SDK path then. A lower
// minimum version than TLS 1.2 is not one: a server that needs it fails
// the lean path's handshake, before anything is sent.
func leanTLS(c *tls.Config, host string) (upstream.TLS, bool) {
	if c == nil {
		return upstream.TLS{Verify: true}, true
	}
	if len(c.Certificates) > 0 || c.GetClientCertificate != nil || c.VerifyPeerCertificate != nil || c.VerifyConnection != nil ||
		c.ServerName != "" && !strings.EqualFold(c.ServerName, host) || c.CipherSuites != nil || c.CurvePreferences != nil ||
		c.MaxVersion != 0 || c.MinVersion > tls.VersionTLS12 || c.KeyLogWriter != nil || c.EncryptedClientHelloConfigList != nil {
		return upstream.TLS{}, false
	}
	return upstream.TLS{CAPool: c.RootCAs, Verify: !c.InsecureSkipVerify}, true
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

// request returns the POST of a message on the upstream session sid at
// protocol version pv ("" for none); release with fasthttp.ReleaseRequest.
// The body is DoStreamWatched's.
func (lc *leanClient) request(sid, pv string) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetURI(lc.uri)
	for _, h := range lc.hdrs {
		req.Header.SetCanonical(h[0], h[1])
	}
	if sid != "" && lc.session {
		req.Header.Set(hdrSession, sid)
	}
	if pv != "" && lc.version {
		req.Header.Set("Mcp-Protocol-Version", pv)
	}
	return req
}

// Media types of an answer.
const (
	mediaOther = iota
	mediaJSON
	mediaSSE
)

var (
	strJSON     = []byte("application/json")
	strIdentity = []byte("identity")
)

// mediaOf is the media type of a Content-Type value.
func mediaOf(ct []byte) int {
	if sse.IsEventStream(ct) {
		return mediaSSE
	}
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	if bytes.EqualFold(bytes.TrimSpace(ct), strJSON) {
		return mediaJSON
	}
	return mediaOther
}

// exchange is one request of the lean path and its answer.
type exchange struct {
	lc    *leanClient
	resp  *fasthttp.Response // nil once released
	w     *leanWatch
	stop  func() bool // unregisters w.end
	media int
	tries int // connections the request went out on (0: it did not go out)
}

// send POSTs body in the session sid at protocol version pv and reads the
// answer's head; release the exchange when done. ctx bounds it: its
// deadline is the connection's, and its end aborts the connection
// (leanWatch). A request that did not go out (dial or TLS failure, no free
// connection) is errLeanUnavailable.
func (x *exchange) send(ctx context.Context, lc *leanClient, sid, pv string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), 1) // 0 would be none
	}
	x.lc = lc
	w := leanWatches.Get().(*leanWatch)
	x.w, x.stop = w, context.AfterFunc(ctx, w.endFn)
	req := lc.request(sid, pv)
	x.resp = fasthttp.AcquireResponse()
	err := lc.up.DoStreamWatched(req, body, x.resp, timeout, w.watchFn)
	fasthttp.ReleaseRequest(req)
	x.tries = w.tries // written by watch on this goroutine
	if x.tries > 1 {
		leanStaleRetries.Inc() // upstream.Client resent it on a new connection
	}
	if err != nil {
		x.release()
		if err := ended(ctx, err); err != nil {
			return err
		}
		if x.tries == 0 {
			return errors.Join(errLeanUnavailable, err)
		}
		return errors.New("the upstream connection failed: " + upstream.Describe(err))
	}
	if ce := x.resp.Header.ContentEncoding(); len(ce) > 0 && !bytes.EqualFold(ce, strIdentity) {
		return errors.New("unsupported Content-Encoding " + strconv.Quote(string(ce)))
	}
	x.media = mediaOf(x.resp.Header.ContentType())
	return nil
}

// ended returns ctx's error when it ended, also when err is the
// connection's deadline, ctx's own, which the client may meet a moment
// before ctx's timer fires.
func ended(ctx context.Context, err error) error {
	if ctx.Err() == nil && upstream.IsTimeout(err) {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			<-ctx.Done()
		}
	}
	return ctx.Err()
}

// status is the answer's HTTP status.
func (x *exchange) status() int { return x.resp.StatusCode() }

// body is the answer's body as it arrives.
func (x *exchange) body() io.Reader {
	if bs := x.resp.BodyStream(); bs != nil {
		return bs
	}
	return http.NoBody // an answer without a body (204)
}

// release ends the exchange: the connection goes back to the pool when its
// answer was read whole and nothing aborted it, else it closes.
func (x *exchange) release() {
	w := x.w
	if w == nil {
		return
	}
	x.w = nil
	stopped := x.stop()
	w.mu.Lock()
	w.done = true // the connection is no longer the exchange's to abort
	aborted := w.ended
	w.mu.Unlock()
	if x.resp != nil {
		if aborted {
			x.resp.SetConnectionClose() // closed, even if its body was read whole
		}
		upstream.CloseStream(x.resp)
		fasthttp.ReleaseResponse(x.resp)
		x.resp = nil
	}
	if stopped { // w.end never runs: w can serve another exchange
		w.conn, w.tries, w.ended, w.done = nil, 0, false, false
		leanWatches.Put(w)
	}
}

// leanWatch ends an exchange whose call's context ended (the caller's
// notifications/cancelled, the server's timeout_ms): it aborts the
// exchange's connection, which ends a blocked write or read, the wait for
// the answer's head included, and tells the server.
type leanWatch struct {
	mu    sync.Mutex
	conn  *upstream.Conn // the connection the request went out on
	tries int            // how many it went out on (2: resent after a stale one)
	ended bool           // the context ended
	done  bool           // the exchange is over
	// Bound once, so that an exchange does not allocate them.
	watchFn func(*upstream.Conn) error
	endFn   func()
}

var leanWatches = sync.Pool{New: func() any {
	w := new(leanWatch)
	w.watchFn, w.endFn = w.watch, w.end
	return w
}}

var errCallEnded = errors.New("the call ended before its request went out")

// watch is DoStreamWatched's: conn carries the request now.
func (w *leanWatch) watch(conn *upstream.Conn) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return errCallEnded
	}
	w.conn = conn
	w.tries++
	return nil
}

// end runs when the exchange's context ends.
func (w *leanWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	if !w.done && w.conn != nil {
		w.conn.Abort()
	}
}

// readBody appends the body r of an answer whose Content-Length is length
// (-1, -2: not given) to dst, at most max bytes.
func readBody(r io.Reader, length int, dst []byte, max int) ([]byte, error) {
	if length > max {
		return dst, errAnswerTooLarge
	}
	if length > 0 {
		dst = slices.Grow(dst, length)
	}
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, 4<<10)
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
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

// readAll is readBody of x's answer.
func (x *exchange) readAll(dst []byte, max int) ([]byte, error) {
	return readBody(x.body(), x.resp.Header.ContentLength(), dst, max)
}

// discard reads the rest of a short body so the connection can be reused;
// a long one (more than 64 KiB) is not read (the connection then closes).
func (x *exchange) discard() {
	var buf [2 << 10]byte
	r := x.body()
	for total := 0; total < 64<<10; {
		n, err := r.Read(buf[:])
		total += n
		if err != nil {
			return
		}
	}
}
