package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/admin/startup"
	"gw/balancer"
	"gw/edge"
	"gw/edge/a2a"
	"gw/edge/authn"
	"gw/edge/cache"
	"gw/edge/embed"
	"gw/edge/guard/kinds"
	"gw/edge/mcp"
	"gw/edge/passthrough"
	"gw/edge/rawsock"
	gwusage "gw/edge/usage"
	"gw/edge/usage/controlplane"
	"gw/edge/usage/exporters"
	"gw/limiter"
	"gw/limiter/circuit"
)

// loadStartup builds the startup config: defaults < file < GW_* env < flags.
func loadStartup(args []string, stderr io.Writer) (startup.Config, int) {
	cfg := startup.Defaults()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", os.Getenv("GW_CONFIG"), "startup settings YAML file (env GW_CONFIG)")
	vals := map[string]*string{}
	for _, s := range startup.Settings {
		vals[s.Flag] = fs.String(s.Flag, "", s.Help+" (env "+s.Env+", file "+s.Path+", default "+s.Get(&cfg)+")")
	}
	if err := fs.Parse(args); err != nil {
		return cfg, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gw serve: unexpected argument %q\n", fs.Arg(0))
		return cfg, 2
	}
	if *configPath != "" {
		if err := startup.LoadFile(&cfg, *configPath); err != nil {
			fmt.Fprintln(stderr, "gw:", err)
			return cfg, 1
		}
	}
	if err := startup.ApplyEnv(&cfg, os.LookupEnv); err != nil {
		fmt.Fprintln(stderr, "gw:", err)
		return cfg, 1
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		if v, ok := vals[f.Name]; ok && ferr == nil {
			ferr = startup.Set(&cfg, f.Name, *v)
		}
	})
	if ferr != nil {
		fmt.Fprintln(stderr, "gw:", ferr)
		return cfg, 2
	}
	return cfg, 0
}

