// Package gateway is the general gateway's data plane: it serves the
// routes the admin API stores, matching each request with the snapshot's
// router and proxying it to the route's upstream pool (edge/gateway/router,
// edge/gateway/upstream). The admin runner publishes snapshots in a
// Holder; Run follows it and rebuilds the router and pools on each change,
// and the handler reads the current build with one atomic load.
package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	_ "gw/edge/gateway/plugins/builtin" // the plugins the data plane runs
	"gw/edge/gateway/router"
	"gw/edge/gateway/upstream"
	"gw/edge/gateway/vars"
	"gw/edge/usage"
)

// Gateway serves the admin-managed routes.
type Gateway struct {
	holder *admingw.Holder
	opt    upstream.Options
	log    *slog.Logger

	mu    sync.Mutex // serialises rebuilds; guards pools
	pools map[string]*upstream.Pool
	cur   atomic.Pointer[build]

	reqs sync.Pool

	// shared keeps plugin state that outlives snapshots (counters,
	// log batchers).
	shared *plugin.Shared

	// Usage receives the usage records of the AI requests plugins answer
	// (ai-proxy-multi); set before Run, nil writes none.
	Usage *usage.Pipeline
}

// build is the data plane of one snapshot.
type build struct {
	snap   *admingw.Snapshot
	router *router.Router
	routes []routeRT // by position in snap.Routes
	// global are the global rules' plugin chains, in rule ID order.
	global []*plugin.Chain
	// globalBlocked is why no request can be served (a global rule whose
	// plugins do not compile).
	globalBlocked string
	// consumers are the consumer-level chains (consumers with plugins
	// beyond their credentials).
	consumers map[*admingw.Consumer]*consumerRT
}

type consumerRT struct {
	chain   *plugin.Chain
	blocked string
}

type routeRT struct {
	pool *upstream.Pool
	// blocked is why the route cannot be served as configured (a plugin or
	// feature the data plane does not run): it answers 503 rather than
	// skip a protection.
	blocked string
	vc      vars.Context
	chain   *plugin.Chain
	// websocket: the route (or its service) proxies WebSocket upgrades.
	websocket bool
	// merged caches the route's chain merged with each consumer's
	// (*admingw.Consumer -> *plugin.Chain), built on first use.
	merged sync.Map
}

// reqState is the per-request scratch space, pooled.
type reqState struct {
	q    router.Request
	key  []byte
	host []byte
	xff  []byte
	// plugins is set when a plugin chain ran on the request (it may have
	// added headers since the request was parsed).
	plugins bool
	// tried is here rather than on the stack: the balancers take it
	// through an interface, which would move it to the heap.
	tried upstream.Tried
	pc    plugin.Ctx
}

// fail answers with a gateway-generated error.
func (rs *reqState) fail(code int, body []byte) {
	rs.pc.Generated = true
	fail(rs.pc.R, code, body)
}

// New returns a gateway reading snapshots from h.
func New(h *admingw.Holder, opt upstream.Options, log *slog.Logger) *Gateway {
	if opt.Log == nil {
		opt.Log = func(msg string, args ...any) { log.Warn(msg, args...) }
	}
	g := &Gateway{holder: h, opt: opt, log: log, pools: map[string]*upstream.Pool{}, shared: plugin.NewShared()}
	g.reqs.New = func() any {
		return &reqState{q: router.Request{Buf: make([]byte, 0, 256)}, key: make([]byte, 0, 128), host: make([]byte, 0, 128), xff: make([]byte, 0, 128),
			pc: plugin.Ctx{Buf: make([]byte, 0, 256), Buf2: make([]byte, 0, 256), RateInfo: make([]byte, 0, 128)}}
	}
	return g
}

// Run rebuilds the data plane whenever the holder's snapshot changes
// (polled every interval), until ctx ends; it then stops every pool's
// health checks. Requests also rebuild on their own when they see a newer
// snapshot first, so a write is served at once either way.
func (g *Gateway) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		g.current()
		select {
		case <-ctx.Done():
			g.mu.Lock()
			for fp, p := range g.pools {
				p.Close()
				delete(g.pools, fp)
			}
			g.mu.Unlock()
			g.shared.Each(func(_ string, v any) {
				if c, ok := v.(interface{ Close() }); ok {
					c.Close()
				}
			})
			return
		case <-t.C:
		}
	}
}

