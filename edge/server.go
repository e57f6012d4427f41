// Package edge is the caller-facing HTTP side of gw: fasthttp listeners, the
// request pipeline, one handler per endpoint, and the operations endpoints.
package edge

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin"
	"gw/edge/redact"
)

// Server is the main listener's handler set.
type Server struct {
	Ops   *Ops
	Proxy *Proxy
	// OpsOnMain serves the ops endpoints on the main listener too (when no
	// separate status listener is configured).
	OpsOnMain bool
	Log       *slog.Logger

	srv     *fasthttp.Server
	maxBody int64
}

// Limits are the caller-facing listener's protections against slow or
// hostile peers (docs/OPERATIONS.md).
type Limits struct {
	MaxBodyBytes int64
	// MaxUploadBytes bounds a multipart upload (upload.go), which streams
	// instead of being held; 0: multipart's default (512 MiB).
	MaxUploadBytes int64
	// HeaderTimeout bounds the wait for a request's complete headers, from
	// its first byte (or the connection's opening); a client that trickles
	// headers is closed after it.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading the request body once the headers are in.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this long.
	IdleTimeout time.Duration
	// MaxConnsPerIP caps concurrent connections from one peer address
	// (the TCP peer, not a forwarded address); 0: no cap.
	MaxConnsPerIP int
}

// NewServer builds the main server.
func NewServer(m *admin.Manager, proxy *Proxy, opsOnMain bool, lim Limits, log *slog.Logger) *Server {
	s := &Server{Ops: &Ops{Manager: m}, Proxy: proxy, OpsOnMain: opsOnMain, Log: log, maxBody: lim.MaxBodyBytes}
	if proxy != nil {
		proxy.MaxUploadBytes = lim.MaxUploadBytes
		s.Ops.Health = proxy.Health
		s.Ops.Usage = proxy.Usage
	}
	bodyCfg := fasthttp.RequestConfig{ReadTimeout: lim.BodyTimeout}
	// Fast path - a body of at most smallBody bytes is read under the
	// header deadline (seconds for kilobytes): only larger bodies move the
	// deadline, which saves a timer update per ordinary request.
	headerReceived := func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if n := h.ContentLength(); n >= 0 && n <= smallBody {
			return fasthttp.RequestConfig{}
		}
		return bodyCfg
	}
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		Name:                          "gw",
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		MaxRequestBodySize:            int(lim.MaxBodyBytes),
		// A relayed stream's batch (edge.flushAt) and its chunk framing fit
		// the write buffer: one batch, one write.
		WriteBufferSize: 8 << 10,
		// fasthttp's ReadTimeout runs from a request's first byte to the end
		// of its headers (and from accept for a new connection); once the
		// headers are in, HeaderReceived moves the deadline to the body's.
		ReadTimeout:    lim.HeaderTimeout,
		HeaderReceived: headerReceived,
		IdleTimeout:    lim.IdleTimeout,
		MaxConnsPerIP:  lim.MaxConnsPerIP,
		// Error lines never carry request content (the library would log
		// raw headers, credentials included); what is left still goes
		// through redaction.
		SecureErrorLogMessage: true,
		Logger:                serverLogger{log},
		// Bodies stream: an upload (upload.go) goes upstream in bounded
		// memory instead of being read whole before the handler runs.
		// Every other request is read whole, under MaxBodyBytes, at the
		// top of handle (readBody); fasthttp's own multipart parsing
		// (temp files, a map per form) is off.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		ErrorHandler:                 requestError,
	}
	return s
}

// smallBody is the largest request body read under the header deadline.
const smallBody = 64 << 10

// serverLogger routes the HTTP library's own log lines (connection errors,
// parse failures) through gw's logger, redacted.
type serverLogger struct{ log *slog.Logger }

func (l serverLogger) Printf(format string, args ...any) {
	if l.log == nil {
		return
	}
	l.log.Warn(redact.String(fmt.Sprintf(format, args...)), "source", "http_server")
}

