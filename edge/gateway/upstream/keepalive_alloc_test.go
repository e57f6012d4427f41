//go:build !race

package upstream

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// The race detector makes sync.Pool drop items, so this runs without it.

func TestPoolDoAllocs(t *testing.T) {
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.WriteString("ok") }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown()
	p := poolOf(t, `{"keepalive_pool":{"requests":1000000},"nodes":{"`+ln.Addr().String()+`":1}}`)
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI("/x")
	req.Header.SetHost("backend")
	if err := p.Do(0, &req, &resp); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := p.Do(0, &req, &resp); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocs per request on a kept connection; want 0", n)
	}
}
