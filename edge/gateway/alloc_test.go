//go:build !race

package gateway

import "testing"

// The race detector makes sync.Pool drop items, so these run without it.

// TestProxyAllocs: a proxied request with no plugins over a warm
// keep-alive connection (built in place and parsed from the wire), and a
// 404 allocate nothing in the gateway.
func TestProxyAllocs(t *testing.T) {
	addr := backend(t)
	g := newGW(t, map[string]string{
		"ok": `{"uri":"/ok/*","upstream":{"nodes":{"` + addr + `":1}}}`,
	})
	ctx := ctxFor("GET", "/ok/a?b=c")
	run := func() {
		ctx.Request.Header.Del("X-Forwarded-For")
		g.Handler(ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("proxied request: %v allocs; want 0", n)
	}
	// The same request parsed from the wire: the raw-header check skips
	// the hop-by-hop deletions.
	wire := wireCtx(t, "GET /ok/a?b=c HTTP/1.1\r\nHost: gw.test\r\nUser-Agent: t\r\n\r\n")
	if n := testing.AllocsPerRun(200, func() {
		wire.Request.Header.Del("X-Forwarded-For")
		g.Handler(wire)
		if wire.Response.StatusCode() != 200 {
			t.Fatalf("status %d %s", wire.Response.StatusCode(), wire.Response.Body())
		}
	}); n != 0 {
		t.Errorf("proxied request parsed from the wire: %v allocs; want 0", n)
	}
	nf := ctxFor("GET", "/none")
	if n := testing.AllocsPerRun(200, func() { g.Handler(nf) }); n != 0 {
		t.Errorf("404: %v allocs; want 0", n)
	}
}

// TestPluginRouteAllocs: key-auth, limit-count and proxy-rewrite on a
// proxied request allocate nothing once warm.
func TestPluginRouteAllocs(t *testing.T) {
	g := newGWKeys(t, pluginRoute(backend(t)))
	ctx := pluginCtx()
	run := func() {
		ctx.Request.Header.Del("X-Forwarded-For")
		ctx.Request.SetRequestURI("/p/a?b=c")
		g.Handler(ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	run()
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("plugin route: %v allocs; want 0", n)
	}
}