func serve(args []string, stdout, stderr io.Writer) int {
	cfg, code := loadStartup(args, stderr)
	if code != 0 {
		return code
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	warnings, err := cfg.Validate()
	if err != nil {
		fmt.Fprintln(stderr, "gw:", err)
		return 1
	}
	for _, w := range warnings {
		log.Warn(w)
	}

	opt := snapshot.DefaultOptions()
	opt.Guardrails = kinds.Table() // guardrail chains compile with every snapshot
	// Semantic routers' and guardrails' example vectors, cached across reloads.
	semantic := edge.SemanticPreparer(embed.NewCache())
	// type openapi MCP servers' documents load at config apply, so a bad
	// one fails the load (edge/mcp).
	openapiDocs := &mcp.OpenAPIDocs{Logger: log}
	opt.Prepare = func(s *snapshot.Snapshot) error {
		if err := semantic(s); err != nil {
			return err
		}
		return openapiDocs.Prepare(s)
	}
	opt.UpstreamTimeout = time.Duration(cfg.UpstreamTimeoutMS) * time.Millisecond
	// Per-model routing state (cooldown, latency EWMA, in-flight) lives for
	// the process, keyed by derived ID, so it survives reloads.
	opt.Balancer = balancer.NewRegistry()
	caPEM, err := upstreamCA(cfg.UpstreamTLSCACert)
	if err != nil {
		fmt.Fprintln(stderr, "gw:", err)
		return 1
	}
	opt.Pool = upstream.NewPool(upstream.Options{
		// upstream.tls: trusted by (and, when verify is false, unchecked
		// for) every upstream, next to each provider key's own tls block.
		CACertPEM:           caPEM,
		InsecureSkipVerify:  !cfg.UpstreamTLSVerify,
		MaxConnsPerHost:     int(cfg.UpstreamMaxConns),
		MaxIdleConnDuration: cfg.UpstreamIdleTimeout,
		// With every pooled connection busy, wait for one rather than fail at
		// once; the request's own timeout still bounds the whole call.
		MaxConnWaitTimeout: 10 * time.Second,
		// A buffered answer is held whole (the alias is rewritten in it):
		// cap it so one huge answer cannot balloon memory.
		MaxResponseBodySize: int(cfg.UpstreamMaxResponse),
	})
	// Bodies above 1 MiB (requests and responses) are not kept in the
	// library's buffer pools: one large body must not pin its memory for
	// the life of the process.
	fasthttp.SetBodySizePoolLimit(1<<20, 1<<20)
	holder := &snapshot.Holder{}
	openapiDocs.Holder = holder
	mgr := admin.NewManager(cfg.ResourcesFile, resources.OSEnv, opt, holder, log)
	for _, u := range cfg.Unenforced() {
		mgr.Startup = append(mgr.Startup, snapshot.Unenforced{Collection: "startup", Field: u.Setting, Missing: u.Missing})
	}
	// Background model checks restart with every applied snapshot.
	health := edge.NewHealth(log)
	// Usage events: every request's final record and one zero-token record
	// per failed attempt, queued for the exporters of the active snapshot
	// (and the control plane when configured). Each apply resets the sink
	// set; unchanged sinks keep running and nothing queued is lost.
	pipeline := gwusage.New(gwusage.Options{Logger: log})
	defer pipeline.Close(cfg.ShutdownGrace)
	cpSpec, err := controlPlaneSink(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "gw:", err)
		return 1
	}
	mgr.OnApply = func(s *snapshot.Snapshot) {
		health.Apply(s)
		// JWKS key sets follow the providers of each applied snapshot: an
		// unchanged provider keeps its keys, a removed one stops refreshing.
		authn.Default.Keys.Sync(authn.Sources(s))
		specs := exporters.Specs(s.Resources.ObservabilityExporters)
		if cpSpec != nil {
			specs = append(specs, *cpSpec)
		}
		for name, err := range pipeline.SetSinks(specs) {
			log.Error("usage sink not started", "sink", name, "error", err.Error())
		}
	}
	mgr.KeySets = keySetStates
	defer health.Close()
	defer authn.Default.Keys.Close()
	if res := mgr.Apply("startup"); len(res.Errors) > 0 {
		// Nothing binds when the file is invalid at startup.
		for _, e := range res.Errors {
			fmt.Fprintln(stderr, e.String())
		}
		return 1
	}
	// The admin API: its store is opened and compiled before anything binds.
	var adm *adminRuntime
	if cfg.AdminListen != "" {
		if adm, err = openAdmin(cfg, log); err != nil {
			fmt.Fprintln(stderr, "gw:", err)
			return 1
		}
		defer adm.close()
	}

	rtTLS := realtimeTLS(cfg, caPEM)
	// Bind every listener before serving any, so a bind failure leaves nothing half-up.
	mainLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "gw: cannot listen on", cfg.Listen+":", err)
		return 1
	}
	var statusLn, debugLn net.Listener
	if cfg.StatusListen != "" {
		if statusLn, err = net.Listen("tcp", cfg.StatusListen); err != nil {
			mainLn.Close()
			fmt.Fprintln(stderr, "gw: cannot listen on", cfg.StatusListen+":", err)
			return 1
		}
	}
	if cfg.DebugListen != "" {
		if debugLn, err = net.Listen("tcp", cfg.DebugListen); err != nil {
			mainLn.Close()
			if statusLn != nil {
				statusLn.Close()
			}
			fmt.Fprintln(stderr, "gw: cannot listen on", cfg.DebugListen+":", err)
			return 1
		}
	}

	var adminLn net.Listener
	if adm != nil {
		if adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			for _, l := range []net.Listener{mainLn, statusLn, debugLn} {
				if l != nil {
					l.Close()
				}
			}
			fmt.Fprintln(stderr, "gw: cannot listen on", cfg.AdminListen+":", err)
			return 1
		}
	}

	// The general gateway's data plane serves the admin API's routes.
	var gatewayLn net.Listener
	if adm != nil && cfg.GatewayListen != "" {
		if gatewayLn, err = net.Listen("tcp", cfg.GatewayListen); err != nil {
			for _, l := range []net.Listener{mainLn, statusLn, debugLn, adminLn} {
				if l != nil {
					l.Close()
				}
			}
			fmt.Fprintln(stderr, "gw: cannot listen on", cfg.GatewayListen+":", err)
			return 1
		}
	}
	var gatewayTLSLn net.Listener
	if adm != nil && cfg.GatewayTLSListen != "" {
		if gatewayTLSLn, err = net.Listen("tcp", cfg.GatewayTLSListen); err != nil {
			for _, l := range []net.Listener{mainLn, statusLn, debugLn, adminLn, gatewayLn} {
				if l != nil {
					l.Close()
				}
			}
			fmt.Fprintln(stderr, "gw: cannot listen on", cfg.GatewayTLSListen+":", err)
			return 1
		}
	}

	proxy := &edge.Proxy{Holder: mgr.Holder(), RealIP: edge.RealIP{Trusted: cfg.TrustedProxies, Header: []byte(cfg.RealIPHeader)}, Logger: log, Health: health,
		MaxResponseBytes: cfg.UpstreamMaxResponse}
	proxy.Realtime = edge.RealtimeOptions{TLS: rtTLS, IdleTimeout: cfg.RealtimeIdleTimeout, MaxSession: cfg.RealtimeMaxSession}
	// Rate limits: local counters, shared through Redis when configured
	// (degraded to per-replica counting while Redis is unreachable).
	lcfg := limiter.Config{Logger: log}
	if cfg.RedisAddr != "" {
		lcfg.Redis = &limiter.RedisConfig{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, DB: int(cfg.RedisDB)}
	}
	proxy.Limiter = limiter.New(lcfg)
	defer proxy.Limiter.Close()
	metrics.NewGauge(`gw_rate_limit_store_state`, func() float64 { return float64(proxy.Limiter.State()) })
	proxy.Usage = pipeline
	// tools/call's lean path has a pool of its own, not the providers':
	// upstream.tls (a deployment CA, verify false) applies to providers, and
	// the SDK path that carries the rest of an MCP session does not use it.
	proxy.MCP = &mcp.Handler{Holder: proxy.Holder, ClientIP: proxy.RealIP.ClientIP, Limiter: proxy.Limiter, Usage: pipeline, Logger: log, OpenAPI: openapiDocs}
	defer proxy.MCP.Close()
	// The response cache: the memory backend per replica, the redis
	// backend on the shared store (misses while it is unreachable).
	cacheMem := cache.NewMemory(cfg.CacheMemoryMaxBytes)
	var cacheRedis *cache.Redis
	if cfg.RedisAddr != "" {
		cacheRedis = cache.NewRedis(cache.RedisConfig{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, DB: int(cfg.RedisDB),
			Timing: circuit.Timing{ProbeInterval: cfg.CacheRedisProbeInterval}}, log)
		defer cacheRedis.Close()
		metrics.NewGauge(`gw_cache_store_state`, func() float64 { return float64(cacheRedis.State()) })
	}
	// The semantic memory store has its own bound of the same size (it
	// uses nothing without a match: semantic policy on backend memory).
	cacheSem := cache.NewSemMemory(cfg.CacheMemoryMaxBytes)
	metrics.NewGauge(`gw_cache_memory_bytes`, func() float64 { return float64(cacheMem.Bytes()) })
	metrics.NewGauge(`gw_cache_semantic_memory_bytes`, func() float64 { return float64(cacheSem.Bytes()) })
	proxy.Cache = edge.NewCaches(cacheMem, cacheSem, cacheRedis)
	// Agents' traffic outside the model pipeline: /a2a and passthrough routes.
	proxy.A2A = &a2a.Handler{Usage: pipeline, Limiter: proxy.Limiter, Logger: log}
	proxy.Passthrough = &passthrough.Handler{Usage: pipeline, Logger: log, MaxBodyBytes: cfg.MaxUploadBytes, Limiter: proxy.Limiter}
	if cfg.AccessLog {
		proxy.Log = edge.NewAccessLog(stderr)
		defer proxy.Log.Close()
	}
	lim := edge.Limits{
		MaxBodyBytes: cfg.MaxBodyBytes, MaxUploadBytes: cfg.MaxUploadBytes, HeaderTimeout: cfg.HeaderTimeout, BodyTimeout: cfg.BodyTimeout,
		IdleTimeout: cfg.IdleTimeout, MaxConnsPerIP: int(cfg.MaxConnsPerIP),
	}
	srv := edge.NewServer(mgr, proxy, statusLn == nil, lim, log)
	// Signals are caught before the first request can be served: a SIGTERM
	// that arrives as soon as /readyz answers must still shut down
	// gracefully, not kill the process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	errc := make(chan error, 4)
	ops := srv.Ops
	if statusLn != nil {
		ops = &edge.Ops{Manager: mgr, Health: health, Usage: pipeline}
	}
	// Ops is complete before the first request can read it.
	ops.Limiter = proxy.Limiter
	if cfg.StatusUI {
		ops.Page = edge.NewStatusPage(ops, version)
	}
	go func() { errc <- srv.Serve(rawsock.Listener{Listener: mainLn}) }()
	var statusSrv *fasthttp.Server
	if statusLn != nil {
		statusSrv = edge.OpsServerFor(ops, lim, log)
		go func() { errc <- statusSrv.Serve(statusLn) }()
	}
	var debugSrv *http.Server
	if debugLn != nil {
		debugSrv = edge.DebugServer()
		go func() {
			if err := debugSrv.Serve(debugLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if adminLn != nil {
		go func() { errc <- adm.serve(adminLn) }()
	}
	if gatewayLn != nil || gatewayTLSLn != nil {
		gwSrv := startGateway(cfg, adm, pipeline, log)
		defer gwSrv.close()
		if gatewayLn != nil {
			go func() { errc <- gwSrv.serve(rawsock.Listener{Listener: gatewayLn}) }()
		}
		if gatewayTLSLn != nil {
			go func() { errc <- gwSrv.serveTLS(rawsock.Listener{Listener: gatewayTLSLn}, adm, log) }()
		}
	}
	log.Info("gw serving", "version", version, "listen", mainLn.Addr().String(),
		"status_listen", addrOf(statusLn), "debug_listen", addrOf(debugLn), "admin_listen", addrOf(adminLn), "gateway_listen", addrOf(gatewayLn),
		"gateway_tls_listen", addrOf(gatewayTLSLn), "resources_file", cfg.ResourcesFile)

	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				mgr.Apply("sighup")
				continue
			}
			log.Info("shutting down", "signal", sig.String(), "grace", cfg.ShutdownGrace.String())
			code := 0
			// Realtime sessions live on hijacked connections the server's
			// shutdown does not see: close them (1001) and let their usage
			// records out.
			edge.CloseRealtime(cfg.ShutdownGrace)
			// The status page's event streams never end on their own.
			if ops.Page != nil {
				ops.Page.Close()
			}
			proxy.MCP.EndStreams() // MCP callers' standalone streams, likewise
			if err := srv.Shutdown(cfg.ShutdownGrace); err != nil {
				log.Warn("shutdown", "error", err.Error())
				code = 1
			}
			if statusSrv != nil {
				_ = statusSrv.Shutdown()
			}
			if debugSrv != nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = debugSrv.Shutdown(ctx)
				cancel()
			}
			return code
		case err := <-errc:
			if err != nil {
				log.Error("listener failed", "error", err.Error())
				return 1
			}
		}
	}
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// keySetStates reports the JWKS providers' signing keys for /status/config.
func keySetStates() []admin.KeySetState {
	st := authn.Default.Keys.Status()
	out := make([]admin.KeySetState, len(st))
	for i, s := range st {
		out[i] = admin.KeySetState{Provider: s.Provider, URL: s.URL, State: s.State, Keys: s.Keys,
			LastRefreshAt: s.LastRefreshAt, LastSuccessAt: s.LastSuccessAt, LastError: s.LastError}
	}
	return out
}

