// Package edge is the caller-facing HTTP side of gw: fasthttp listeners, the
// request pipeline, one handler per endpoint, and the operations endpoints.
package edge

import (
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin"
)

// Server is the main listener's handler set.
type Server struct {
	Ops *Ops
	// OpsOnMain serves the ops endpoints on the main listener too (when no
	// separate status listener is configured).
	OpsOnMain bool
	Log       *slog.Logger

	srv *fasthttp.Server
}

// NewServer builds the main server.
func NewServer(m *admin.Manager, opsOnMain bool, maxBody int64, log *slog.Logger) *Server {
	s := &Server{Ops: &Ops{Manager: m}, OpsOnMain: opsOnMain, Log: log}
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
	}
	return s
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	if s.OpsOnMain && s.Ops.Handle(ctx) {
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
func OpsServer(m *admin.Manager) *fasthttp.Server {
	o := &Ops{Manager: m}
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
