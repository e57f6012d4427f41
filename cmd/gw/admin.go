package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/api"
	"gw/admin/gateway"
	"gw/admin/startup"
	"gw/admin/store"
)

// adminRuntime is the management API: its store, the runner compiling the
// store into the gateway snapshot, and its HTTP server.
type adminRuntime struct {
	store  store.Store
	runner *gateway.Runner
	// Holder is the compiled gateway snapshot the general gateway's data
	// plane reads (not built yet: nothing serves these routes).
	Holder *gateway.Holder
	srv    *fasthttp.Server
	cancel context.CancelFunc
}

// openAdmin opens the store, compiles what it holds and builds the API
// server; it binds nothing.
func openAdmin(cfg startup.Config, log *slog.Logger) (*adminRuntime, error) {
	ctx, cancel := context.WithCancel(context.Background())
	openCtx, openCancel := context.WithTimeout(ctx, 10*time.Second)
	defer openCancel()
	var eps []string
	if cfg.AdminEtcdEndpoints != "" {
		eps = []string{cfg.AdminEtcdEndpoints}
	}
	st, err := store.Open(openCtx, store.Config{Kind: cfg.AdminStore, DataDir: cfg.AdminDataDir, Endpoints: eps, Prefix: cfg.AdminEtcdPrefix})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("cannot open the admin store: %w", err)
	}
	h := &gateway.Holder{}
	r := gateway.NewRunner(st, "", h, log)
	if err := r.Start(ctx); err != nil {
		cancel()
		st.Close()
		return nil, err
	}
	keyPrefix := "/gw"
	if cfg.AdminStore == store.KindEtcd {
		keyPrefix = strings.TrimSuffix(cfg.AdminEtcdPrefix, "/")
	}
	a, err := api.New(api.Config{Store: st, Runner: r, Key: cfg.AdminKey, KeyPrefix: keyPrefix, Log: log, Built: builtPlugin, CheckPlugin: checkPlugin})
	if err != nil {
		cancel()
		r.Stop()
		st.Close()
		return nil, err
	}
	snap := h.Load()
	log.Info("admin store loaded", "store", cfg.AdminStore, "revision", snap.Rev, "routes", len(snap.RouteByID),
		"upstreams", len(snap.Upstreams), "consumers", len(snap.Consumers), "ssls", len(snap.SSLs), "not_compiled", len(snap.Errors))
	srv := &fasthttp.Server{
		Handler:            a.Handler,
		Name:               "gw",
		MaxRequestBodySize: 8 << 20, // a route script is at most 100 KiB, a certificate 64 KiB
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        2 * time.Minute,
		Logger:             fasthttpLogger{log},
	}
	return &adminRuntime{store: st, runner: r, Holder: h, srv: srv, cancel: cancel}, nil
}

// serve serves the API on ln until Shutdown.
func (a *adminRuntime) serve(ln net.Listener) error { return a.srv.Serve(ln) }

// close stops the server, the watch and the store.
func (a *adminRuntime) close() {
	_ = a.srv.Shutdown()
	a.cancel()
	a.runner.Stop()
	a.store.Close()
}

// fasthttpLogger sends the library's connection errors to the JSON log.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Warn("admin listener", "error", fmt.Sprintf(format, args...))
}
