// Package edge is the caller-facing HTTP side of gw: fasthttp listeners, the
// request pipeline, one handler per endpoint, and the operations endpoints.
package edge

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin"
)

// Server is the main listener's handler set.
type Server struct {
	Ops   *Ops
	Proxy *Proxy
	// OpsOnMain serves the ops endpoints on the main listener too (when no
	// separate status listener is configured).
	OpsOnMain bool
	Log       *slog.Logger

	srv *fasthttp.Server
}

// NewServer builds the main server.
func NewServer(m *admin.Manager, proxy *Proxy, opsOnMain bool, maxBody int64, log *slog.Logger) *Server {
	s := &Server{Ops: &Ops{Manager: m}, Proxy: proxy, OpsOnMain: opsOnMain, Log: log}
	if proxy != nil {
		s.Ops.Health = proxy.Health
	}
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		Name:                          "gw",
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		MaxRequestBodySize:            int(maxBody),
		ReadTimeout:                   5 * time.Minute,
		IdleTimeout:                   2 * time.Minute,
		StreamRequestBody:             false,
		CloseOnShutdown:               true,
		ErrorHandler:                  requestError,
	}
	return s
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
	WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request", "cannot parse the HTTP request")
	ctx.SetConnectionClose()
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	if s.OpsOnMain && s.Ops.Handle(ctx) {
		return
	}
	if s.Proxy != nil && s.Proxy.Handle(ctx) {
		return
	}
	WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "unknown path "+truncate(string(ctx.Path()), 200))
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

// OpsServer serves only the ops endpoints (the separate status listener).
func OpsServer(m *admin.Manager, health *Health) *fasthttp.Server {
	o := &Ops{Manager: m, Health: health}
	return &fasthttp.Server{
		Name: "gw-status",
		Handler: func(ctx *fasthttp.RequestCtx) {
			if !o.Handle(ctx) {
				WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "unknown path")
			}
		},
		NoDefaultServerHeader: true,
		CloseOnShutdown:       true,
	}
}
