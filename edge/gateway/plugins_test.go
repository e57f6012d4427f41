package gateway

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/admin/store"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/upstream"
)

// newGWKeys is newGW over any stored keys ("consumers/jack": body).
func newGWKeys(t testing.TB, kv map[string]string) *Gateway {
	t.Helper()
	st := admingw.NewState("/gw")
	for k, body := range kv {
		st.Apply(store.Event{Type: store.EventPut, KV: store.KV{Key: "/gw/" + k, Value: []byte(body), ModRev: 1}})
	}
	s := admingw.Compile(st, 1)
	if len(s.Errors) > 0 {
		t.Fatalf("compile: %+v", s.Errors)
	}
	h := &admingw.Holder{}
	h.Store(s)
	g := New(h, upstream.Options{MaxResponseBytes: 1 << 20}, slog.New(slog.NewJSONHandler(testLogW(t), nil)))
	t.Cleanup(func() {
		g.mu.Lock()
		for _, p := range g.pools {
			p.Close()
		}
		g.mu.Unlock()
	})
	return g
}

// pluginRoute is the benchmark's route: key-auth, limit-count by consumer
// and proxy-rewrite with a variable URI and header.
func pluginRoute(addr string) map[string]string { return pluginRouteN(addr, "1000000000") }

func pluginRouteN(addr, count string) map[string]string {
	return map[string]string{
		"consumers/jack": `{"username":"jack","plugins":{"key-auth":{"key":"jack-key"}}}`,
		"routes/p": `{"uri":"/p/*","plugins":{"key-auth":{},"limit-count":{"count":` + count + `,"time_window":60,"key":"consumer_name"},` +
			`"proxy-rewrite":{"uri":"/v2$uri","headers":{"set":{"X-Consumer":"$consumer_name"}}}},"upstream":{"nodes":{"` + addr + `":1}}}`,
	}
}

func pluginCtx() *fasthttp.RequestCtx {
	ctx := ctxFor("GET", "/p/a?b=c")
	ctx.Request.Header.Set("apikey", "jack-key")
	return ctx
}

func TestPluginRoute(t *testing.T) {
	g := newGWKeys(t, pluginRoute(backend(t)))
	ctx := pluginCtx()
	g.Handler(ctx)
	if ctx.Response.StatusCode() != 200 || ctx.Response.Header.Peek("X-RateLimit-Limit") == nil {
		t.Fatalf("got %d %s %s", ctx.Response.StatusCode(), ctx.Response.Header.String(), ctx.Response.Body())
	}
	if got := string(ctx.Request.RequestURI()); got != "/v2/p/a?b=c" {
		t.Errorf("forwarded URI %q; want /v2/p/a?b=c", got)
	}
	if got := string(ctx.Request.Header.Peek("X-Consumer")); got != "jack" {
		t.Errorf("X-Consumer %q; want jack", got)
	}
	ctx = ctxFor("GET", "/p/a")
	g.Handler(ctx)
	if ctx.Response.StatusCode() != 401 {
		t.Errorf("no key: %d; want 401", ctx.Response.StatusCode())
	}
}

// BenchmarkPluginRoute: a proxied request through key-auth, limit-count and
// proxy-rewrite (compare with BenchmarkProxy for the plugins' cost).
func BenchmarkPluginRoute(b *testing.B) {
	g := newGWKeys(b, pluginRoute(backend(b)))
	ctx := pluginCtx()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx.Request.Header.Del("X-Forwarded-For")
		ctx.Request.SetRequestURI("/p/a?b=c")
		g.Handler(ctx)
	}
}

// BenchmarkPluginChain: the three plugins without the network: limit-count
// (count 1) refuses every request after the first, once key-auth and
// proxy-rewrite have run.
func BenchmarkPluginChain(b *testing.B) {
	g := newGWKeys(b, pluginRouteN("127.0.0.1:1", "1"))
	ctx := pluginCtx()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx.Request.SetRequestURI("/p/a?b=c")
		g.Handler(ctx)
	}
	if b.N > 1 && ctx.Response.StatusCode() != 503 {
		b.Fatalf("status %d; want the limit's 503", ctx.Response.StatusCode())
	}
}

// TestPluginChecks: the write-time checks refuse what the plugins do not
// run, naming the field, and pass what they do.
func TestPluginChecks(t *testing.T) {
	for _, tc := range []struct{ name, conf, err string }{
		{"proxy-rewrite", `{"uri":"/x/$uri","headers":{"set":{"X":"${post_arg.messages[0].role}"}}}`, ""},
		{"proxy-rewrite", `{"scheme":"https"}`, "`scheme` is not built in this build"},
		{"proxy-rewrite", `{"scheme":"https","_meta":{"disable":true}}`, ""},
		{"proxy-rewrite", `{"uri":"$nope_var"}`, "unknown variable $nope_var"},
		{"limit-count", `{"count":1,"time_window":60}`, ""},
		{"limit-count", `{"count":1,"time_window":60,"allow_degradation":true}`, ""},
		{"limit-count", `{"count":1,"time_window":60,"policy":"redis-cluster"}`, "needs `redis_cluster_nodes` and `redis_cluster_name`"},
		{"limit-count", `{"count":1,"time_window":7,"policy":"redis","redis_host":"h"}`, ""},
		{"limit-count", `{"count":1,"time_window":60,"policy":"redis-sentinel"}`, `policy "redis-sentinel" is not built in this build`},
		{"limit-count", `{"count":1,"time_window":60,"key":"nope_var"}`, "`key`: unknown variable"},
		{"jwt-auth", `{"store_in_ctx":true}`, ""},
		{"jwt-auth", `{"header":"x-jwt"}`, ""},
		{"http-logger", `{"uri":"http://h/","include_req_body_expr":[["arg_a","==","1"]]}`, "not built in this build"},
		{"http-logger", `{"uri":"http://h/","log_format":{"u":"$nope_var"}}`, "unknown variable"},
		{"ai-proxy-multi", `{"instances":[{"name":"a","provider":"openai","weight":1}],"balancer":{"algorithm":"chash"}}`, "balancer.algorithm: chash is not built in this build"},
		{"no-such", `{}`, "plugin no-such is not built in this build"},
	} {
		err := plugin.CheckConfig(tc.name, json.RawMessage(tc.conf), false)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %s: got %v; want %q", tc.name, tc.conf, err, tc.err)
		}
	}
}
