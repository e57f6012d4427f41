package edge

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
)

// The binary relay: an answer that is not JSON or SSE (speech audio) goes
// to the caller as the upstream sends it, read by read, in bounded memory
// (one pooled buffer per relay), with the upstream's status and
// Content-Type. The commit point is the upstream's 2xx status: failures
// before it are retried and failed over like any attempt; after it, a cut
// or stalled upstream ends the caller's body early (recorded 502 / 504).

var methodGet = []byte("GET")

// binaryBufSize is the relay's read size: a few network packets.
const binaryBufSize = 32 << 10

// binary dispatches a call whose answer is relayed as bytes.
func (p *Proxy) binary(ctx *fasthttp.RequestCtx, c *call) {
	var fail lastFailure
	it := p.newAttemptIter(c, ctx)
	for t, up := it.next(&fail); t != nil; t, up = it.next(&fail) {
		for try := 0; try <= t.Retries; try++ {
			req, client := p.buildRequest(ctx, c, t, up)
			if req == nil {
				if c.credentialFailed(t, &fail) {
					break // no credential for this target: the next one
				}
				return
			}
			resp := fasthttp.AcquireResponse()
			sent := time.Now()
			c.holdBusy(t.Plan.State)
			err := client.DoStream(req, resp, t.StreamTimeout)
			fasthttp.ReleaseRequest(req)
			c.upstreamDur += time.Since(sent)
			if err != nil {
				c.dropBusy()
				fail = p.transportFailure(c, t, err)
				c.noteFailure(&fail)
				c.observe(t, &fail, 0)
				fasthttp.ReleaseResponse(resp)
				continue
			}
			status := resp.StatusCode()
			if status >= 300 {
				c.dropBusy()
				body, _ := io.ReadAll(io.LimitReader(resp.BodyStream(), maxErrorBody))
				ctype := append([]byte(nil), resp.Header.ContentType()...)
				retryAfter := string(resp.Header.Peek("Retry-After"))
				backoff := appendBackoff(nil, &resp.Header)
				upstream.CloseStream(resp)
				fasthttp.ReleaseResponse(resp)
				if !retryable(c.plan, status) {
					c.observe(t, &lastFailure{kind: upstream.KindStatus, status: status, retryAfter: retryAfter}, 0)
					relayError(ctx, c.surf, status, body, ctype, backoff)
					c.errClass = "upstream_status"
					return
				}
				fail = lastFailure{kind: upstream.KindStatus, status: status, body: body, ctype: ctype, retryAfter: retryAfter, backoff: backoff}
				c.noteFailure(&fail)
				c.observe(t, &fail, 0)
				continue
			}
			c.upTTFT = time.Since(sent)
			c.observe(t, nil, c.upTTFT)
			p.commitBinary(ctx, c, resp, t.StreamTimeout)
			return
		}
	}
	p.answerFailed(ctx, c, &it, &fail)
}

// binaryRelay is the body of a committed binary answer. Pooled; like
// relayState it belongs to fasthttp's response from commitBinary until
// CloseWithError, which records the call and releases both.
type binaryRelay struct {
	p        *Proxy
	c        *call
	resp     *fasthttp.Response
	gap      time.Duration
	reqBytes int
	wrote    bool
	get      bool // a GET (video download), for the access log
	buf      []byte
}

var binaryPool = sync.Pool{New: func() any { return &binaryRelay{buf: make([]byte, binaryBufSize)} }}

// commitBinary starts relaying resp's body to the caller with its status
// and content type.
func (p *Proxy) commitBinary(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response, gap time.Duration) {
	ctx.SetStatusCode(resp.StatusCode())
	if ct := resp.Header.ContentType(); len(ct) > 0 {
		ctx.Response.Header.SetContentTypeBytes(ct)
	} else {
		ctx.SetContentType("application/octet-stream")
	}
	ctx.Response.Header.SetBytesKV(hdrCacheCtl, valNoCache)
	setOverhead(ctx, c)
	c.ttfb = time.Since(c.start)
	b := binaryPool.Get().(*binaryRelay)
	b.p, b.c, b.resp, b.gap, b.reqBytes, b.wrote, b.get = p, c, resp, gap, requestBytes(ctx, c), false, ctx.IsGet()
	c.status = resp.StatusCode()
	c.committed = true
	ctx.Response.SetBodyStream(b, -1)
}

// SupportsBodyWriteTo tells fasthttp to write the body through WriteTo.
func (b *binaryRelay) SupportsBodyWriteTo() bool { return true }

// Read is never used (fasthttp prefers WriteTo); it ends the body at once.
func (b *binaryRelay) Read([]byte) (int, error) { return 0, io.EOF }

// WriteTo copies the upstream body to w read by read (each Write is one
// flushed chunk), with the stream gap as the deadline of every read. It
// sets the status to record: the upstream's, 504 when the upstream
// stalled, 502 when it cut the body, 499 when the caller left.
func (b *binaryRelay) WriteTo(w io.Writer) (int64, error) {
	b.wrote = true
	c := b.c
	body := b.resp.BodyStream()
	var n int64
	for {
		if b.gap > 0 {
			upstream.SetReadDeadline(b.resp, time.Now().Add(b.gap))
		}
		k, err := body.Read(b.buf)
		if k > 0 {
			if _, werr := w.Write(b.buf[:k]); werr != nil {
				c.status, c.errClass = 499, "client_gone"
				return n, nil
			}
			n += int64(k)
			c.respBytes += k
		}
		if err == nil {
			continue
		}
		switch {
		case errors.Is(err, io.EOF) && !(b.resp.Header.ContentLength() == -1 && upstream.PeerClosed(b.resp)):
		case upstream.IsTimeout(err):
			c.status, c.errClass = fasthttp.StatusGatewayTimeout, "stream_timeout"
		default:
			c.status, c.errClass = fasthttp.StatusBadGateway, "upstream_stream_error"
		}
		return n, nil
	}
}

// CloseWithError is fasthttp's last call on the body: it records the call
// and releases the relay and the upstream response (an unfinished body
// closes the upstream connection, which cancels the upstream call).
func (b *binaryRelay) CloseWithError(err error) error {
	c := b.c
	if !b.wrote || (err != nil && c.status < 300) {
		c.status, c.errClass = 499, "client_gone"
	}
	p, reqBytes, method := b.p, b.reqBytes, methodPost
	if b.get {
		method = methodGet
	}
	upstream.CloseStream(b.resp)
	fasthttp.ReleaseResponse(b.resp)
	b.p, b.c, b.resp = nil, nil, nil
	binaryPool.Put(b)
	c.dropBusy()
	p.record(c, method, []byte(c.surf.path), reqBytes, false)
	releaseCall(c)
	return nil
}
