//go:build !race

package edge

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestCacheHitAllocs: a request answered from the memory cache allocates
// nothing in gw (the stage's key, lookup and answer reuse pooled state).
func TestCacheHitAllocs(t *testing.T) {
	p := cacheProxy(t, startMock(t))
	var ctx fasthttp.RequestCtx
	chatCtx(&ctx, fullBody)
	p.Handle(&ctx)
	chatCtx(&ctx, fullBody)
	p.Handle(&ctx)
	if string(ctx.Response.Header.Peek("x-gw-cache")) != "hit" {
		t.Fatal("no hit")
	}
	n := testing.AllocsPerRun(200, func() {
		ctx.Response.Reset()
		p.Handle(&ctx)
	})
	if n != 0 {
		t.Fatalf("a cache hit allocates %.1f per request; want 0", n)
	}
}
