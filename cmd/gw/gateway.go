package main

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/startup"
	"gw/edge/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/upstream"
	gwusage "gw/edge/usage"
)

// gatewayRuntime is the general gateway's data plane: the admin API's
// routes served on --gateway-listen.
type gatewayRuntime struct {
	srv    *fasthttp.Server
	cancel context.CancelFunc
	done   chan struct{}
}

// gatewayPoll is how often the data plane looks for a new snapshot when
// no request made it look first; the admin runner publishes within
// milliseconds of a store write, so a write is served well within 100 ms.
const gatewayPoll = 20 * time.Millisecond

func startGateway(cfg startup.Config, adm *adminRuntime, pipeline *gwusage.Pipeline, log *slog.Logger) *gatewayRuntime {
	opt := upstream.Options{MaxResponseBytes: int(cfg.UpstreamMaxResponse)}
	if res, err := upstream.NewDNSResolver(cfg.GatewayDNSServers); err == nil {
		opt.DNS = res
	} else {
		// discovery_type dns routes then answer 503 with this reason.
		log.Warn("gateway dns discovery unavailable", "error", err.Error())
	}
	g := gateway.New(adm.Holder, opt, log.With("component", "gateway"))
	g.Usage = pipeline // ai-proxy-multi writes the AI path's usage records
	ctx, cancel := context.WithCancel(context.Background())
	r := &gatewayRuntime{cancel: cancel, done: make(chan struct{})}
	go func() { g.Run(ctx, gatewayPoll); close(r.done) }()
	r.srv = &fasthttp.Server{
		Handler:            g.Handler,
		Name:               "gw",
		MaxRequestBodySize: int(cfg.MaxBodyBytes),
		ReadTimeout:        cfg.HeaderTimeout + cfg.BodyTimeout,
		IdleTimeout:        cfg.IdleTimeout,
		MaxConnsPerIP:      int(cfg.MaxConnsPerIP),
		Logger:             fasthttpLogger{log},
	}
	return r
}

func (r *gatewayRuntime) serve(ln net.Listener) error { return r.srv.Serve(ln) }

func (r *gatewayRuntime) close() {
	_ = r.srv.ShutdownWithContext(context.Background())
	r.cancel()
	<-r.done
}

// builtPlugin reports whether the data plane runs a plugin; the admin API
// accepts only those.
func builtPlugin(name string) bool { return plugin.Lookup(name) != nil }

// checkPlugin validates a plugin configuration at write time with the data
// plane's own rules (plugin.CheckConfig).
func checkPlugin(name string, conf []byte, consumer bool) error {
	return plugin.CheckConfig(name, conf, consumer)
}