// controlPlaneSink is the control plane's usage sink, or nil when
// control_plane.url is not set.
func controlPlaneSink(cfg startup.Config) (*gwusage.SinkSpec, error) {
	if cfg.ControlPlaneURL == "" {
		return nil, nil
	}
	return controlplane.Spec(controlplane.Config{URL: cfg.ControlPlaneURL, ClientCert: cfg.ControlPlaneClientCert,
		ClientKey: cfg.ControlPlaneClientKey, CACert: cfg.ControlPlaneCACert},
		resources.DefaultExporterBatch, resources.DefaultExporterFlushMS*time.Millisecond)
}

// realtimeTLS is the TLS of /v1/realtime's wss upstreams: the deployment's
// upstream.tls (provider keys' own tls blocks do not apply there); caPEM
// is upstream.tls.ca_cert as upstreamCA read it.
func realtimeTLS(cfg startup.Config, caPEM []byte) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !cfg.UpstreamTLSVerify} // #nosec G402 -- test-only setting, documented
	if caPEM != nil {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(caPEM)
		c.RootCAs = pool
	}
	return c
}

// upstreamCA reads upstream.tls.ca_cert: "" is none; a file without a PEM
// certificate is an error, so a wrong path does not silently trust
// nothing.
func upstreamCA(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstream.tls.ca_cert: cannot read the CA file: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("upstream.tls.ca_cert: no PEM certificate in %q", path)
	}
	return pem, nil
}
