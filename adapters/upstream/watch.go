package upstream

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// DoStreamWatched is DoStream for a caller that may have to end the exchange
// from another goroutine at any point: while the request is written, while
// the upstream has not answered yet (DoStream's wait for the head cannot be
// interrupted otherwise: fasthttp has no context and does not tell which
// connection a request took), or while the body streams. watch gets each
// attempt's connection on the calling goroutine before the request's body is
// written; Conn.Abort (safe from any goroutine) closes it: a blocked write or
// read fails at once, the upstream sees the connection end, and the request
// is not resent. watch returning an error abandons the attempt with that
// error, and it is not resent either.
//
// The request body is body (req must not carry one): the client writes it
// itself, so that the resend on a stale keep-alive connection can write it
// again (watch then sees the new connection). A connection handed to watch is
// the caller's to abort until DoStreamWatched returns an error or, after it
// succeeded, until CloseStream; then the pool may give it to another request.
// An answer without a body (1xx only, 204, 304) has its connection back in
// the pool already when DoStreamWatched returns: an abort in that moment acts
// like a server closing an idle connection (the request that gets it next
// fails, and is resent unless the connection was aborted for it too). Dialing and waiting for a free connection cannot be interrupted;
// headerTimeout and the pool's DialTimeout bound them.
func (c *Client) DoStreamWatched(req *fasthttp.Request, body []byte, resp *fasthttp.Response, headerTimeout time.Duration, watch func(*Conn) error) error {
	resp.StreamBody = true
	b := watchedBodies.Get().(*watchedBody)
	b.body, b.resp, b.watch = body, resp, watch
	err := c.do(req, resp, headerTimeout, b)
	req.ResetBody() // req no longer holds b (a dial that failed leaves it set)
	*b = watchedBody{}
	watchedBodies.Put(b)
	return err
}

var watchedBodies = sync.Pool{New: func() any { return new(watchedBody) }}

// errNotWatchable: the connection is not one of this package's dialer (it
// cannot be: every Client dials with it).
var errNotWatchable = errors.New("upstream: the request's connection cannot be watched")

// watchedBody is a DoStreamWatched request's body stream. fasthttp writes a
// request body once it has chosen the connection and recorded it in resp
// (Response.ParseNetConn), on the goroutine that called Do: resp names the
// connection when the body is first read, and no other goroutine touches
// resp meanwhile.
type watchedBody struct {
	body    []byte
	off     int
	resp    *fasthttp.Response
	watch   func(*Conn) error
	started bool // watch has the attempt's connection
	refused bool // watch refused the attempt
}

func (b *watchedBody) start() error {
	if b.started {
		return nil
	}
	b.started = true
	a, ok := b.resp.RemoteAddr().(*ConnAddr)
	if !ok || a.conn == nil {
		b.refused = true
		return errNotWatchable
	}
	if err := b.watch(a.conn); err != nil {
		b.refused = true
		return err
	}
	return nil
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if err := b.start(); err != nil {
		return 0, err
	}
	if b.off >= len(b.body) {
		return 0, io.EOF
	}
	n := copy(p, b.body[b.off:])
	b.off += n
	return n, nil
}

// WriteTo writes the body in one write (fasthttp.BodyWriterTo).
func (b *watchedBody) WriteTo(w io.Writer) (int64, error) {
	if err := b.start(); err != nil {
		return 0, err
	}
	n, err := w.Write(b.body[b.off:])
	b.off += n
	return int64(n), err
}

// SupportsBodyWriteTo makes fasthttp write the body with WriteTo.
func (b *watchedBody) SupportsBodyWriteTo() bool { return true }

// Abort closes c from any goroutine, for DoStreamWatched's caller: the
// request on it fails and is not resent.
func (c *Conn) Abort() {
	c.aborted.Store(true)
	_ = c.Conn.Close()
}
