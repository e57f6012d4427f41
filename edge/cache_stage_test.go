package edge

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/cache"
)

func TestCacheControl(t *testing.T) {
	f := func(v string, noCache, noStore bool) {
		t.Helper()
		nc, ns := cacheControl([]byte(v))
		if nc != noCache || ns != noStore {
			t.Errorf("%q: no-cache %v no-store %v; want %v %v", v, nc, ns, noCache, noStore)
		}
	}
	f("", false, false)
	f("no-cache", true, false)
	f("No-Cache", true, false)
	f("no-store", false, true)
	f("max-age=0, no-store", false, true)
	f(" no-cache ,\tno-store ", true, true)
	f("no-cachex, xno-store", false, false)
	f("private=\"no-cache\"", false, false)
	f(",,,", false, false)
}

// cacheProxy is proxyFor with a memory cache policy on gpt.
func cacheProxy(tb testing.TB, mockBase string) *Proxy {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": mockBase}
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: other, provider: openai, model_name: gpt-4o, provider_key: oa}
cache_policies:
  - {name: c, ttl_seconds: 60, models: [gpt], max_entry_bytes: 100000}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h, Cache: NewCaches(cache.NewMemory(1<<20), cache.NewSemMemory(1<<20), nil)}
}

func chatCtx(ctx *fasthttp.RequestCtx, body []byte) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(body)
}

// TestCacheStage: through the handler, a miss then a hit with the same
// bytes; an uncovered alias has no header; an error answer is not stored.
func TestCacheStage(t *testing.T) {
	base := startMock(t)
	p := cacheProxy(t, base)
	var ctx fasthttp.RequestCtx
	chatCtx(&ctx, fullBody)
	p.Handle(&ctx)
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Header.Peek("x-gw-cache")) != "miss" {
		t.Fatalf("first: %d %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek("x-gw-cache"))
	}
	first := append([]byte(nil), ctx.Response.Body()...)
	chatCtx(&ctx, fullBody)
	p.Handle(&ctx)
	if string(ctx.Response.Header.Peek("x-gw-cache")) != "hit" || !bytes.Equal(ctx.Response.Body(), first) ||
		string(ctx.Response.Header.ContentType()) != "application/json" {
		t.Fatalf("second: %q %s", ctx.Response.Header.Peek("x-gw-cache"), ctx.Response.Body())
	}
	chatCtx(&ctx, bytes.Replace(fullBody, []byte(`"gpt"`), []byte(`"other"`), 1))
	p.Handle(&ctx)
	if ctx.Response.StatusCode() != 200 || ctx.Response.Header.Peek("x-gw-cache") != nil {
		t.Fatalf("uncovered alias: %d %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek("x-gw-cache"))
	}
	// A refused request (an empty message list) is keyed and missed, and
	// its error answer is never stored: the second try misses again.
	bad := []byte(`{"model":"gpt","messages":[]}`)
	for i := 0; i < 2; i++ {
		chatCtx(&ctx, bad)
		p.Handle(&ctx)
		if ctx.Response.StatusCode() == 200 {
			t.Fatalf("empty messages answered 200")
		}
		if got := string(ctx.Response.Header.Peek("x-gw-cache")); got != "miss" {
			t.Fatalf("error answer %d: x-gw-cache %q; want miss (never stored)", i, got)
		}
	}
}

// BenchmarkFullHandlerCacheHit: the whole handler answering from the
// memory cache (auth, scan, plan, key, lookup, write): no upstream call.
func BenchmarkFullHandlerCacheHit(b *testing.B) {
	p := cacheProxy(b, startMock(b))
	var ctx fasthttp.RequestCtx
	chatCtx(&ctx, fullBody)
	p.Handle(&ctx)
	chatCtx(&ctx, fullBody)
	if p.Handle(&ctx); string(ctx.Response.Header.Peek("x-gw-cache")) != "hit" {
		b.Fatal("no hit")
	}
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		p.Handle(&ctx)
	}
}
