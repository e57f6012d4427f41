package edge

import (
	"errors"
	"io"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// The listener streams request bodies (server.go: StreamRequestBody) so
// that an upload never sits whole in memory. Every other request is read
// whole here, before any handler runs, with the semantics the listener had
// when it buffered bodies itself: a Content-Length over
// server.max_body_bytes is 413 before the body is read, a chunked body 413
// as soon as it crosses the limit, and both close the connection (the
// rest of the body is never read, so it must not be taken for the next
// request).

// maxPooledBody caps the read buffers kept in readBufPool.
const maxPooledBody = 1 << 20

var readBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// isUploadPath reports whether path is a multipart upload endpoint, whose
// body streams through (upload.go) instead of being read here.
func isUploadPath(path []byte) bool {
	return string(path) == pathTranscriptions || string(path) == pathTranslations || string(path) == pathImageEdits
}

// readBody makes the request body available whole through
// ctx.Request.Body(), or answers 413/408/400 and closes the connection.
// It reads the stream itself into a pooled buffer and hands the bytes to
// the request (one copy): Request.Body() on a streamed body would do the
// same read, but fasthttp (v1.78) logs a warning for every such call.
func readBody(ctx *fasthttp.RequestCtx, limit int64) bool {
	rs := ctx.RequestBodyStream()
	if rs == nil {
		return true // no body, or already in memory
	}
	cl := ctx.Request.Header.ContentLength()
	if limit > 0 && int64(cl) > limit {
		bodyTooLarge(ctx)
		return false
	}
	bp := readBufPool.Get().(*[]byte)
	b := (*bp)[:0]
	var err error
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		var n int
		n, err = rs.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if limit > 0 && int64(len(b)) > limit {
			err = fasthttp.ErrBodyTooLarge
			break
		}
		if err != nil {
			break
		}
	}
	ok := errors.Is(err, io.EOF) && (cl < 0 || len(b) == cl)
	if ok {
		ctx.Request.SetBody(b)
	}
	n := len(b)
	if cap(b) <= maxPooledBody {
		*bp = b[:0]
		readBufPool.Put(bp)
	}
	if ok {
		return true
	}
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		bodyTooLarge(ctx)
		return false
	case errors.As(err, &ne) && ne.Timeout():
		requestTimeout(ctx)
	case cl >= 0 && n < cl && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request",
			"the request body ended before its Content-Length")
	default:
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request", "cannot read the request body")
	}
	ctx.SetConnectionClose()
	return false
}

func requestTimeout(ctx *fasthttp.RequestCtx) {
	WriteError(ctx, fasthttp.StatusRequestTimeout, "invalid_request_error", "request_timeout",
		"the request was not received in time (server.header_timeout, server.body_timeout)")
}

// lingerBytes bounds the body a refused request still has read and dropped.
const lingerBytes = 1 << 20

func bodyTooLarge(ctx *fasthttp.RequestCtx) {
	// Read on (and discard) what the caller is still sending, up to
	// lingerBytes: closing a socket with unread data makes the kernel send
	// a reset, which can destroy the 413 before the caller reads it
	// (nginx's lingering close). A larger body is cut by the reset.
	if rs := ctx.RequestBodyStream(); rs != nil {
		_, _ = io.CopyN(io.Discard, rs, lingerBytes)
	}
	WriteError(ctx, fasthttp.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"the request body exceeds the gateway's limit (server.max_body_bytes)")
	ctx.SetConnectionClose()
}
