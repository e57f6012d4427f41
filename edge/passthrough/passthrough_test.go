package passthrough

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
)

const testFile = `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1", strip_headers: [cookie, x-secret]}
  - {display_name: claude, provider: anthropic, api_key: "${K}", api_base: "${BASE}"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_routes: ["*"]}
passthrough_routes:
  - {name: oa, path: /openai, provider_key: oa}
  - {name: oa-deep, path: /openai/deep, provider_key: oa, strip_prefix: false}
  - {name: claude, path: /anthropic, provider_key: claude, forward_client_headers: ["anthropic-*", "x-keep"]}
  - {name: plain, path: /plain, upstream: "${BASE}"}
`

func compile(tb testing.TB, base string) *snapshot.Snapshot {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": base}
	r := resources.Load([]byte(testFile), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := r.Err(); err != nil {
		tb.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestMatch(t *testing.T) {
	s := compile(t, "http://127.0.0.1:9")
	f := func(path, want string) {
		t.Helper()
		got := ""
		if r := Match(s, []byte(path)); r != nil {
			got = r.Name
		}
		if got != want {
			t.Fatalf("Match(%q) = %q; want %q", path, got, want)
		}
	}
	f("/openai", "oa")
	f("/openai/files", "oa")
	f("/openai/deep/x", "oa-deep") // the longest prefix wins
	f("/openaix", "")
	f("/plain/a/b", "plain")
	f("/v1/chat/completions", "")
}

func TestForwardHeader(t *testing.T) {
	s := compile(t, "http://127.0.0.1:9")
	route := func(n string) *resources.PassthroughRoute {
		for _, r := range s.Resources.PassthroughRoutes {
			if r.Name == n {
				return r
			}
		}
		t.Fatal(n)
		return nil
	}
	f := func(r, h string, want bool) {
		t.Helper()
		if got := forwardHeader(route(r), []byte(h)); got != want {
			t.Fatalf("%s: forwardHeader(%q) = %v; want %v", r, h, got, want)
		}
	}
	// Inject mode: credentials and the key's strip_headers go; the rest stays.
	f("oa", "authorization", false)
	f("oa", "x-api-key", false)
	f("oa", "cookie", false)
	f("oa", "x-secret", false)
	f("oa", "openai-beta", true)
	f("oa", "connection", false)
	f("oa", "x-gw-debug", false)
	// forward_client_headers: exactly the listed names.
	f("claude", "anthropic-beta", true)
	f("claude", "x-keep", true)
	f("claude", "openai-beta", false)
	f("claude", "cookie", false)
	// Forward mode: all but gw's own credential headers.
	f("plain", "authorization", false)
	f("plain", "x-api-key", false)
	f("plain", "api-key", true)
	f("plain", "cookie", true)
}

func TestExtractText(t *testing.T) {
	f := func(body, ct, want string, wantOK bool) {
		t.Helper()
		got, ok := ExtractText(nil, []byte(body), []byte(ct))
		if string(got) != want || ok != wantOK {
			t.Fatalf("ExtractText(%q, %q) = %q, %v; want %q, %v", body, ct, got, ok, want, wantOK)
		}
	}
	f(`{"a":"x","b":[1,"y\u00e9"],"c":{"d":"z"}}`, "application/json", "x\nyé\nz", true)
	f(`{"a":"x"}`, "", "x", true)
	f(`{"a":`, "application/json", "", false)
	f("hello", "text/plain; charset=utf-8", "hello", true)
	f("bin\x00", "application/octet-stream", "", false)
	f("", "application/json", "", true)
}

// upstreamServer answers every request with a fixed 1 KiB body.
func upstreamServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 1024)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/octet-stream")
		ctx.SetBody(body)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func serveOnce(tb testing.TB, h *Handler, s *snapshot.Snapshot, ctx *fasthttp.RequestCtx) {
	r := Match(s, ctx.Path())
	h.Serve(ctx, s, r)
	if err := ctx.Response.BodyWriteTo(io.Discard); err != nil {
		tb.Fatal(err)
	}
	if ctx.Response.StatusCode() != 200 {
		tb.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func relayCtx(path string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.Header.Set("Content-Type", "application/json")
	ctx.Request.SetBody([]byte(`{"purpose":"batch"}`))
	return ctx
}

func TestServeRelays(t *testing.T) {
	s := compile(t, upstreamServer(t))
	serveOnce(t, &Handler{}, s, relayCtx("/openai/files?x=1"))
}

// BenchmarkPassthroughRelay is one inject-mode request through the route
// (auth, grant, header filtering, credential, upstream call on loopback,
// relay of a 1 KiB answer); BenchmarkPassthroughDirect is the same call
// made straight to the upstream with the same client. Their difference is
// gw's relay overhead.
func BenchmarkPassthroughRelay(b *testing.B) {
	s := compile(b, upstreamServer(b))
	h := &Handler{}
	ctx := relayCtx("/openai/files?x=1")
	serveOnce(b, h, s, ctx)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		serveOnce(b, h, s, ctx)
	}
}

func BenchmarkPassthroughDirect(b *testing.B) {
	base := upstreamServer(b)
	s := compile(b, base)
	h := &Handler{}
	cl, err := h.client(s, Match(s, []byte("/openai")))
	if err != nil {
		b.Fatal(err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(base + "/v1/files?x=1")
	req.Header.SetMethod("POST")
	req.Header.Set("Authorization", "Bearer sk-upstream")
	req.SetBody([]byte(`{"purpose":"batch"}`))
	b.ReportAllocs()
	for b.Loop() {
		if err := cl.DoStream(req, resp, 0); err != nil {
			b.Fatal(err)
		}
		if err := resp.BodyWriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		upstream.CloseStream(resp)
		resp.Reset()
	}
}
