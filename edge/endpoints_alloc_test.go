//go:build !race

package edge

import "testing"

// TestEmbeddingsHandlerAllocs guards the buffered embeddings path: the
// whole handler (auth, read, plan, dispatch, upstream round trip to a
// fixed loopback upstream, model rewrite, finish) allocates nothing per
// request, like chat's.
func TestEmbeddingsHandlerAllocs(t *testing.T) {
	p := endpointsProxy(t, fixedUpstream(t))
	for _, tc := range []struct {
		path string
		body []byte
	}{{pathChat, chatBody}, {pathEmbeddings, embBody}} {
		ctx := handlerCtx(t, p, tc.path, tc.body)
		for range 10 {
			ctx.Response.Reset()
			p.Handle(ctx)
		}
		n := testing.AllocsPerRun(200, func() {
			ctx.Response.Reset()
			p.Handle(ctx)
		})
		if n != 0 {
			t.Errorf("%s: %.1f allocations per buffered request; want 0", tc.path, n)
		}
	}
}
