package gateway

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/admin/store"
	"gw/edge/gateway/upstream"
)

// backend starts a fasthttp server on loopback answering "ok" and
// returns its address.
func backend(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

func holderOf(t testing.TB, routes map[string]string) *admingw.Holder {
	t.Helper()
	st := admingw.NewState("/gw")
	for id, body := range routes {
		st.Apply(store.Event{Type: store.EventPut, KV: store.KV{Key: "/gw/routes/" + id, Value: []byte(body), ModRev: 1}})
	}
	s := admingw.Compile(st, 1)
	if len(s.Errors) > 0 {
		t.Fatalf("compile: %+v", s.Errors)
	}
	h := &admingw.Holder{}
	h.Store(s)
	return h
}

func newGW(t testing.TB, routes map[string]string) *Gateway {
	g := New(holderOf(t, routes), upstream.Options{MaxResponseBytes: 1 << 20}, slog.New(slog.NewJSONHandler(testLogW(t), nil)))
	t.Cleanup(func() {
		g.mu.Lock()
		for _, p := range g.pools {
			p.Close()
		}
		g.mu.Unlock()
	})
	return g
}

func ctxFor(method, uri string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	ctx.Request.Header.SetHost("gw.test")
	ctx.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000})
	return ctx
}

func TestHandlerStatuses(t *testing.T) {
	addr := backend(t)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	g := newGW(t, map[string]string{
		"ok":     `{"uri":"/ok","upstream":{"nodes":{"` + addr + `":1}}}`,
		"dead":   `{"uri":"/dead","upstream":{"timeout":{"connect":0.5,"send":1,"read":1},"nodes":{"` + deadAddr + `":1}}}`,
		"plugin": `{"uri":"/plugin","plugins":{"ai-proxy-multi":{"instances":[]}},"upstream":{"nodes":{"` + addr + `":1}}}`,
		"rw":     `{"uri":"/rw","plugins":{"proxy-rewrite":{"uri":"/x"}},"upstream":{"nodes":{"` + addr + `":1}}}`,
	})
	f := func(uri string, code int, body string, hdr ...string) {
		t.Helper()
		ctx := ctxFor("GET", uri)
		for i := 0; i+1 < len(hdr); i += 2 {
			ctx.Request.Header.Set(hdr[i], hdr[i+1])
		}
		g.Handler(ctx)
		if ctx.Response.StatusCode() != code || !strings.HasPrefix(string(ctx.Response.Body()), body) {
			t.Errorf("%s: got %d %s; want %d %s", uri, ctx.Response.StatusCode(), ctx.Response.Body(), code, body)
		}
	}
	f("/ok", 200, "ok")
	f("/none", 404, `{"error_msg":"404 Route Not Found"}`)
	f("/dead", 502, `{"error_msg":"502 Bad Gateway"}`)
	f("/plugin", 503, `{"error_msg":"503 Service Temporarily Unavailable"}`)
	f("/rw", 200, "ok")
	// A route without enable_websocket proxies the request as plain HTTP
	// (Upgrade is hop-by-hop), as APISIX does.
	f("/ok", 200, "ok", "Upgrade", "websocket")
}

// BenchmarkProxy: one request through the gateway to a loopback backend
// (the upstream round trip dominates; compare with BenchmarkDirect).
func BenchmarkProxy(b *testing.B) {
	addr := backend(b)
	g := newGW(b, map[string]string{"ok": `{"uri":"/ok","upstream":{"nodes":{"` + addr + `":1}}}`})
	ctx := ctxFor("GET", "/ok")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx.Request.Header.Del("X-Forwarded-For")
		g.Handler(ctx)
	}
}

// BenchmarkDirect: the same request straight to the backend.
func BenchmarkDirect(b *testing.B) {
	addr := backend(b)
	c := &fasthttp.HostClient{Addr: addr, ReadTimeout: time.Second}
	req, resp := &fasthttp.Request{}, &fasthttp.Response{}
	req.SetRequestURI("http://" + addr + "/ok")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandler404: the gateway's own cost (match miss + error answer).
func BenchmarkHandler404(b *testing.B) {
	g := newGW(b, map[string]string{"ok": `{"uri":"/ok","upstream":{"nodes":{"127.0.0.1:1":1}}}`})
	ctx := ctxFor("GET", "/none")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		g.Handler(ctx)
	}
}

// TestForwardsRoutedPath: the upstream receives the normalised path the
// router matched, not the raw one.
func TestForwardsRoutedPath(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(ctx.RequestURI()) }}
	go srv.Serve(ln)
	defer srv.Shutdown()
	g := newGW(t, map[string]string{"pub": `{"uri":"/public/*","upstream":{"nodes":{"` + ln.Addr().String() + `":1}}}`})
	ctx := ctxFor("GET", "/public/../admin/x?q=1")
	g.Handler(ctx)
	if ctx.Response.StatusCode() != 404 {
		t.Fatalf("/public/../admin/x routed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	ctx = ctxFor("GET", "/public/a/./b/../c?q=1")
	g.Handler(ctx)
	if got := string(ctx.Response.Body()); got != "/public/a/c?q=1" {
		t.Fatalf("upstream saw %q; want /public/a/c?q=1", got)
	}
}

// TestHTTPSUpstream: scheme https to a TLS backend; with tls.verify true
// its self-signed certificate is refused (502), without it accepted.
func TestHTTPSUpstream(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls "+r.Host)
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "https://")
	g := newGW(t, map[string]string{
		"tls":    `{"uri":"/tls","upstream":{"scheme":"https","pass_host":"rewrite","upstream_host":"svc.internal","nodes":{"` + addr + `":1}}}`,
		"verify": `{"uri":"/verify","upstream":{"scheme":"https","tls":{"verify":true},"nodes":{"` + addr + `":1}}}`,
	})
	ctx := ctxFor("GET", "/tls")
	g.Handler(ctx)
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != "tls svc.internal" {
		t.Fatalf("https upstream: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	ctx = ctxFor("GET", "/verify")
	g.Handler(ctx)
	if ctx.Response.StatusCode() != 502 {
		t.Fatalf("tls.verify against a self-signed certificate: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// testLogW sends the gateway's log to the test log.
func testLogW(t testing.TB) io.Writer { return tlog{t} }

type tlog struct{ t testing.TB }

func (l tlog) Write(b []byte) (int, error) { l.t.Log(strings.TrimSpace(string(b))); return len(b), nil }