// requestError answers requests fasthttp rejects before the handler runs,
// in the caller-facing envelope.
func requestError(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		WriteError(ctx, fasthttp.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			"the request body exceeds the gateway's limit (server.max_body_bytes)")
		ctx.SetConnectionClose()
		return
	}
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		WriteError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "invalid_request_error", "headers_too_large", "the request headers are too large")
	case errors.As(err, &ne) && ne.Timeout():
		WriteError(ctx, fasthttp.StatusRequestTimeout, "invalid_request_error", "request_timeout",
			"the request was not received in time (server.header_timeout, server.body_timeout)")
	default:
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request", "cannot parse the HTTP request")
	}
	ctx.SetConnectionClose()
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	if BadFraming(ctx.Request.Header.RawHeaders()) {
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request",
			"ambiguous request framing: Transfer-Encoding must be exactly chunked and cannot be combined with Content-Length")
		ctx.SetConnectionClose()
		return
	}
	if !isUploadPath(ctx.Path()) && !s.Proxy.streamsBody(ctx.Path()) && !readBody(ctx, s.maxBody) {
		return
	}
	if s.OpsOnMain && s.Ops.Handle(ctx) {
		return
	}
	if s.Proxy != nil && s.Proxy.Handle(ctx) {
		return
	}
	WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "unknown path "+truncate(string(ctx.Path()), 200))
}

var (
	lowerTE = []byte("transfer-encoding")
	lowerCL = []byte("content-length")
	chunked = []byte("chunked")
)

// BadFraming reports a request whose framing peers may read differently
// (RFC 9112 §6.1, §6.3, §5.2): Transfer-Encoding together with
// Content-Length, a Transfer-Encoding other than exactly chunked, or a
// folded header line (obs-fold). fasthttp frames the first kind by the
// chunked coding and would serve the bytes after it as the next request on
// the connection — the request-smuggling shape — and silently unfolds the
// last. Such requests are answered 400 and the connection closed. raw is
// the request's header block as received (fasthttp keeps it until the
// handler returns).
func BadFraming(raw []byte) bool {
	// One pass over the lines: a request header block is a few hundred
	// bytes, and only lines starting with t or c are looked at closely.
	te, cl := 0, false
	for len(raw) > 0 {
		if raw[0] == ' ' || raw[0] == '\t' {
			return true // obs-fold, or white space before the first field
		}
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			continue
		}
		switch line[0] | 0x20 {
		case 't':
			if v, ok := fieldValue(line, lowerTE); ok {
				te++
				if !bytes.EqualFold(v, chunked) {
					return true
				}
			}
		case 'c':
			if _, ok := fieldValue(line, lowerCL); ok {
				cl = true
			}
		}
	}
	return te > 1 || (te > 0 && cl)
}

// fieldValue returns the trimmed value of line when its field name is name
// (any case).
func fieldValue(line, name []byte) ([]byte, bool) {
	if len(line) <= len(name) || !bytes.EqualFold(line[:len(name)], name) {
		return nil, false
	}
	rest := bytes.TrimLeft(line[len(name):], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return nil, false
	}
	return bytes.TrimSpace(rest[1:]), true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Serve serves connections from ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting and waits for in-flight requests up to the deadline.
func (s *Server) Shutdown(grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Shutdown() }()
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		return errShutdownTimeout
	}
}

type edgeError string

func (e edgeError) Error() string { return string(e) }

const errShutdownTimeout = edgeError("edge: shutdown grace period elapsed with requests still in flight")

// OpsServer serves only the ops endpoints (the separate status listener),
// with the same header and idle timeouts as the main listener.
func OpsServer(m *admin.Manager, health *Health, lim Limits, log *slog.Logger) *fasthttp.Server {
	return OpsServerFor(&Ops{Manager: m, Health: health}, lim, log)
}

// OpsServerFor is OpsServer for a filled-in Ops.
func OpsServerFor(o *Ops, lim Limits, log *slog.Logger) *fasthttp.Server {
	return &fasthttp.Server{
		Name: "gw-status",
		Handler: func(ctx *fasthttp.RequestCtx) {
			if !o.Handle(ctx) {
				WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "unknown path")
			}
		},
		NoDefaultServerHeader: true,
		CloseOnShutdown:       true,
		ReadTimeout:           lim.HeaderTimeout,
		IdleTimeout:           lim.IdleTimeout,
		MaxConnsPerIP:         lim.MaxConnsPerIP,
		SecureErrorLogMessage: true,
		Logger:                serverLogger{log},
	}
}
