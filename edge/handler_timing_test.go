package edge

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/perf/mock"
)

// startMock serves the mock upstream on a loopback port for benchmarks.
func startMock(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	m := mock.New(mock.Config{RecordLimit: -1})
	go m.Serve(ln)
	tb.Cleanup(func() { m.Shutdown() })
	return "http://" + ln.Addr().String()
}

func proxyFor(tb testing.TB, mockBase string) *Proxy {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": mockBase}
	src := `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${K}
    api_base: ${BASE}/v1
api_keys:
  - display_name: caller
    key_env: CALLER
    allowed_models: ["*"]
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
`
	s := compileFile(tb, src, env)
	h := &snapshot.Holder{}
	h.Store(s)
	return &Proxy{Holder: h}
}

var fullBody = []byte(`{"model":"gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello to the benchmark."}],"temperature":0.2}`)

// BenchmarkFullHandlerBuffered runs the whole proxy handler for a buffered
// chat call (auth, scan, dispatch, upstream round trip over loopback to the
// mock, model rewrite, metrics) and reports allocations per request. The
// access log is off, as in a perf run with logging disabled.
func BenchmarkFullHandlerBuffered(b *testing.B) {
	p := proxyFor(b, startMock(b))
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(fullBody)
	if !p.Handle(&ctx) || ctx.Response.StatusCode() != 200 {
		b.Fatalf("warm-up: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		p.Handle(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}