// current returns the build of the holder's snapshot, building it first
// when the snapshot changed.
func (g *Gateway) current() *build {
	snap := g.holder.Load()
	b := g.cur.Load()
	if b != nil && b.snap == snap {
		return b
	}
	if snap == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if b = g.cur.Load(); b != nil && b.snap == snap {
		return b
	}
	b = g.rebuild(snap)
	g.cur.Store(b)
	return b
}

// rebuild compiles snap; g.mu is held.
func (g *Gateway) rebuild(snap *admingw.Snapshot) *build {
	start := time.Now()
	r, errs := router.New(snap)
	for _, e := range errs {
		g.log.Warn("gateway route left out", "route", e.RouteID, "error", e.Err.Error())
	}
	b := &build{snap: snap, router: r, routes: make([]routeRT, len(snap.Routes)), consumers: map[*admingw.Consumer]*consumerRT{}}
	env := &plugin.Env{Snap: snap, Log: g.log, Shared: g.shared, Usage: g.Usage}
	for _, gr := range snap.GlobalRules {
		if gr.Err != "" {
			b.globalBlocked = "global rule " + gr.ID + ": " + gr.Err
			g.log.Warn("gateway global rule not run; every request answers 503", "global_rule", gr.ID, "error", gr.Err)
			break
		}
		c, err := plugin.Compile(gr.Plugins, env, "global_rule/"+gr.ID, false)
		if err != nil {
			b.globalBlocked = "global rule " + gr.ID + ": " + err.Error()
			g.log.Warn("gateway global rule not run; every request answers 503", "global_rule", gr.ID, "error", err.Error())
			break
		}
		if !c.Empty() {
			b.global = append(b.global, c)
		}
	}
	for _, con := range snap.Consumers {
		c, err := plugin.Compile(con.Plugins, env, "consumer/"+con.Username, true)
		if err != nil {
			b.consumers[con] = &consumerRT{blocked: err.Error()}
			g.log.Warn("gateway consumer not served", "consumer", con.Username, "error", err.Error())
			continue
		}
		if !c.Empty() {
			b.consumers[con] = &consumerRT{chain: c}
		}
	}
	global := b.globalBlocked
	used := make(map[string]*upstream.Pool, len(g.pools))
	blocked := 0
	for i, rt := range snap.Routes {
		x := &b.routes[i]
		x.vc = vars.Context{RouteID: rt.ID, RouteName: rt.Name}
		x.websocket = rt.EnableWebsocket
		if rt.Service != nil {
			x.vc.ServiceID = rt.Service.ID
		}
		x.blocked = global
		if x.blocked == "" {
			x.blocked = routeBlock(rt)
		}
		if x.blocked == "" {
			c, err := plugin.Compile(rt.Plugins, env, "route/"+rt.ID, false)
			switch {
			case err != nil:
				x.blocked = err.Error()
			case rt.Upstream == nil && !c.Answers:
				x.blocked = "no upstream"
			case !c.Empty():
				x.chain = c
			}
		}
		if x.blocked == "" && rt.Upstream != nil {
			owner := rt.Upstream.ID
			if owner == "" {
				owner = "route/" + rt.ID
			}
			fp := upstream.Fingerprint(rt.Upstream, owner, rt.Timeout)
			p := used[fp]
			if p == nil {
				p = g.pools[fp]
			}
			if p == nil {
				var err error
				if p, err = upstream.New(rt.Upstream, rt.Timeout, snap, g.opt); err != nil {
					x.blocked = err.Error()
				}
			}
			if p != nil {
				used[fp] = p
				x.pool = p
			}
		}
		if x.blocked != "" {
			blocked++
			g.log.Warn("gateway route not served", "route", rt.ID, "reason", x.blocked)
		}
	}
	for fp, p := range g.pools {
		if used[fp] == nil {
			p.Close()
		}
	}
	g.pools = used
	g.log.Info("gateway routes loaded", "revision", snap.Rev, "routes", r.Len(), "not_served", blocked,
		"pools", len(used), "took_ms", time.Since(start).Milliseconds())
	return b
}

func routeBlock(rt *admingw.Route) string {
	if rt.FilterFunc != "" {
		return "filter_func is not run by the data plane"
	}
	if rt.Script != "" {
		return "script is not run by the data plane"
	}
	return ""
}

var (
	body404 = []byte(`{"error_msg":"404 Route Not Found"}`)
	body502 = []byte(`{"error_msg":"502 Bad Gateway"}`)
	body503 = []byte(`{"error_msg":"503 Service Temporarily Unavailable"}`)
	body504 = []byte(`{"error_msg":"504 Gateway Timeout"}`)

	hopHeaders = []string{"Proxy-Connection", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Authorization"}
	hopNames   = func() [][]byte {
		b := make([][]byte, len(hopHeaders))
		for i, h := range hopHeaders {
			b[i] = []byte(h)
		}
		return b
	}()

	// The X-Forwarded-* names in fasthttp's normalised form, set with
	// SetCanonical: no per-request copy and normalisation of the name.
	hdrXFF, hdrXFProto, hdrXFHost = []byte("X-Forwarded-For"), []byte("X-Forwarded-Proto"), []byte("X-Forwarded-Host")
	protoHTTP, protoHTTPS         = []byte("http"), []byte("https")
)

// RawNoHop reports whether the headers as received (fasthttp's RawHeaders)
// certainly carry none of hopHeaders, so that the six deletions, each a
// name normalisation and a scan of every header, can be skipped: one pass
// over the raw bytes instead. A false answer (a possible match, or no raw
// headers: a request not parsed from the wire) deletes as before; plugins
// may add headers after parsing, so the caller deletes whenever a chain
// ran.
func RawNoHop(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	for i := 0; i < len(raw); {
		if hopStart(raw[i:]) {
			return false
		}
		j := bytes.IndexByte(raw[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return true
}

// hopStart reports whether line begins with a hop-by-hop header name
// (any case) followed by ':' or whitespace.
func hopStart(line []byte) bool {
	switch line[0] | 0x20 {
	case 'p', 'k', 't', 'u':
	default:
		return false
	}
	for _, h := range hopNames {
		if len(line) > len(h) && (line[len(h)] == ':' || line[len(h)] == ' ' || line[len(h)] == '\t') && bytes.EqualFold(line[:len(h)], h) {
			return true
		}
	}
	return false
}

func fail(ctx *fasthttp.RequestCtx, code int, body []byte) {
	ctx.Response.Reset()
	ctx.SetStatusCode(code)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

var noRoute vars.Context

// Handler serves one request: global rules' plugins, then the route's
// (rewrite, then the consumer's after auth, then access), the upstream,
// and the response phases of every chain that ran.
func (g *Gateway) Handler(ctx *fasthttp.RequestCtx) {
	b := g.current()
	if b == nil {
		fail(ctx, 404, body404)
		return
	}
	rs := g.reqs.Get().(*reqState)
	defer g.reqs.Put(rs)
	rs.q.Reset(ctx)
	e := b.router.Match(&rs.q)
	var rt *routeRT
	vc := &noRoute
	if e != nil {
		rt = &b.routes[e.Index()]
		vc = &rt.vc
	}
	pc := &rs.pc
	pc.Reset(ctx, vc)
	if b.globalBlocked != "" {
		rs.fail(503, body503)
		return
	}
	// Fast path - nothing but the proxy to run.
	if len(b.global) == 0 && (rt == nil || rt.chain == nil) {
		rs.plugins = false
		g.serve(ctx, rt, rs)
		return
	}
	rs.plugins = true
	chain := g.runRequest(b, rt, rs)
	for _, c := range b.global {
		c.RunHeaderFilter(pc)
	}
	chain.RunHeaderFilter(pc)
	for _, c := range b.global {
		c.RunBodyFilter(pc)
	}
	chain.RunBodyFilter(pc)
	for _, c := range b.global {
		c.RunLog(pc)
	}
	chain.RunLog(pc)
	pc.R = nil
}

// runRequest runs the request phases and the upstream; it returns the
// route's chain whose response phases are to run (merged with the
// consumer's once one authenticated).
func (g *Gateway) runRequest(b *build, rt *routeRT, rs *reqState) *plugin.Chain {
	pc := &rs.pc
	for _, c := range b.global {
		if !c.RunRewrite(pc) || !c.RunAccess(pc) {
			return nil
		}
	}
	if rt == nil || rt.blocked != "" {
		g.serve(pc.R, rt, rs)
		return nil
	}
	chain := rt.chain
	if !chain.RunRewrite(pc) {
		return chain
	}
	if pc.Consumer != nil {
		if cr := b.consumers[pc.Consumer]; cr != nil {
			if cr.blocked != "" {
				rs.fail(503, body503)
				return chain
			}
			chain = rt.mergedWith(pc.Consumer, cr.chain)
			// Consumer plugins missed the route's rewrite phase (APISIX's
			// rewrite_in_consumer).
			if !cr.chain.RunRewrite(pc) {
				return chain
			}
		}
	}
	if !chain.RunAccess(pc) {
		return chain
	}
	g.serve(pc.R, rt, rs)
	return chain
}

func (rt *routeRT) mergedWith(con *admingw.Consumer, cc *plugin.Chain) *plugin.Chain {
	if v, ok := rt.merged.Load(con); ok {
		return v.(*plugin.Chain)
	}
	if rt.chain == nil {
		return cc
	}
	m := plugin.Merge(rt.chain, cc)
	v, _ := rt.merged.LoadOrStore(con, m)
	return v.(*plugin.Chain)
}

// serve answers a matched, unblocked route from its upstream, or with the
// gateway's error for a miss or a route that cannot be served.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx, rt *routeRT, rs *reqState) {
	if rt == nil {
		rs.fail(404, body404)
		return
	}
	if rt.blocked != "" || rt.pool == nil {
		// No pool: an upstream-less route whose answering plugin did not
		// run on this request (its _meta.filter did not match).
		rs.fail(503, body503)
		return
	}
	if rt.websocket && wsUpgrade(&ctx.Request.Header) {
		g.serveWS(ctx, rt, rt.pool.Current(), rs)
		return
	}
	g.proxy(ctx, rt, rs)
}

func (g *Gateway) proxy(ctx *fasthttp.RequestCtx, rt *routeRT, rs *reqState) {
	p := rt.pool.Current()
	req := &ctx.Request
	if rs.plugins || !RawNoHop(req.Header.RawHeaders()) {
		for _, h := range hopHeaders {
			req.Header.Del(h)
		}
	}
	// X-Forwarded-*: the client address appended to any list it sent.
	rs.xff = append(rs.xff[:0], req.Header.Peek("X-Forwarded-For")...)
	if len(rs.xff) > 0 {
		rs.xff = append(rs.xff, ", "...)
	}
	if ip := ctx.RemoteIP(); ip != nil {
		rs.xff = vars.AppendIP(rs.xff, ip)
	}
	req.Header.SetCanonical(hdrXFF, rs.xff)
	if ctx.IsTLS() {
		req.Header.SetCanonical(hdrXFProto, protoHTTPS)
	} else {
		req.Header.SetCanonical(hdrXFProto, protoHTTP)
	}
	rs.host = append(rs.host[:0], req.Header.Host()...)
	req.Header.SetCanonical(hdrXFHost, rs.host)
	req.UseHostHeader = true
	key := p.HashKey(rs.key[:0], ctx, &rs.pc.Vars) // the request's variables: the consumer is known after auth
	if cap(key) > cap(rs.key) {
		rs.key = key[:0]
	}

	tried := &rs.tried
	*tried = upstream.Tried{}
	// The clock is read only when a retry_timeout can end the retries.
	var start time.Time
	if p.RetryTimeout() > 0 {
		start = time.Now()
	}
	var lastErr error
	attempts := p.Attempts()
	for a := 0; a < attempts; a++ {
		i, err := p.Pick(key, tried)
		if err == upstream.ErrNoHealthy && a == 0 {
			rs.fail(503, body503)
			return
		}
		if err != nil {
			break
		}
		tried.Add(i)
		if hh := rs.pc.HostOverride(); hh != nil {
			req.Header.SetHostBytes(hh)
		} else if hh := p.HostHeader(p.Nodes[i]); hh != nil {
			req.Header.SetHostBytes(hh)
		} else {
			req.Header.SetHostBytes(rs.host)
		}
		ctx.Response.Reset()
		if lastErr = p.Do(i, req, &ctx.Response); lastErr == nil {
			rs.pc.Upstream = p.Nodes[i].Addr
			return
		}
		g.log.Warn("upstream request failed", "route", rt.vc.RouteID, "node", p.Nodes[i].Addr, "attempt", a+1, "error", lastErr.Error())
		if rt := p.RetryTimeout(); rt > 0 && time.Since(start) >= rt {
			break
		}
	}
	if lastErr == nil {
		// Every usable node was tried without an attempt left (cannot
		// happen with attempts <= nodes) or they went down meanwhile.
		rs.fail(503, body503)
		return
	}
	if upstream.IsTimeout(lastErr) {
		rs.fail(504, body504)
		return
	}
	rs.fail(502, body502)
}
